package otelenv

import (
	"context"
	"log/slog"
	"strings"
	"testing"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestEnabled(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		env []string
		on  bool
		err string
	}{
		{nil, false, ""},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"}, true, ""},
		{[]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:4318/v1/traces"}, true, ""},
		{[]string{"OTEL_TRACES_EXPORTER", "otlp"}, true, ""},
		{[]string{"OTEL_TRACES_EXPORTER", "OTLP"}, true, ""},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://x", "OTEL_SDK_DISABLED", "true"}, false, ""},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://x", "OTEL_SDK_DISABLED", "TRUE"}, false, ""},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://x", "OTEL_SDK_DISABLED", "false"}, true, ""},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://x", "OTEL_TRACES_EXPORTER", "none"}, false, ""},
		{[]string{"OTEL_TRACES_EXPORTER", "zipkin"}, false, "otlp only"},
		{[]string{"OTEL_TRACES_EXPORTER", "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"}, false, "http/protobuf only"},
		{[]string{"OTEL_TRACES_EXPORTER", "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc",
			"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"}, true, ""},
		{[]string{"OTEL_TRACES_EXPORTER", "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"}, true, ""},
		// Off, a protocol is nobody's business.
		{[]string{"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"}, false, ""},
	} {
		on, err := Enabled(env(c.env...))
		if on != c.on || (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("%v: on %v err %v; want on %v err %q", c.env, on, err, c.on, c.err)
		}
	}
}

func TestSetupOff(t *testing.T) {
	t.Parallel()
	tr, err := Setup(context.Background(), env("OTEL_SDK_DISABLED", "true", "OTEL_TRACES_EXPORTER", "otlp"), slog.Default())
	if err != nil || tr.Provider != nil {
		t.Fatalf("Setup = %+v, %v; want no provider", tr, err)
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown of nothing: %v", err)
	}
}
