package api

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/latch-run/latch/internal/tracing"
	"github.com/latch-run/latch/store"
)

// Tracing and log context of requests (docs/tracing.md).

// withIncomingTrace returns ctx carrying the request's W3C traceparent
// header, when it sends exactly one that parses; anything else is ignored,
// as W3C Trace Context asks, never refused.
func withIncomingTrace(ctx context.Context, r *http.Request) context.Context {
	vs := r.Header.Values(tracing.Header)
	if len(vs) != 1 {
		return ctx
	}
	tp, ok := tracing.Parse(vs[0])
	if !ok {
		return ctx
	}
	return tracing.WithParent(ctx, tp)
}

// startSubmit starts the span of a submit (name "submit" or "submit
// batch"), a child of the caller's trace context, and returns the
// traceparent the submitted executions keep: the span's with tracing on,
// else the caller's as it sent it ("" for none).
func (s *Server) startSubmit(ctx context.Context, name, owner string) (context.Context, trace.Span, string) {
	ctx, span := tracing.Start(ctx, s.tracer, name, trace.SpanKindServer, tracing.AttrTenant.String(owner))
	return ctx, span, tracing.Current(ctx)
}

// endSubmit ends a single submit's span with what became of it.
func endSubmit(span trace.Span, it *store.Admitted, err error) {
	if !span.IsRecording() {
		span.End()
		return
	}
	if it != nil && it.Execution != nil {
		e := it.Execution
		span.SetAttributes(tracing.AttrExecutionID.String(e.ID), tracing.AttrKind.String(e.Kind),
			tracing.AttrQueue.String(e.Queue), tracing.AttrDeduplicated.Bool(it.Deduplicated))
		if sc := tracing.SpanContext(e.TraceParent); it.Deduplicated && sc.IsValid() {
			// The execution answered belongs to the trace of the submit
			// that made it.
			span.AddLink(trace.Link{SpanContext: sc})
		}
	}
	if it != nil && it.Err != nil && err == nil {
		err = it.Err
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// traceClaim records a "claim" span for each lease of an HTTP claim, in
// its execution's trace, from start until now.
func (s *Server) traceClaim(start time.Time, workerID string, leases []store.Lease) {
	if s.tracer == nil {
		return
	}
	for i := range leases {
		l := &leases[i]
		tracing.Record(s.tracer, tracing.SpanContext(l.TraceParent), "claim", start,
			tracing.AttrExecutionID.String(l.ExecutionID), tracing.AttrTenant.String(l.Tenant),
			tracing.AttrKind.String(l.Kind), tracing.AttrQueue.String(l.Queue),
			tracing.AttrAttempt.Int(l.Attempt), tracing.AttrWorkerID.String(workerID))
	}
}

// traceSettled records the span of a worker's complete or fail over
// HTTP, from start until now, once it succeeded (*done is the execution
// answered): a child of the caller's trace context when it sent one (its
// run span), else of the execution's.
func (s *Server) traceSettled(ctx context.Context, name string, start time.Time, done **execution) {
	e := *done
	if s.tracer == nil || e == nil {
		return
	}
	parent := trace.SpanContextFromContext(ctx)
	if !parent.IsValid() {
		parent = tracing.SpanContext(e.TraceParent)
	}
	tracing.Record(s.tracer, parent, name, start,
		tracing.AttrExecutionID.String(e.ExecutionID), tracing.AttrTenant.String(e.Tenant),
		tracing.AttrAttempt.Int(e.Attempt), tracing.AttrStatus.String(string(e.Status)))
}

// logInfoKey keys a request's logInfo.
type logInfoKey struct{}

// logInfo is what a request's log lines say about it beyond the method and
// path, learnt as the request is served.
type logInfo struct {
	tenant string // the caller's tenant scope, once authenticated
}

// withLogInfo returns r with an empty logInfo in its context.
func withLogInfo(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), logInfoKey{}, &logInfo{}))
}

// noteTenant records the authenticated caller's tenant for the logs.
func noteTenant(ctx context.Context, tenant string) {
	if li, ok := ctx.Value(logInfoKey{}).(*logInfo); ok {
		li.tenant = tenant
	}
}

// logAttrs are the attributes of a log line about r: on a route of one
// execution (/api/executions/{id}/...), its execution_id and the tenant
// of the caller ("" for the admin, who acts on any tenant's).
func logAttrs(r *http.Request) []any {
	id := r.PathValue("id")
	if id == "" || !strings.Contains(r.Pattern, "/api/executions/{id}") {
		return nil
	}
	tenant := ""
	if li, ok := r.Context().Value(logInfoKey{}).(*logInfo); ok {
		tenant = li.tenant
	}
	return []any{slog.String("execution_id", id), slog.String("tenant", tenant)}
}
