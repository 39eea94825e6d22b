// Package tracing holds latch's trace-context helpers (docs/tracing.md):
// reading and writing W3C traceparent values, carrying them in a context,
// and starting spans only when a tracer is configured. It depends on the
// OpenTelemetry API alone; the SDK and its exporter are set up by
// package otelenv for the latch binary.
package tracing

import (
	"context"
	"encoding/hex"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/latch-run/latch/store"
)

// ScopeName is the instrumentation scope of latch's spans.
const ScopeName = "github.com/latch-run/latch"

// Header is the W3C trace-context header.
const Header = "traceparent"

// Attribute keys of latch's spans.
const (
	AttrExecutionID  = attribute.Key("latch.execution_id")
	AttrTenant       = attribute.Key("latch.tenant")
	AttrKind         = attribute.Key("latch.kind")
	AttrQueue        = attribute.Key("latch.queue")
	AttrAttempt      = attribute.Key("latch.attempt")
	AttrOutcome      = attribute.Key("latch.outcome")
	AttrWorkerID     = attribute.Key("latch.worker_id")
	AttrStep         = attribute.Key("latch.step")
	AttrDeduplicated = attribute.Key("latch.deduplicated")
	AttrItems        = attribute.Key("latch.items")
	AttrStatus       = attribute.Key("latch.status")
)

// Tracer is latch's tracer of tp, nil when tp is nil: tracing is off, and
// every Start below is a no-op that costs a nil check.
func Tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return nil
	}
	return tp.Tracer(ScopeName)
}

// FromContext is the tracer of the span in ctx when that span is
// recording (the run span of a worker with tracing on), else nil: code
// that runs inside a run, such as a built-in kind, traces with it.
func FromContext(ctx context.Context) trace.Tracer {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return nil
	}
	return span.TracerProvider().Tracer(ScopeName)
}

// Start starts a span named name as a child of ctx's span (or remote span
// context), when t is not nil. With t nil it returns ctx and a span that
// records nothing.
func Start(ctx context.Context, t trace.Tracer, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if t == nil {
		return ctx, noSpan
	}
	return t.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// Record makes a finished span named name, from start until now, as a
// child of parent (a remote span context, or none: a new trace): for work
// whose place in a trace is known only once it is done, such as a claim,
// which learns the executions it leased from the store's answer.
func Record(t trace.Tracer, parent trace.SpanContext, name string, start time.Time, attrs ...attribute.KeyValue) {
	if t == nil {
		return
	}
	ctx := context.Background()
	if parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	}
	_, span := t.Start(ctx, name, trace.WithTimestamp(start), trace.WithAttributes(attrs...),
		trace.WithSpanKind(trace.SpanKindInternal))
	span.End()
}

// noSpan is the span of a disabled tracer.
var noSpan = trace.SpanFromContext(context.Background())

// Parse reads a traceparent header value the way W3C Trace Context asks:
// version 00 exactly as specified; a later version (but not ff) by its
// version-00 prefix, when what follows it starts with "-". It returns the
// value as version 00, or false when it does not parse (the header is then
// ignored, never an error).
func Parse(v string) (string, bool) {
	if len(v) < store.TraceParentLen {
		return "", false
	}
	if v[:2] != "00" {
		if len(v) > store.TraceParentLen && v[store.TraceParentLen] != '-' {
			return "", false
		}
		if v[:2] == "ff" || !isLowerHex(v[:2]) {
			return "", false
		}
		v = "00" + v[2:store.TraceParentLen]
	}
	if !store.ValidTraceParent(v) {
		return "", false
	}
	return v, true
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// SpanContext is the remote span context of a valid traceparent (one that
// store.ValidTraceParent accepts); invalid otherwise.
func SpanContext(tp string) trace.SpanContext {
	if !store.ValidTraceParent(tp) {
		return trace.SpanContext{}
	}
	tid, err1 := trace.TraceIDFromHex(tp[3:35])
	sid, err2 := trace.SpanIDFromHex(tp[36:52])
	flags, err3 := hex.DecodeString(tp[53:55])
	if err1 != nil || err2 != nil || err3 != nil {
		return trace.SpanContext{}
	}
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(flags[0]), Remote: true,
	})
}

// Format writes sc as a version-00 traceparent, "" when sc is not valid.
func Format(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	var flags [1]byte
	flags[0] = byte(sc.TraceFlags())
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + hex.EncodeToString(flags[:])
}

// parentKey keys the traceparent a context was given with WithParent.
type parentKey struct{}

// WithParent returns ctx carrying the traceparent tp (as given, to be
// passed on unchanged while no span of this process is in ctx) and its
// remote span context, so that spans started from ctx join that trace.
// An invalid or empty tp leaves ctx as it is.
func WithParent(ctx context.Context, tp string) context.Context {
	sc := SpanContext(tp)
	if !sc.IsValid() {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(context.WithValue(ctx, parentKey{}, tp), sc)
}

// Current is the traceparent to pass on from ctx: its span's when a span
// of this process (or of the handler's own tracing) is in it, else the
// traceparent given to WithParent as it was given, else "".
func Current(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if sc.IsValid() && !sc.IsRemote() {
		return Format(sc)
	}
	if tp, ok := ctx.Value(parentKey{}).(string); ok {
		return tp
	}
	return Format(sc)
}
