package remote_test

import (
	"context"
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/latch-run/latch/remote"
)

// TestSubmitSendsTraceContext: a submit (and any call) sends the trace
// context of its ctx as traceparent, so the execution keeps the caller's
// trace; without one it sends none and the execution has none; a
// traceparent the caller sets on a Request wins.
func TestSubmitSendsTraceContext(t *testing.T) {
	ctx := context.Background()
	s := newServer(t)
	c := s.tenant(t, remote.TenantSpec{Name: "traced"})

	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
	traced := trace.ContextWithRemoteSpanContext(ctx, sc)

	e := must(c.Submit(traced, remote.SubmitRequest{Kind: "echo"}))(t)
	if e.TraceParent != tp {
		t.Fatalf("submitted with span context %s: the execution's trace_parent is %q, want %q", tp, e.TraceParent, tp)
	}
	if got := must(c.Get(ctx, e.ExecutionID))(t); got.TraceParent != tp {
		t.Fatalf("read back: trace_parent %q, want %q", got.TraceParent, tp)
	}

	plain := must(c.Submit(ctx, remote.SubmitRequest{Kind: "echo"}))(t)
	if plain.TraceParent != "" {
		t.Fatalf("submitted without a trace context: trace_parent %q, want none", plain.TraceParent)
	}

	const own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	var out remote.Execution
	if _, err := c.Call(traced, remote.Request{Method: http.MethodPost, Path: "/api/executions",
		Header: http.Header{"Traceparent": {own}}, Body: map[string]any{"kind": "echo"}}, &out); err != nil {
		t.Fatal(err)
	}
	if out.TraceParent != own {
		t.Fatalf("a Request's own traceparent: the execution's is %q, want %q", out.TraceParent, own)
	}
}
