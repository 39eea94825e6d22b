package engine

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/latch-run/latch/internal/tracing"
	"github.com/latch-run/latch/store"
)

const (
	callerTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan   = "00f067aa0ba902b7"
	callerParent = "00-" + callerTrace + "-" + callerSpan + "-01"
)

func traceParent(tp string) func(*store.Submission) {
	return func(s *store.Submission) { s.TraceParent = tp }
}

func spanAttrs(s tracetest.SpanStub) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// Each run is a span whose parent is the execution's TraceParent; the
// handler's context carries it, a flow step is its child, and so is the
// write that settles the attempt.
func TestRunSpanJoinsTheExecutionsTrace(t *testing.T) {
	e := newEnv(t)
	exp := tracetest.NewInMemoryExporter()
	cfg := e.config()
	cfg.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	runs := make(chan *Run, 2)
	cfg.OnRun = func(r *Run) { runs <- r }
	w := NewWorker(cfg)
	seen := make(chan trace.SpanContext, 2)
	w.Handle("ok", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		seen <- trace.SpanFromContext(ctx).SpanContext()
		return job.Step(ctx, "a", func(context.Context) (json.RawMessage, error) { return json.RawMessage(`1`), nil })
	})
	w.Handle("bad", func(context.Context, *Job) (json.RawMessage, error) {
		return nil, Permanent(errors.New("no good"))
	})
	e.start(w)

	ok := e.submit("ok", `{}`, traceParent(callerParent))
	recv(t, runs, "the ok run")
	handlerSaw := recv(t, seen, "the handler's span")
	bad := e.submit("bad", `{}`) // no trace context: a trace of its own
	recv(t, runs, "the bad run")

	spans := exp.GetSpans()
	byName := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		byName[s.Name+" "+spanAttrs(s)["latch.execution_id"]] = s
	}
	run := byName["run ok "+ok.ID]
	if run.SpanContext.TraceID().String() != callerTrace || run.Parent.SpanID().String() != callerSpan ||
		!run.Parent.IsRemote() || run.SpanKind != trace.SpanKindConsumer {
		t.Fatalf("run span trace %s parent %s, kind %v; want a consumer child of %s", run.SpanContext.TraceID(),
			run.Parent.SpanID(), run.SpanKind, callerParent)
	}
	if !handlerSaw.Equal(run.SpanContext) {
		t.Errorf("the handler's context has span %v, want the run's %v", handlerSaw, run.SpanContext)
	}
	want := map[string]string{"latch.execution_id": ok.ID, "latch.tenant": "acme", "latch.kind": "ok",
		"latch.attempt": "1", "latch.outcome": "succeeded", "latch.queue": "default", "latch.worker_id": "w1"}
	for k, v := range want {
		if got := spanAttrs(run)[k]; got != v {
			t.Errorf("run span %s = %q, want %q", k, got, v)
		}
	}
	for _, name := range []string{"step a " + ok.ID, "complete " + ok.ID} {
		s, found := byName[name]
		if !found || s.Parent.SpanID() != run.SpanContext.SpanID() || s.SpanContext.TraceID() != run.SpanContext.TraceID() {
			t.Errorf("span %q: found %v parent %s; want a child of the run span", name, found, s.Parent.SpanID())
		}
	}
	if s := byName["claim "+ok.ID]; s.Parent.SpanID().String() != callerSpan {
		t.Errorf("claim span parent %s, want %s", s.Parent.SpanID(), callerSpan)
	}

	badRun := byName["run bad "+bad.ID]
	if badRun.Parent.IsValid() || spanAttrs(badRun)["latch.outcome"] != "failed" || badRun.Status.Code != codes.Error {
		t.Errorf("bad run span parent %v outcome %q status %v; want a failed root span", badRun.Parent,
			spanAttrs(badRun)["latch.outcome"], badRun.Status)
	}
	if s, found := byName["fail "+bad.ID]; !found || s.Parent.SpanID() != badRun.SpanContext.SpanID() {
		t.Errorf("fail span found %v parent %s, want a child of the run", found, s.Parent.SpanID())
	}
}

// Without a tracer the handler's context still carries the execution's
// trace context, as it was submitted.
func TestRunCarriesTraceContextWithTracingOff(t *testing.T) {
	e := newEnv(t)
	w := NewWorker(e.config())
	type seenCtx struct {
		sc      trace.SpanContext
		current string
	}
	seen := make(chan seenCtx, 1)
	w.Handle("k", func(ctx context.Context, _ *Job) (json.RawMessage, error) {
		seen <- seenCtx{trace.SpanContextFromContext(ctx), tracing.Current(ctx)}
		return nil, nil
	})
	e.start(w)
	odd := "00-" + callerTrace + "-" + callerSpan + "-00"
	e.submit("k", `{}`, traceParent(odd))
	got := recv(t, seen, "the handler's context")
	if !got.sc.IsRemote() || got.sc.TraceID().String() != callerTrace || got.sc.SpanID().String() != callerSpan ||
		got.current != odd {
		t.Errorf("handler's span context %v, traceparent %q; want the execution's %s", got.sc, got.current, odd)
	}
}
