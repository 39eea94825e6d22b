package kinds

import (
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/latch-run/latch/internal/tracing"
)

// HeaderTraceParent is the W3C trace-context header the http kind sends
// (docs/tracing.md), replacing any of the payload's.
const HeaderTraceParent = "traceparent"

// traceRequest makes the request join the run's trace: with tracing on, a
// client span "http <METHOD>" (a child of the run span) is started and its
// traceparent sent; with tracing off, the execution's own traceparent is
// sent as it was stored. With neither, the request is left as it is.
func traceRequest(req *http.Request) (*http.Request, trace.Span) {
	ctx, span := tracing.Start(req.Context(), tracing.FromContext(req.Context()), "http "+req.Method,
		trace.SpanKindClient,
		attribute.String("http.request.method", req.Method),
		attribute.String("url.full", req.URL.Redacted()),
		attribute.String("server.address", req.URL.Hostname()))
	if tp := tracing.Current(ctx); tp != "" {
		req = req.WithContext(ctx)
		req.Header.Set(HeaderTraceParent, tp)
	}
	return req, span
}

// endRequest ends the request's span with its answer's status or error.
func endRequest(span trace.Span, resp *http.Response, err error) {
	if !span.IsRecording() {
		return
	}
	switch {
	case err != nil:
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	default:
		span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
		if resp.StatusCode >= 400 {
			span.SetStatus(codes.Error, resp.Status)
		}
	}
	span.End()
}
