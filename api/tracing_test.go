package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/latch-run/latch/engine"
	"github.com/latch-run/latch/internal/tracing"
	"github.com/latch-run/latch/kinds"
	"github.com/latch-run/latch/store"
)

// The caller's trace: what a traced client sends in its traceparent header.
const (
	callerTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan   = "00f067aa0ba902b7"
	callerParent = "00-" + callerTrace + "-" + callerSpan + "-01"
)

// tracedEnv is an API server and an in-process worker with the built-in
// kinds over one store, both traced by tp (nil: tracing off), and a
// target for the http kind that remembers the traceparent of each call.
type tracedEnv struct {
	*testEnv
	worker *engine.Worker
	target *httptest.Server

	mu   sync.Mutex
	sent []string // the traceparent header of each call to target
}

func newTracedEnv(t *testing.T, tp trace.TracerProvider) *tracedEnv {
	t.Helper()
	te := &tracedEnv{testEnv: newEnv(t, func(c *Config) { c.TracerProvider = tp })}
	te.target = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		te.mu.Lock()
		te.sent = append(te.sent, r.Header.Get("traceparent"))
		te.mu.Unlock()
	}))
	t.Cleanup(te.target.Close)
	te.worker = engine.NewWorker(engine.WorkerConfig{Store: te.store, PollInterval: 20 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler), TracerProvider: tp})
	if err := kinds.Register(te.worker, kinds.Options{HTTPAllow: []string{"127.0.0.1"}}); err != nil {
		t.Fatal(err)
	}
	if err := te.worker.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = te.worker.Stop(t.Context()) })
	return te
}

// runToEnd submits an http execution calling the target with headers,
// waits until it succeeded, and stops the worker so that every span of
// the run has ended. It returns the submit's answer and the execution.
func (te *tracedEnv) runToEnd(key string, headers ...string) (submitted, done *execution) {
	te.t.Helper()
	submitted = te.submit(key, `{"kind":"http","payload":{"url":"`+te.target.URL+`/hook"}}`,
		http.StatusCreated, headers...)
	done = te.do("GET", "/api/executions/"+submitted.ExecutionID+"?wait_seconds=20", key, nil).
		want(http.StatusOK).exec()
	if done.Status != store.StatusSucceeded {
		te.t.Fatalf("execution %s, error %v", done.Status, done.Error)
	}
	if err := te.worker.Stop(te.t.Context()); err != nil {
		te.t.Fatal(err)
	}
	return submitted, done
}

func inMemoryTracing() (*tracetest.InMemoryExporter, *sdktrace.TracerProvider) {
	exp := tracetest.NewInMemoryExporter()
	return exp, sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
}

// spanNamed returns the one span named name.
func spanNamed(t *testing.T, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		var names []string
		for _, s := range spans {
			names = append(names, s.Name)
		}
		t.Fatalf("%d spans named %q among %v, want 1", len(found), name, names)
	}
	return found[0]
}

func attrs(s tracetest.SpanStub) map[attribute.Key]string {
	m := map[attribute.Key]string{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value.String()
	}
	return m
}

// A submit that sends a traceparent: the execution keeps the server's
// submit span, a child of the caller's; the claim, the run (a child of the
// submit span), its complete (a child of the run) and the http kind's call
// (whose traceparent the target gets) are all in the caller's trace.
func TestTraceFromSubmitToRun(t *testing.T) {
	exp, tp := inMemoryTracing()
	te := newTracedEnv(t, tp)
	key := te.tenant("acme")
	sub, done := te.runToEnd(key, "traceparent", callerParent)

	spans := exp.GetSpans()
	submit := spanNamed(t, spans, "submit")
	if submit.SpanContext.TraceID().String() != callerTrace || submit.Parent.SpanID().String() != callerSpan ||
		!submit.Parent.IsRemote() || submit.SpanKind != trace.SpanKindServer {
		t.Errorf("submit span: trace %s parent %s (remote %v) kind %v; want a server span, child of the caller's",
			submit.SpanContext.TraceID(), submit.Parent.SpanID(), submit.Parent.IsRemote(), submit.SpanKind)
	}
	stored := tracing.Format(submit.SpanContext)
	if sub.TraceParent != stored || done.TraceParent != stored {
		t.Errorf("trace_parent %q (submit) %q (read), want the submit span's %q", sub.TraceParent, done.TraceParent, stored)
	}
	if got := attrs(submit); got[tracing.AttrTenant] != "acme" || got[tracing.AttrExecutionID] != sub.ExecutionID ||
		got[tracing.AttrKind] != "http" || got[tracing.AttrQueue] != "default" || got[tracing.AttrDeduplicated] != "false" {
		t.Errorf("submit span attributes %v", got)
	}

	claim := spanNamed(t, spans, "claim")
	run := spanNamed(t, spans, "run http")
	complete := spanNamed(t, spans, "complete")
	call := spanNamed(t, spans, "http GET")
	for _, s := range []tracetest.SpanStub{claim, run, complete, call} {
		if s.SpanContext.TraceID().String() != callerTrace {
			t.Errorf("span %s is in trace %s, want the caller's %s", s.Name, s.SpanContext.TraceID(), callerTrace)
		}
	}
	if claim.Parent.SpanID() != submit.SpanContext.SpanID() || run.Parent.SpanID() != submit.SpanContext.SpanID() {
		t.Errorf("claim's parent %s, run's %s; want the submit span %s", claim.Parent.SpanID(), run.Parent.SpanID(),
			submit.SpanContext.SpanID())
	}
	if complete.Parent.SpanID() != run.SpanContext.SpanID() || call.Parent.SpanID() != run.SpanContext.SpanID() {
		t.Errorf("complete's parent %s, the call's %s; want the run span %s", complete.Parent.SpanID(),
			call.Parent.SpanID(), run.SpanContext.SpanID())
	}
	if got := attrs(run); got[tracing.AttrExecutionID] != sub.ExecutionID || got[tracing.AttrTenant] != "acme" ||
		got[tracing.AttrKind] != "http" || got[tracing.AttrAttempt] != "1" ||
		got[tracing.AttrOutcome] != string(engine.OutcomeSucceeded) {
		t.Errorf("run span attributes %v", got)
	}
	if got := attrs(complete); got[tracing.AttrExecutionID] != sub.ExecutionID || got[tracing.AttrTenant] != "acme" {
		t.Errorf("complete span attributes %v", got)
	}
	te.mu.Lock()
	defer te.mu.Unlock()
	if len(te.sent) != 1 || te.sent[0] != tracing.Format(call.SpanContext) {
		t.Errorf("the target got traceparent %q, want the call span's %s", te.sent, tracing.Format(call.SpanContext))
	}
}

