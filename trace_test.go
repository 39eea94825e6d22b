package latch_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/latch-run/latch"
)

// A Go caller's span: Submit keeps its trace context, and a worker with a
// tracer provider runs the execution in that trace, the handler's context
// carrying the run span.
func TestSubmitContinuesTheCallersTrace(t *testing.T) {
	c := open(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))

	ctx, caller := tp.Tracer("test").Start(t.Context(), "caller")
	e, _, err := c.Submit(ctx, "acme", latch.SubmitRequest{Kind: "k"})
	caller.End()
	if err != nil {
		t.Fatal(err)
	}
	want := "00-" + caller.SpanContext().TraceID().String() + "-" + caller.SpanContext().SpanID().String() + "-01"
	if e.TraceParent != want {
		t.Fatalf("TraceParent %q, want the caller's span %q", e.TraceParent, want)
	}

	inRun := make(chan trace.SpanContext, 1)
	w := c.NewWorker(latch.WorkerOptions{Logger: slog.New(slog.DiscardHandler), PollInterval: 10 * time.Millisecond,
		TracerProvider: tp})
	w.Handle("k", func(ctx context.Context, _ *latch.Job) (any, error) {
		inRun <- trace.SpanFromContext(ctx).SpanContext()
		return nil, nil
	})
	if err := w.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	wait(t, c, e.ID)
	stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Stop(stop); err != nil {
		t.Fatal(err)
	}
	sc := <-inRun
	if sc.TraceID() != caller.SpanContext().TraceID() {
		t.Errorf("the run's trace %s, want the caller's %s", sc.TraceID(), caller.SpanContext().TraceID())
	}
	runs := 0
	for _, s := range exp.GetSpans() {
		if s.Name == "run k" {
			runs++
			if s.Parent.SpanID() != caller.SpanContext().SpanID() {
				t.Errorf("run span parent %s, want the caller's span", s.Parent.SpanID())
			}
		}
	}
	if runs != 1 {
		t.Errorf("%d run spans, want 1", runs)
	}

	// Without a trace context, none is kept.
	plain, _, err := c.Submit(t.Context(), "acme", latch.SubmitRequest{Kind: "k"})
	if err != nil || plain.TraceParent != "" {
		t.Errorf("submit without a trace: %v, TraceParent %q", err, plain.TraceParent)
	}
}
