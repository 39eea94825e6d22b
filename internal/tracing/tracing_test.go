package tracing

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func TestParse(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{tp, tp, true},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", true},
		// A later version is read by its version-00 prefix.
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", tp, true},
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-comes-next", tp, true},
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", "", false},
		{"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "", false},
		// Version 00 is exactly 55 characters.
		{tp + "-x", "", false},
		{"", "", false},
		{"garbage", "", false},
		{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01", "", false},
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", "", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-zz", "", false},
		{"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "", false},
	} {
		got, ok := Parse(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("Parse(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestSpanContextRoundTrip(t *testing.T) {
	t.Parallel()
	sc := SpanContext(tp)
	if !sc.IsValid() || !sc.IsRemote() || !sc.IsSampled() {
		t.Fatalf("SpanContext(%q) = %+v", tp, sc)
	}
	if sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sc.SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("ids %s %s", sc.TraceID(), sc.SpanID())
	}
	if got := Format(sc); got != tp {
		t.Errorf("Format = %q, want %q", got, tp)
	}
	if SpanContext("nonsense").IsValid() || Format(trace.SpanContext{}) != "" {
		t.Error("an invalid traceparent makes a valid span context, or the reverse")
	}
}

func TestCurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if got := Current(ctx); got != "" {
		t.Errorf("Current of nothing = %q", got)
	}
	if WithParent(ctx, "nonsense") != ctx {
		t.Error("WithParent of an invalid traceparent changed the context")
	}
	// Flags other than sampled are passed on as given while no span of
	// this process is in the context.
	odd := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03"
	pctx := WithParent(ctx, odd)
	if got := Current(pctx); got != odd {
		t.Errorf("Current = %q, want %q as given", got, odd)
	}

	exp := tracetest.NewInMemoryExporter()
	prov := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	sctx, span := Start(pctx, Tracer(prov), "x", trace.SpanKindInternal)
	if FromContext(sctx) == nil || FromContext(pctx) != nil {
		t.Error("FromContext: a tracer only inside a recording span")
	}
	span.End()
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans", len(spans))
	}
	s := spans[0]
	if s.Parent.SpanID().String() != "00f067aa0ba902b7" || s.SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("span's parent %s trace %s", s.Parent.SpanID(), s.SpanContext.TraceID())
	}
	if got, want := Current(sctx), Format(s.SpanContext); got != want {
		t.Errorf("Current in a span = %q, want the span's %q", got, want)
	}
}

func TestOffCostsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if Tracer(nil) != nil {
		t.Fatal("Tracer(nil) is not nil")
	}
	got, span := Start(ctx, nil, "x", trace.SpanKindInternal)
	if got != ctx || span.IsRecording() || span.SpanContext().IsValid() {
		t.Error("Start with tracing off made a span")
	}
	Record(nil, SpanContext(tp), "x", timeZero) // no panic, nothing to record
}

var timeZero = time.Time{}
