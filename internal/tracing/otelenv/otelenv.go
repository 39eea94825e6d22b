// Package otelenv sets up OpenTelemetry tracing for the latch binary from
// the standard OTEL_* environment variables (docs/tracing.md): an SDK
// tracer provider exporting OTLP over HTTP, or nothing at all.
package otelenv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// DefaultServiceName is service.name unless OTEL_SERVICE_NAME (or
// service.name in OTEL_RESOURCE_ATTRIBUTES) says otherwise.
const DefaultServiceName = "latch"

// Tracing is what Setup made: Provider is nil when tracing is off.
type Tracing struct {
	Provider trace.TracerProvider
	// Endpoint describes where spans go, for the start-up log ("" when
	// off).
	Endpoint string

	shutdown func(context.Context) error
}

// Shutdown flushes the spans not yet exported and stops the exporter. It
// does nothing when tracing is off.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil || t.shutdown == nil {
		return nil
	}
	return t.shutdown(ctx)
}

// Enabled reports whether the environment (read with getenv) turns
// tracing on: an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or OTEL_TRACES_EXPORTER is otlp, and
// neither OTEL_SDK_DISABLED is true nor OTEL_TRACES_EXPORTER none. An
// OTEL_TRACES_EXPORTER or OTLP protocol latch cannot honour is an error.
func Enabled(getenv func(string) string) (bool, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	exporter := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")))
	on := false
	switch exporter {
	case "none":
		return false, nil
	case "otlp":
		on = true
	case "":
		on = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")) != "" ||
			strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")) != ""
	default:
		return false, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: latch exports traces with otlp only (or none)", exporter)
	}
	if !on {
		return false, nil
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		v := strings.TrimSpace(getenv(k))
		if v == "" {
			continue
		}
		if v != "http/protobuf" {
			return false, fmt.Errorf("%s=%q: latch exports OTLP over http/protobuf only", k, v)
		}
		break // the traces-specific one wins
	}
	return true, nil
}

// Setup reads the environment with getenv and, when it turns tracing on
// (Enabled), makes a tracer provider that batches spans to the OTLP/HTTP
// endpoint the OTEL_EXPORTER_OTLP_* variables name (the SDK reads them,
// and OTEL_TRACES_SAMPLER, OTEL_BSP_* and OTEL_RESOURCE_ATTRIBUTES). Errors
// of the exporter while running go to log. Off, it returns a Tracing with
// a nil Provider.
func Setup(ctx context.Context, getenv func(string) string, log *slog.Logger) (*Tracing, error) {
	on, err := Enabled(getenv)
	if err != nil || !on {
		return &Tracing{}, err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", DefaultServiceName)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		_ = exp.Shutdown(ctx)
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("tracing: exporting spans failed", "err", err)
	}))
	endpoint := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if endpoint == "" {
		endpoint = getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	if endpoint == "" {
		endpoint = "https://localhost:4318 (the OTLP/HTTP default)"
	}
	return &Tracing{Provider: tp, Endpoint: endpoint, shutdown: tp.Shutdown}, nil
}
