package kinds

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/latch-run/latch/internal/tracing"
)

const testParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// traceTarget is a server that answers the traceparent header it got.
func traceTarget(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(r.Header.Get(HeaderTraceParent)))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func runIn(t *testing.T, ctx context.Context, payload string) httpResult {
	t.Helper()
	h, err := NewHTTPHandler(local, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := h(ctx, job(HTTP, payload))
	if err != nil {
		t.Fatalf("http kind: %v", err)
	}
	var res httpResult
	if err := decodePayload(raw, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// With tracing off, the http kind sends the execution's traceparent as it
// was stored, over one the payload names; with none, the payload's.
func TestHTTPSendsExecutionTraceParentWhenTracingOff(t *testing.T) {
	t.Parallel()
	srv := traceTarget(t)
	ctx := tracing.WithParent(t.Context(), testParent)
	got := runIn(t, ctx, payload(t, map[string]any{"url": srv.URL,
		"headers": map[string]string{"Traceparent": "00-11111111111111111111111111111111-2222222222222222-01"}}))
	if got.Body != testParent {
		t.Errorf("sent traceparent %q, want the execution's %q", got.Body, testParent)
	}
	got = runIn(t, t.Context(), payload(t, map[string]any{"url": srv.URL}))
	if got.Body != "" {
		t.Errorf("with no trace context the kind sent traceparent %q", got.Body)
	}
	own := "00-11111111111111111111111111111111-2222222222222222-01"
	got = runIn(t, t.Context(), payload(t, map[string]any{"url": srv.URL,
		"headers": map[string]string{"traceparent": own}}))
	if got.Body != own {
		t.Errorf("with no trace context the payload's traceparent became %q", got.Body)
	}
}

// With tracing on, the request is a client span, a child of the run's
// span, and the called service gets that span's traceparent.
func TestHTTPSendsItsSpanWhenTracingOn(t *testing.T) {
	t.Parallel()
	srv := traceTarget(t)
	exp := tracetest.NewInMemoryExporter()
	prov := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	ctx, run := prov.Tracer("test").Start(tracing.WithParent(t.Context(), testParent), "run http")
	got := runIn(t, ctx, payload(t, map[string]any{"url": srv.URL + "/hook", "method": "POST"}))
	run.End()

	spans := exp.GetSpans()
	if len(spans) != 2 || spans[0].Name != "http POST" {
		t.Fatalf("spans %v, want http POST then the run", spans.Snapshots())
	}
	client := spans[0]
	if client.SpanKind != trace.SpanKindClient || client.Parent.SpanID() != run.SpanContext().SpanID() ||
		client.SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("client span kind %v parent %s trace %s", client.SpanKind, client.Parent.SpanID(), client.SpanContext.TraceID())
	}
	if want := tracing.Format(client.SpanContext); got.Body != want {
		t.Errorf("sent traceparent %q, want the client span's %q", got.Body, want)
	}
	attrs := map[string]string{}
	for _, kv := range client.Attributes {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	if attrs["http.request.method"] != "POST" || attrs["http.response.status_code"] != "200" ||
		attrs["url.full"] != srv.URL+"/hook" {
		t.Errorf("client span attributes %v", attrs)
	}
}
