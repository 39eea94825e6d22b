package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/latch-run/latch/internal/testdb"
)

// syncBuffer is a log sink shared by the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// serveUntil runs latch serve with args on a fresh SQLite file, logging to
// logs; it returns the base URL and a stop function that shuts the server
// down and waits for it.
func serveUntil(t *testing.T, logs io.Writer, args ...string) (string, func()) {
	t.Helper()
	t.Setenv("LATCH_ADMIN_KEY", testAdminKey)
	cfg, err := serveFlags(append([]string{"--addr", "127.0.0.1:0", "--store", "sqlite:" + testdb.SQLite(t)}, args...))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, io.Discard, logs, func(a net.Addr) { addr <- a }) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	select {
	case a := <-addr:
		return "http://" + a.String(), stop
	case err := <-done:
		cancel()
		once.Do(func() {})
		t.Fatalf("serve: %v", err)
	}
	return "", nil
}

// submitAndWait submits body for key with headers (name, value pairs) and
// waits until the execution is terminal; it returns its id and status.
func submitAndWait(t *testing.T, base, key, body string, headers ...string) (id, status string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/api/executions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var x struct {
		ID string `json:"execution_id"`
	}
	err = json.NewDecoder(res.Body).Decode(&x)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusCreated {
		t.Fatalf("submit: %d %v", res.StatusCode, err)
	}
	var e struct {
		Status string `json:"status"`
	}
	call(t, base, "GET", "/api/executions/"+x.ID+"?wait_seconds=20", key, "", http.StatusOK, &e)
	return x.ID, e.Status
}

func TestLogFormat(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		format string
		json   bool
	}{{logJSON, true}, {logText, false}, {logAuto, true}} { // a buffer is no terminal
		var buf bytes.Buffer
		newLogger(&buf, c.format, slog.LevelInfo).Info("hello", "execution_id", "x")
		if got := json.Valid(buf.Bytes()); got != c.json {
			t.Errorf("format %s: %q, JSON %v", c.format, buf.String(), got)
		}
	}
	if _, err := serveFlags([]string{"--log-format", "xml"}); err == nil || !strings.Contains(err.Error(), "--log-format") {
		t.Errorf("--log-format xml: %v, want a usage error naming the flag", err)
	}
}

// latch serve logs JSON when told (or when stderr is not a terminal), and
// each line about an execution names it and its tenant.
func TestServeLogsJSONNamingExecutionAndTenant(t *testing.T) {
	t.Setenv("LATCH_LOG_FORMAT", "json")
	var logs syncBuffer
	base, stop := serveUntil(t, &logs, "--workers", "1", "--log-level", "debug")
	key := newTenant(t, base, testAdminKey)
	ok, status := submitAndWait(t, base, key, `{"kind":"echo"}`)
	if status != "succeeded" {
		t.Fatalf("echo %s", status)
	}
	bad, status := submitAndWait(t, base, key, `{"kind":"sleep","payload":{"seconds":-1}}`)
	if status != "failed" {
		t.Fatalf("bad sleep %s", status)
	}
	stop()

	seen := map[string]int{}
	for line := range strings.Lines(logs.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		id, _ := m["execution_id"].(string)
		if id == "" {
			continue
		}
		seen[id]++
		if m["tenant"] != "acme" {
			t.Errorf("log line about %s without its tenant: %s", id, line)
		}
	}
	if seen[ok] == 0 || seen[bad] == 0 {
		t.Errorf("log lines per execution %v; want lines about %s and %s in\n%s", seen, ok, bad, logs.String())
	}
}

// collector is an OTLP/HTTP trace receiver.
type collector struct {
	mu    sync.Mutex
	spans map[string][]string // span names by trace id
	names map[string]bool     // service.name of the resources
}

func newCollector(t *testing.T) (*collector, *httptest.Server) {
	c := &collector{spans: map[string][]string{}, names: map[string]bool{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltrace.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, a := range rs.Resource.Attributes {
				if a.Key == "service.name" {
					c.names[a.Value.GetStringValue()] = true
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					id := hex.EncodeToString(s.TraceId)
					c.spans[id] = append(c.spans[id], s.Name)
				}
			}
		}
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return c, srv
}

// With OTEL_EXPORTER_OTLP_ENDPOINT set, latch serve exports the spans of
// a submit and its run in the caller's trace, flushing them when it stops.
func TestServeExportsTracesOverOTLP(t *testing.T) {
	col, srv := newCollector(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_SDK_DISABLED", "")
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	base, stop := serveUntil(t, io.Discard, "--workers", "1")
	key := newTenant(t, base, testAdminKey)
	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	if _, status := submitAndWait(t, base, key, `{"kind":"echo"}`,
		"traceparent", "00-"+trace+"-00f067aa0ba902b7-01"); status != "succeeded" {
		t.Fatalf("echo %s", status)
	}
	stop() // flushes

	col.mu.Lock()
	defer col.mu.Unlock()
	got := col.spans[trace]
	for _, name := range []string{"submit", "claim", "run echo", "complete"} {
		if !strings.Contains(strings.Join(got, ","), name) {
			t.Errorf("the caller's trace holds %v; want a %q span", got, name)
		}
	}
	if !col.names["latch"] || len(col.names) != 1 {
		t.Errorf("service names %v, want latch", col.names)
	}
}

// Tracing settings latch cannot honour stop it before it starts.
func TestServeRefusesUnsupportedTracing(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "zipkin")
	if _, err := serveFlags(nil); err == nil || !strings.Contains(err.Error(), "OTEL_TRACES_EXPORTER") {
		t.Errorf("OTEL_TRACES_EXPORTER=zipkin: %v, want a usage error naming it", err)
	}
}
