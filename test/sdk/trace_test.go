package sdk

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/latch-run/latch"
	"github.com/latch-run/latch/remote"
)

// TestTraceAcrossSDKs follows one trace through three processes: a Python
// client (sdk/python/examples/trace_example.py) submits with a traceparent,
// `latch serve` keeps it on the execution, a Go remote worker with an
// OpenTelemetry tracer provider runs the handler in a span of that trace,
// and the handler's outgoing HTTP call, its context injected into the
// request's headers, reaches a partner server with the same trace id, as a
// child of the worker's span.
func TestTraceAcrossSDKs(t *testing.T) {
	py := tool(t, "python3")
	srv := startScenarioServer(t)
	admin := remote.New(srv.url, goAdminKey)
	_, key, c := remoteTenant(t, admin, srv, "trace")
	ctx := t.Context()

	// The partner the handler calls: it records the traceparent it got.
	var mu sync.Mutex
	var got []string
	partner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Traceparent"))
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	defer partner.Close()

	// The Go worker, with an OpenTelemetry SDK tracer provider recording its spans.
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tp.Shutdown(context.Background())
	w := latch.NewRemoteWorker(c, latch.WorkerOptions{Slots: 1, TracerProvider: tp,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	handlerSpan := make(chan trace.SpanContext, 1)
	w.Handle("call-partner", func(ctx context.Context, job *latch.Job) (any, error) {
		// ctx carries the run's span, a child of the submit's trace: an
		// otelhttp client joins it by itself; by hand, inject it.
		select {
		case handlerSpan <- trace.SpanContextFromContext(ctx):
		default:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, partner.URL+"/orders", nil)
		if err != nil {
			return nil, err
		}
		propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		res.Body.Close()
		return map[string]int{"partner": res.StatusCode}, nil
	})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := w.Stop(sctx); err != nil {
			t.Error(err)
		}
	}()

	// The Python client submits in the caller's trace and waits for the result.
	traceID, parentID := randomHex(t, 16), randomHex(t, 8)
	traceparent := "00-" + traceID + "-" + parentID + "-01"
	cmd := exec.Command(py, filepath.Join("examples", "trace_example.py"))
	cmd.Dir = filepath.Join("..", "..", "sdk", "python")
	cmd.Env = append(os.Environ(), "LATCH_URL="+srv.url, "LATCH_KEY="+key, "TRACEPARENT="+traceparent,
		"PYTHONPATH=src", "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("trace_example.py: %v\n%s", err, out)
	}
	if want := "True\nsucceeded {'partner': 202}\n"; string(out) != want {
		t.Fatalf("trace_example.py printed %q, want %q", out, want)
	}

	// The server's execution keeps the Python caller's trace.
	page, err := c.ListPage(ctx, remote.ListOptions{DedupKey: "call-partner-42"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 {
		t.Fatalf("%d executions of dedup key call-partner-42, want 1", len(page.Items))
	}
	e := page.Items[0]
	if len(e.TraceParent) != 55 || e.TraceParent[3:35] != traceID {
		t.Fatalf("the execution's trace_parent is %q, want trace id %s (submitted with %s)", e.TraceParent, traceID, traceparent)
	}
	execSpanID := e.TraceParent[36:52] // the Python caller's span; the server's submit span with tracing on

	// The worker's run span: that trace, a child of the execution's span.
	var run *tracetest.SpanStub
	for _, s := range spans.GetSpans() {
		if s.Name == "run call-partner" {
			run = &s
		}
	}
	if run == nil {
		t.Fatalf("no span \"run call-partner\" among %d", len(spans.GetSpans()))
	}
	if run.SpanContext.TraceID().String() != traceID || run.Parent.SpanID().String() != execSpanID {
		t.Fatalf("the run span: trace %s, parent %s; want trace %s, parent %s",
			run.SpanContext.TraceID(), run.Parent.SpanID(), traceID, execSpanID)
	}
	if hs := <-handlerSpan; hs.SpanID() != run.SpanContext.SpanID() {
		t.Fatalf("the handler's context holds span %s, want the run span %s", hs.SpanID(), run.SpanContext.SpanID())
	}

	// The outgoing HTTP call: the same trace, a child of the run span.
	mu.Lock()
	defer mu.Unlock()
	want := fmt.Sprintf("00-%s-%s-01", traceID, run.SpanContext.SpanID())
	if len(got) != 1 || got[0] != want {
		t.Fatalf("the partner got traceparent %q, want [%s]", got, want)
	}
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
