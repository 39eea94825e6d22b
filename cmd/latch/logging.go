package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/latch-run/latch/internal/tracing/otelenv"
)

// The values of --log-format.
const (
	logAuto = "auto" // text on a terminal, JSON otherwise
	logJSON = "json"
	logText = "text"
)

func checkLogFormat(f string) error {
	switch f {
	case logAuto, logJSON, logText:
		return nil
	}
	return fmt.Errorf("%q is not a log format: want auto, json or text", f)
}

// newLogger is serve's logger on out: one JSON object a line
// (slog.JSONHandler) with format json, or auto when out is not a
// terminal; slog's key=value text otherwise.
func newLogger(out io.Writer, format string, level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if format == logJSON || format == logAuto && !isTerminal(out) {
		return slog.New(slog.NewJSONHandler(out, opts))
	}
	return slog.New(slog.NewTextHandler(out, opts))
}

// isTerminal reports whether w is a terminal: a file that is one, or a
// writer that says it is (the tests' stand-in for a terminal).
func isTerminal(w io.Writer) bool {
	if t, ok := w.(interface{ IsTerminal() bool }); ok {
		return t.IsTerminal()
	}
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// startTracing sets up OpenTelemetry tracing from the OTEL_* environment
// (docs/tracing.md); its Provider is nil when tracing is off.
func startTracing(ctx context.Context, log *slog.Logger) (*otelenv.Tracing, error) {
	t, err := otelenv.Setup(ctx, os.Getenv, log)
	if err != nil {
		return nil, err
	}
	if t.Provider != nil {
		log.Info("tracing on: exporting spans over OTLP/HTTP", "endpoint", redactEndpoint(t.Endpoint))
	}
	return t, nil
}

// tracingFlush bounds the flush of the last spans at shutdown.
const tracingFlush = 5 * time.Second

// stopTracing flushes the spans not yet exported.
func stopTracing(t *otelenv.Tracing, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), tracingFlush)
	defer cancel()
	if err := t.Shutdown(ctx); err != nil {
		log.Warn("tracing: flushing the last spans failed", "err", err)
	}
}

// redactEndpoint hides a password in an endpoint URL.
func redactEndpoint(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return s
	}
	return u.Redacted()
}