// With tracing off the execution keeps the header as sent, the http kind
// passes it on unchanged, and no span is made (not even on the global
// provider).
func TestTraceOffKeepsTheHeader(t *testing.T) {
	exp, tp := inMemoryTracing()
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(prev) })

	te := newTracedEnv(t, nil)
	key := te.tenant("acme")
	odd := "00-" + callerTrace + "-" + callerSpan + "-00" // not sampled: kept as is
	sub, done := te.runToEnd(key, "traceparent", odd)
	if sub.TraceParent != odd || done.TraceParent != odd {
		t.Errorf("trace_parent %q, %q; want the header %q", sub.TraceParent, done.TraceParent, odd)
	}
	te.mu.Lock()
	if len(te.sent) != 1 || te.sent[0] != odd {
		t.Errorf("the target got traceparent %q, want %q", te.sent, odd)
	}
	te.mu.Unlock()
	if n := len(exp.GetSpans()); n != 0 {
		t.Errorf("%d spans with tracing off", n)
	}
}

// An invalid traceparent header is ignored, never refused: 201 and no
// trace_parent with tracing off; with it on, the submit span starts a new
// trace and is what the execution keeps.
func TestTraceInvalidHeaderIgnored(t *testing.T) {
	bad := []string{"garbage", "00-" + strings.Repeat("0", 32) + "-" + callerSpan + "-01",
		"00-" + strings.ToUpper(callerTrace) + "-" + callerSpan + "-01", callerParent + "-extra",
		"ff-" + callerTrace + "-" + callerSpan + "-01"}
	off := newEnv(t)
	key := off.tenant("acme")
	for _, h := range bad {
		r := off.do("POST", "/api/executions", key, `{"kind":"echo"}`, "traceparent", h).want(http.StatusCreated)
		if strings.Contains(string(r.body), "trace_parent") {
			t.Errorf("header %q: answer %s has a trace_parent", h, r.body)
		}
	}
	// Sent twice, it is ignored too.
	req, _ := http.NewRequest("POST", off.srv.URL+"/api/executions", strings.NewReader(`{"kind":"echo"}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Add("traceparent", callerParent)
	req.Header.Add("traceparent", callerParent)
	res, err := off.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var x map[string]any
	if err := json.NewDecoder(res.Body).Decode(&x); err != nil || res.StatusCode != http.StatusCreated {
		t.Fatalf("twice: %d %v", res.StatusCode, err)
	}
	res.Body.Close()
	if _, ok := x["trace_parent"]; ok {
		t.Errorf("traceparent sent twice was kept: %v", x["trace_parent"])
	}
	if _, ok := x["dedup_hits"]; !ok {
		t.Errorf("no dedup_hits in %v", x)
	}

	exp, tp := inMemoryTracing()
	on := newEnv(t, func(c *Config) { c.TracerProvider = tp })
	key = on.tenant("acme")
	got := on.submit(key, `{"kind":"echo"}`, http.StatusCreated, "traceparent", "garbage")
	submit := spanNamed(t, exp.GetSpans(), "submit")
	if submit.Parent.IsValid() || got.TraceParent != tracing.Format(submit.SpanContext) {
		t.Errorf("submit span parent %v, trace_parent %q; want a root span, kept", submit.Parent, got.TraceParent)
	}
}

// A dedup hit answers the first execution, whose trace_parent is the
// first submit's; the second submit's span links to it. A batch keeps its
// span for every item.
func TestTraceDedupAndBatch(t *testing.T) {
	exp, tp := inMemoryTracing()
	e := newEnv(t, func(c *Config) { c.TracerProvider = tp })
	key := e.tenant("acme")
	first := e.submit(key, `{"kind":"echo","dedup_key":"k"}`, http.StatusCreated, "traceparent", callerParent)
	other := "00-11111111111111111111111111111111-2222222222222222-01"
	again := e.submit(key, `{"kind":"echo","dedup_key":"k"}`, http.StatusOK, "traceparent", other)
	if again.TraceParent != first.TraceParent || again.DedupHits != 1 || again.LastDedupHitAt == nil {
		t.Errorf("dedup answer trace_parent %q hits %d at %v; want %q, 1 hit", again.TraceParent, again.DedupHits,
			again.LastDedupHitAt, first.TraceParent)
	}
	var dedup tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == "submit" && s.SpanContext.TraceID().String() == "11111111111111111111111111111111" {
			dedup = s
		}
	}
	if attrs(dedup)[tracing.AttrDeduplicated] != "true" || len(dedup.Links) != 1 ||
		tracing.Format(dedup.Links[0].SpanContext) != first.TraceParent {
		t.Errorf("dedup submit span: attributes %v links %v", attrs(dedup), dedup.Links)
	}

	exp.Reset()
	var out batchResponse
	e.do("POST", "/api/executions/batch", key, `{"items":[{"kind":"echo"},{"kind":"echo"}]}`,
		"traceparent", callerParent).want(http.StatusOK).decode(&out)
	batch := spanNamed(t, exp.GetSpans(), "submit batch")
	want := tracing.Format(batch.SpanContext)
	for i, it := range out.Items {
		if it.Execution == nil || it.Execution.TraceParent != want {
			t.Errorf("item %d: %+v, want trace_parent %q", i, it, want)
		}
	}
	if batch.Parent.SpanID().String() != callerSpan || attrs(batch)[tracing.AttrItems] != "2" {
		t.Errorf("batch span parent %s attributes %v", batch.Parent.SpanID(), attrs(batch))
	}
}

// A worker over HTTP: its lease carries trace_parent; the claim is traced
// in the execution's trace, and a complete that sends the run's
// traceparent is a child of it.
func TestTraceWorkerOverHTTP(t *testing.T) {
	exp, tp := inMemoryTracing()
	e := newEnv(t, func(c *Config) { c.TracerProvider = tp })
	key := e.tenant("acme")
	sub := e.submit(key, `{"kind":"echo"}`, http.StatusCreated, "traceparent", callerParent)
	l := e.claimOne(key)
	if l.TraceParent != sub.TraceParent || l.TraceParent == "" {
		t.Fatalf("lease trace_parent %q, want the execution's %q", l.TraceParent, sub.TraceParent)
	}
	runSpan := "00-" + callerTrace + "-1111111111111111-01" // the worker's run span
	e.do("POST", "/api/executions/"+l.ExecutionID+"/complete", key,
		`{"lease_token":"`+l.LeaseToken+`"}`, "traceparent", runSpan).want(http.StatusOK)

	spans := exp.GetSpans()
	submitSpan := tracing.SpanContext(sub.TraceParent).SpanID()
	if c := spanNamed(t, spans, "claim"); c.Parent.SpanID() != submitSpan || attrs(c)[tracing.AttrWorkerID] != "w1" {
		t.Errorf("claim span parent %s attributes %v; want the submit span %s", c.Parent.SpanID(), attrs(c), submitSpan)
	}
	if c := spanNamed(t, spans, "complete"); c.Parent.SpanID().String() != "1111111111111111" ||
		attrs(c)[tracing.AttrStatus] != string(store.StatusSucceeded) {
		t.Errorf("complete span parent %s attributes %v; want the worker's run span", c.Parent.SpanID(), attrs(c))
	}
}

// failingStore fails every Complete with an internal error.
type failingStore struct{ store.Store }

func (failingStore) Complete(_ context.Context, _ *store.CompleteParams) (*store.Execution, error) {
	return nil, errors.New("boom")
}

// A log line about one execution carries its execution_id and the
// caller's tenant.
func TestLogLinesNameExecutionAndTenant(t *testing.T) {
	var logs logBuffer
	e := newEnv(t, func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
		c.Store = failingStore{c.Store}
	})
	key := e.tenant("acme")
	sub := e.submit(key, `{"kind":"echo"}`, http.StatusCreated)
	l := e.claimOne(key)
	e.do("POST", "/api/executions/"+sub.ExecutionID+"/complete", key, `{"lease_token":"`+l.LeaseToken+`"}`).
		problem(http.StatusInternalServerError, CodeInternal)
	var found bool
	for line := range strings.Lines(logs.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		if m["msg"] == "request failed" {
			found = true
			if m["execution_id"] != sub.ExecutionID || m["tenant"] != "acme" {
				t.Errorf("log line %s: want execution_id %s and tenant acme", line, sub.ExecutionID)
			}
		}
	}
	if !found {
		t.Fatalf("no request failed line in %s", logs.String())
	}
}
