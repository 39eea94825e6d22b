package engine

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/latch-run/latch/internal/tracing"
	"github.com/latch-run/latch/store"
)

// Tracing of the worker (docs/tracing.md). Every span is started only
// when WorkerConfig.TracerProvider is set; without it the run's context
// still carries the execution's TraceParent, which the http kind passes
// on.

// leaseAttrs are the attributes that name a lease's execution and attempt.
func leaseAttrs(l *store.Lease) []attribute.KeyValue {
	return []attribute.KeyValue{
		tracing.AttrExecutionID.String(l.ExecutionID),
		tracing.AttrTenant.String(l.Tenant),
		tracing.AttrKind.String(l.Kind),
		tracing.AttrQueue.String(l.Queue),
		tracing.AttrAttempt.Int(l.Attempt),
	}
}

// traceClaim records a "claim" span for each lease, from start until now,
// in the trace of its execution (a new trace for one without).
func (w *Worker) traceClaim(start time.Time, leases []store.Lease) {
	if w.tracer == nil {
		return
	}
	for i := range leases {
		l := &leases[i]
		tracing.Record(w.tracer, tracing.SpanContext(l.TraceParent), "claim", start,
			append(leaseAttrs(l), tracing.AttrWorkerID.String(w.cfg.WorkerID))...)
	}
}

// startRun returns parent carrying the execution's trace context and,
// with tracing on, the attempt's "run <kind>" span, a child of the
// execution's TraceParent.
func (a *attempt) startRun(parent context.Context) context.Context {
	ctx := tracing.WithParent(parent, a.lease.TraceParent)
	if a.w.tracer == nil {
		return ctx
	}
	ctx, a.span = a.w.tracer.Start(ctx, "run "+a.lease.Kind, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(append(leaseAttrs(a.lease), tracing.AttrWorkerID.String(a.w.cfg.WorkerID))...))
	return ctx
}

// traceReturned notes on the run span what the handler returned.
func (a *attempt) traceReturned(err error) {
	if a.span == nil || err == nil || errors.Is(err, ErrSuspended) {
		return
	}
	a.span.RecordError(err)
	a.span.SetStatus(codes.Error, store.Truncate(err.Error(), store.MaxErrorBytes))
}

// endRun ends the run span with the attempt's outcome.
func (a *attempt) endRun(o Outcome) {
	if a.span == nil {
		return
	}
	a.span.SetAttributes(tracing.AttrOutcome.String(string(o)))
	switch o {
	case OutcomeLeaseLost, OutcomeUnrecorded:
		a.span.SetStatus(codes.Error, string(o))
	}
	a.span.End()
}

// traceWrite starts the span of a settling write ("complete", "fail",
// "release" or "suspend"; a flow step's record is inside its step's span) and returns
// the function that ends it with the write's error.
func (a *attempt) traceWrite(ctx context.Context, op string) (context.Context, func(error)) {
	if a.w.tracer == nil || op == "step" {
		return ctx, func(error) {}
	}
	ctx, span := a.w.tracer.Start(ctx, op, trace.WithAttributes(tracing.AttrExecutionID.String(a.lease.ExecutionID),
		tracing.AttrTenant.String(a.lease.Tenant), tracing.AttrAttempt.Int(a.lease.Attempt)))
	return ctx, func(err error) { endSpan(span, err) }
}

// startStep starts a flow step's span, a child of the handler's context.
func (a *attempt) startStep(ctx context.Context, name string) (context.Context, trace.Span) {
	return tracing.Start(ctx, a.w.tracer, "step "+name, trace.SpanKindInternal,
		tracing.AttrExecutionID.String(a.lease.ExecutionID), tracing.AttrTenant.String(a.lease.Tenant), tracing.AttrStep.String(name))
}

// endSpan ends span, marking it failed with err when err is not nil.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, store.Truncate(err.Error(), store.MaxErrorBytes))
	}
	span.End()
}
