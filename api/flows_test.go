package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// flowEnv is a test server on a settable clock with one tenant.
func flowEnv(t *testing.T, settings ...string) (*testEnv, *fakeClock, string) {
	t.Helper()
	clock := &fakeClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	e := newEnv(t, func(c *Config) { c.Now = clock.Now; c.MaxPayloadBytes = 1000 })
	return e, clock, e.tenant("acme", settings...)
}

func (e *testEnv) steps(key, id string) []step {
	e.t.Helper()
	var out stepsResponse
	e.do("GET", "/api/executions/"+id+"/steps", key, nil).want(http.StatusOK).decode(&out)
	return out.Items
}

func (e *testEnv) record(key string, l lease, body string) *resp {
	e.t.Helper()
	return e.do("POST", "/api/executions/"+l.ExecutionID+"/steps", key, `{"lease_token":"`+l.LeaseToken+`",`+body+`}`)
}

func (e *testEnv) suspendOn(key string, l lease, body string) *resp {
	e.t.Helper()
	return e.do("POST", "/api/executions/"+l.ExecutionID+"/suspend", key, `{"lease_token":"`+l.LeaseToken+`",`+body+`}`)
}

func (e *testEnv) signal(key, id, name string, body any, headers ...string) *resp {
	e.t.Helper()
	return e.do("POST", "/api/executions/"+id+"/signals/"+name, key, body, headers...)
}

func (e *testEnv) get(key, id string) *execution {
	e.t.Helper()
	return e.do("GET", "/api/executions/"+id, key, nil).want(http.StatusOK).exec()
}

func TestFlowSteps(t *testing.T) {
	t.Parallel()
	e, clock, key := flowEnv(t)
	x := e.submit(key, `{"kind":"flow","max_attempts":3}`, http.StatusCreated)
	r := e.do("POST", "/api/workers/claim", key, `{"worker_id":"w"}`).want(http.StatusOK)
	if !strings.Contains(string(r.body), `"steps":{}`) {
		t.Fatalf("a lease without steps does not carry steps {}: %s", r.body)
	}
	var claim claimResponse
	r.decode(&claim)
	l := claim.Leases[0]

	var rec stepRecord
	e.record(key, l, `"name":"reserve","result":{"b": 1, "a": [2]},"started_at":"2029-12-31T23:59:00+01:00"`).want(http.StatusOK).decode(&rec)
	if rec.Name != "reserve" || string(rec.Result) != `{"a":[2],"b":1}` || !rec.Recorded {
		t.Fatalf("first record: %+v", rec)
	}
	// The first record wins: a second answers it, recorded false.
	e.record(key, l, `"name":"reserve","result":"other"`).want(http.StatusOK).decode(&rec)
	if string(rec.Result) != `{"a":[2],"b":1}` || rec.Recorded {
		t.Fatalf("second record: %+v", rec)
	}
	// No result records null; so does null.
	e.record(key, l, `"name":"note"`).want(http.StatusOK).decode(&rec)
	if string(rec.Result) != "null" || !rec.Recorded {
		t.Fatalf("record without result: %+v", rec)
	}
	clock.add(time.Second)
	e.record(key, l, `"name":"empty","result":null`).want(http.StatusOK)

	steps := e.steps(key, x.ExecutionID)
	if len(steps) != 3 || steps[0].Name != "reserve" || steps[1].Name != "note" || steps[2].Name != "empty" {
		t.Fatalf("journal: %+v", steps)
	}
	if steps[0].StartedAt == nil || !steps[0].StartedAt.Equal(time.Date(2029, 12, 31, 22, 59, 0, 0, time.UTC)) ||
		steps[0].Attempt != 1 || steps[1].StartedAt != nil || string(steps[2].Result) != "null" ||
		!steps[2].RecordedAt.Equal(clock.Now()) {
		t.Fatalf("journal entries: %+v", steps)
	}

	// A retried attempt's lease carries the journal; the old token records nothing.
	e.do("POST", "/api/executions/"+x.ExecutionID+"/fail", key, `{"lease_token":"`+l.LeaseToken+`","error":"x","retry_after_seconds":0}`).want(http.StatusOK)
	e.record(key, l, `"name":"late"`).problem(http.StatusConflict, CodeLeaseLost)
	e.suspendOn(key, l, `"step":"late","signal":"go"`).problem(http.StatusConflict, CodeLeaseLost)
	l2 := e.claimOne(key)
	if l2.Attempt != 2 || len(l2.Steps) != 3 || string(l2.Steps["reserve"]) != `{"a":[2],"b":1}` || string(l2.Steps["note"]) != "null" {
		t.Fatalf("second lease: %+v", l2)
	}
	if got := e.steps(key, x.ExecutionID); len(got) != 3 {
		t.Fatalf("a stale token changed the journal: %+v", got)
	}
	// The admin reads any tenant's journal.
	if got := e.steps(e.admin, x.ExecutionID); len(got) != 3 {
		t.Fatalf("admin reads %d steps", len(got))
	}
}

func TestFlowSleep(t *testing.T) {
	t.Parallel()
	e, clock, key := flowEnv(t)
	x := e.submit(key, `{"kind":"flow"}`, http.StatusCreated)
	l := e.claimOne(key)
	until := clock.Now().Add(time.Hour)
	s := e.suspendOn(key, l, `"step":"nap","until":"`+until.Format(time.RFC3339)+`"`).want(http.StatusOK).exec()
	if s.Status != store.StatusSuspended || s.WakeAt == nil || !s.WakeAt.Equal(until) || s.WaitingFor != nil || s.Attempt != 1 {
		t.Fatalf("suspended: %+v", s)
	}
	if e.inflight("acme") != 1 {
		t.Fatal("a suspended execution gave back its quota slot")
	}
	// The lease ended; nothing to claim while it sleeps.
	e.record(key, l, `"name":"x"`).problem(http.StatusConflict, CodeLeaseLost)
	var claim claimResponse
	e.do("POST", "/api/workers/claim", key, `{"worker_id":"w"}`).want(http.StatusOK).decode(&claim)
	if len(claim.Leases) != 0 {
		t.Fatal("claimed a sleeping execution")
	}
	var list listResponse
	e.do("GET", "/api/executions?status=suspended", key, nil).want(http.StatusOK).decode(&list)
	if len(list.Items) != 1 || list.Items[0].ExecutionID != x.ExecutionID || list.Items[0].WakeAt == nil {
		t.Fatalf("list status=suspended: %+v", list.Items)
	}

	clock.add(time.Hour)
	if _, err := e.store.Wake(context.Background(), &store.WakeParams{Now: clock.Now()}); err != nil {
		t.Fatal(err)
	}
	w := e.get(key, x.ExecutionID)
	if w.Status != store.StatusQueued || w.WakeAt != nil || w.WaitingFor != nil {
		t.Fatalf("woken: %+v", w)
	}
	l2 := e.claimOne(key)
	if l2.Attempt != 1 || len(l2.Steps) != 1 || string(l2.Steps["nap"]) != "null" {
		t.Fatalf("resumed lease: %+v", l2)
	}
	// A sleep already over, and a suspend on a recorded step: queued at once.
	past := clock.Now().Add(-time.Minute).Format(time.RFC3339)
	q := e.suspendOn(key, l2, `"step":"nap2","until":"`+past+`"`).want(http.StatusOK).exec()
	if q.Status != store.StatusQueued {
		t.Fatalf("sleep in the past: %+v", q)
	}
	l3 := e.claimOne(key)
	q = e.suspendOn(key, l3, `"step":"nap","until":"`+clock.Now().Add(time.Hour).Format(time.RFC3339)+`"`).want(http.StatusOK).exec()
	if q.Status != store.StatusQueued || l3.Attempt != 1 {
		t.Fatalf("suspend on a recorded step: %+v (attempt %d)", q, l3.Attempt)
	}
	if got := e.steps(key, x.ExecutionID); len(got) != 2 {
		t.Fatalf("journal: %+v", got)
	}

	// Cancel ends a suspended execution at once.
	l4 := e.claimOne(key)
	e.suspendOn(key, l4, `"step":"long","until":"`+clock.Now().Add(24*time.Hour).Format(time.RFC3339)+`"`).want(http.StatusOK)
	c := e.do("POST", "/api/executions/"+x.ExecutionID+"/cancel", key, nil).want(http.StatusOK).exec()
	if c.Status != store.StatusCancelled || c.WakeAt != nil || e.inflight("acme") != 0 {
		t.Fatalf("cancelled: %+v", c)
	}
}

func TestFlowSignal(t *testing.T) {
	t.Parallel()
	e, clock, key := flowEnv(t)
	x := e.submit(key, `{"kind":"flow"}`, http.StatusCreated)
	l := e.claimOne(key)
	s := e.suspendOn(key, l, `"step":"approval","signal":"approve","timeout_seconds":60`).want(http.StatusOK).exec()
	if s.Status != store.StatusSuspended || s.WaitingFor == nil || *s.WaitingFor != "approve" ||
		s.WakeAt == nil || !s.WakeAt.Equal(clock.Now().Add(time.Minute)) {
		t.Fatalf("waiting: %+v", s)
	}
	// A signal of another name is kept; the awaited one resumes it.
	var sig signalResponse
	e.signal(key, x.ExecutionID, "other", `{"data":1}`).want(http.StatusAccepted).decode(&sig)
	if sig.Delivered {
		t.Fatal("a signal nobody waits for was delivered")
	}
	e.signal(key, x.ExecutionID, "approve", `{"data":{"by": "ann"}}`, "Idempotency-Key", "k1").want(http.StatusAccepted).decode(&sig)
	if !sig.Delivered {
		t.Fatal("the awaited signal was not delivered")
	}
	if g := e.get(key, x.ExecutionID); g.Status != store.StatusQueued || g.WaitingFor != nil || g.WakeAt != nil {
		t.Fatalf("after the signal: %+v", g)
	}
	// The repeat answers the first answer and changes nothing.
	e.signal(key, x.ExecutionID, "approve", `{"data":"again"}`, "Idempotency-Key", "k1").want(http.StatusAccepted).decode(&sig)
	if !sig.Delivered {
		t.Fatal("the repeat did not answer the first answer")
	}
	l2 := e.claimOne(key)
	if l2.Attempt != 1 || string(l2.Steps["approval"]) != `{"by":"ann"}` {
		t.Fatalf("resumed lease: %+v", l2)
	}
	// A signal sent before its wait is consumed at once, with no body at all.
	e.signal(key, x.ExecutionID, "second", nil).want(http.StatusAccepted).decode(&sig)
	if sig.Delivered {
		t.Fatal("a signal before its wait was delivered")
	}
	q := e.suspendOn(key, l2, `"step":"second-step","signal":"second"`).want(http.StatusOK).exec()
	if q.Status != store.StatusQueued {
		t.Fatalf("wait for a signal already there: %+v", q)
	}
	l3 := e.claimOne(key)
	if v, ok := l3.Steps["second-step"]; !ok || string(v) != "null" {
		t.Fatalf("second step: %+v", l3.Steps)
	}
	// The kept "other" signal was not consumed by those waits.
	e.do("POST", "/api/executions/"+x.ExecutionID+"/complete", key, `{"lease_token":"`+l3.LeaseToken+`"}`).want(http.StatusOK)
	steps := e.steps(key, x.ExecutionID)
	if len(steps) != 2 {
		t.Fatalf("journal: %+v", steps)
	}

	// Ended: a new signal is not_active, a repeat still answers as before.
	e.signal(key, x.ExecutionID, "approve", `{}`).problem(http.StatusConflict, CodeNotActive)
	e.signal(key, x.ExecutionID, "approve", `{}`, "Idempotency-Key", "k2").problem(http.StatusConflict, CodeNotActive)
	e.signal(key, x.ExecutionID, "approve", `{}`, "Idempotency-Key", "k1").want(http.StatusAccepted).decode(&sig)
	if !sig.Delivered {
		t.Fatal("a repeat after the end did not answer the first answer")
	}
}

func TestFlowWaitTimesOut(t *testing.T) {
	t.Parallel()
	e, clock, key := flowEnv(t)
	x := e.submit(key, `{"kind":"flow"}`, http.StatusCreated)
	l := e.claimOne(key)
	e.suspendOn(key, l, `"step":"approval","signal":"approve","timeout_seconds":5`).want(http.StatusOK)
	clock.add(5 * time.Second)
	if _, err := e.store.Wake(context.Background(), &store.WakeParams{Now: clock.Now()}); err != nil {
		t.Fatal(err)
	}
	l2 := e.claimOne(key)
	if string(l2.Steps["approval"]) != string(store.TimedOut) || l2.ExecutionID != x.ExecutionID {
		t.Fatalf("timed out wait: %+v", l2.Steps)
	}
	// The late signal does not end the wait a second time: it is kept.
	var sig signalResponse
	e.signal(key, x.ExecutionID, "approve", `{"data":1}`).want(http.StatusAccepted).decode(&sig)
	if sig.Delivered {
		t.Fatal("a late signal was delivered to a wait that had timed out")
	}
}

func TestFlowRetry(t *testing.T) {
	t.Parallel()
	e, _, key := flowEnv(t, `,"max_inflight":1`)
	x := e.submit(key, `{"kind":"flow","max_attempts":1}`, http.StatusCreated)
	l := e.claimOne(key)
	e.record(key, l, `"name":"reserve","result":7`).want(http.StatusOK)
	// Not failed yet.
	e.do("POST", "/api/executions/"+x.ExecutionID+"/retry", key, nil).problem(http.StatusConflict, CodeNotFailed)
	f := e.do("POST", "/api/executions/"+x.ExecutionID+"/fail", key, `{"lease_token":"`+l.LeaseToken+`","error":"boom"}`).want(http.StatusOK).exec()
	if f.Status != store.StatusFailed {
		t.Fatalf("after fail: %+v", f)
	}
	// At the quota: 429 with Retry-After, nothing changed.
	y := e.submit(key, `{"kind":"other"}`, http.StatusCreated)
	r := e.do("POST", "/api/executions/"+x.ExecutionID+"/retry", key, nil)
	r.problem(http.StatusTooManyRequests, CodeQuotaExceeded)
	if r.header.Get("Retry-After") != "5" {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
	if g := e.get(key, x.ExecutionID); g.Status != store.StatusFailed {
		t.Fatalf("a refused retry changed it: %+v", g)
	}
	e.do("POST", "/api/executions/"+y.ExecutionID+"/cancel", key, nil).want(http.StatusOK)

	q := e.do("POST", "/api/executions/"+x.ExecutionID+"/retry", key, nil).want(http.StatusOK).exec()
	if q.Status != store.StatusQueued || q.Attempt != 0 || q.Error != nil || q.FinishedAt != nil || e.inflight("acme") != 1 {
		t.Fatalf("retried: %+v", q)
	}
	e.do("POST", "/api/executions/"+x.ExecutionID+"/retry", key, nil).problem(http.StatusConflict, CodeNotFailed)
	l2 := e.claimOne(key)
	if l2.Attempt != 1 || string(l2.Steps["reserve"]) != "7" {
		t.Fatalf("lease after retry: %+v", l2)
	}
}

func TestFlowTenants(t *testing.T) {
	t.Parallel()
	e, _, key := flowEnv(t)
	other := e.tenant("other")
	x := e.submit(key, `{"kind":"flow"}`, http.StatusCreated)
	l := e.claimOne(key)
	id := x.ExecutionID

	// Another tenant's execution is not there; its fenced calls lose the lease.
	e.do("GET", "/api/executions/"+id+"/steps", other, nil).problem(http.StatusNotFound, CodeNotFound)
	e.signal(other, id, "go", `{}`).problem(http.StatusNotFound, CodeNotFound)
	e.do("POST", "/api/executions/"+id+"/retry", other, nil).problem(http.StatusNotFound, CodeNotFound)
	e.record(other, l, `"name":"x"`).problem(http.StatusConflict, CodeLeaseLost)
	e.suspendOn(other, l, `"step":"x","signal":"go"`).problem(http.StatusConflict, CodeLeaseLost)
	e.do("GET", "/api/executions/"+id+"/steps", e.admin, nil, "Latch-Tenant", "other").problem(http.StatusNotFound, CodeNotFound)
	if got := e.steps(key, id); len(got) != 0 {
		t.Fatalf("another tenant's calls recorded %+v", got)
	}
	// Missing executions.
	for _, missing := range []string{"0193a6e4-7c1e-7b3a-9f1e-2d9c3e8a4b10", "nope"} {
		e.do("GET", "/api/executions/"+missing+"/steps", key, nil).problem(http.StatusNotFound, CodeNotFound)
		e.signal(key, missing, "go", `{}`).problem(http.StatusNotFound, CodeNotFound)
		e.do("POST", "/api/executions/"+missing+"/retry", key, nil).problem(http.StatusNotFound, CodeNotFound)
		e.do("POST", "/api/executions/"+missing+"/steps", key, `{"lease_token":"t","name":"x"}`).problem(http.StatusConflict, CodeLeaseLost)
		e.do("POST", "/api/executions/"+missing+"/suspend", key, `{"lease_token":"t","step":"x","signal":"go"}`).problem(http.StatusConflict, CodeLeaseLost)
	}

	// A disabled tenant's workers may still record and suspend on the
	// leases they hold; its other calls are refused.
	e.do("PATCH", "/api/tenants/acme", e.admin, `{"disabled":true}`).want(http.StatusOK)
	e.record(key, l, `"name":"reserve","result":1`).want(http.StatusOK)
	e.do("GET", "/api/executions/"+id+"/steps", key, nil).problem(http.StatusForbidden, CodeTenantDisabled)
	e.signal(key, id, "go", `{}`).problem(http.StatusForbidden, CodeTenantDisabled)
	e.do("POST", "/api/executions/"+id+"/retry", key, nil).problem(http.StatusForbidden, CodeTenantDisabled)
	s := e.suspendOn(key, l, `"step":"wait","signal":"go"`).want(http.StatusOK).exec()
	if s.Status != store.StatusSuspended {
		t.Fatalf("disabled tenant's suspend: %+v", s)
	}
	// The admin still acts on it.
	var sig signalResponse
	e.signal(e.admin, id, "go", `{"data":"ok"}`).want(http.StatusAccepted).decode(&sig)
	if !sig.Delivered {
		t.Fatal("the admin's signal was not delivered")
	}
	if got := e.steps(e.admin, id); len(got) != 2 || string(got[1].Result) != `"ok"` {
		t.Fatalf("journal: %+v", got)
	}
}

func TestFlowInvalid(t *testing.T) {
	t.Parallel()
	e, _, key := flowEnv(t)
	x := e.submit(key, `{"kind":"flow"}`, http.StatusCreated)
	l := e.claimOne(key)
	tok := `"lease_token":"` + l.LeaseToken + `"`
	big := `"` + strings.Repeat("x", 1000) + `"`
	for _, c := range []struct {
		op, body, field string
		status          int
	}{
		{"steps", `{}`, "lease_token", 400},
		{"steps", `{` + tok + `}`, "name", 400},
		{"steps", `{` + tok + `,"name":""}`, "name", 400},
		{"steps", `{` + tok + `,"name":"a\u200bb"}`, "name", 400},
		{"steps", `{` + tok + `,"name":"` + strings.Repeat("n", 257) + `"}`, "name", 400},
		{"steps", `{` + tok + `,"name":"a","started_at":"yesterday"}`, "started_at", 400},
		{"steps", `{` + tok + `,"name":"a","result":` + big + `}`, "result", 413},
		{"steps", `{` + tok + `,"name":"a","extra":1}`, "extra", 400},
		{"suspend", `{` + tok + `}`, "step", 400},
		{"suspend", `{` + tok + `,"step":"s"}`, "until", 400},
		{"suspend", `{` + tok + `,"step":"s","until":"2031-01-01T00:00:00Z","signal":"go"}`, "until", 400},
		{"suspend", `{` + tok + `,"step":"s","until":"soon"}`, "until", 400},
		{"suspend", `{` + tok + `,"step":"s","until":"2099-01-01T00:00:00Z"}`, "until", 400},
		{"suspend", `{` + tok + `,"step":"s","until":"2031-01-01T00:00:00Z","timeout_seconds":5}`, "timeout_seconds", 400},
		{"suspend", `{` + tok + `,"step":"s","signal":"a b"}`, "signal", 400},
		{"suspend", `{` + tok + `,"step":"s","signal":"go","timeout_seconds":-1}`, "timeout_seconds", 400},
		{"suspend", `{` + tok + `,"step":"s","signal":"go","timeout_seconds":31536001}`, "timeout_seconds", 400},
		{"suspend", `{` + tok + `,"step":"","signal":"go"}`, "step", 400},
		{"signals/go", `{"data":` + big + `}`, "data", 413},
		{"signals/go", `{"data":1,"name":"x"}`, "name", 400},
		{"signals/go", `[1]`, "body", 400},
		{"signals/a%20b", `{}`, "signal", 400},
		{"signals/" + strings.Repeat("s", 129), `{}`, "signal", 400},
	} {
		r := e.do("POST", "/api/executions/"+x.ExecutionID+"/"+c.op, key, c.body)
		code := CodeInvalidRequest
		if c.status == 413 {
			code = CodePayloadTooLarge
		}
		detailHas(t, r.problem(c.status, code), c.field)
	}
	p := e.signal(key, x.ExecutionID, "go", `{}`, "Idempotency-Key", strings.Repeat("k", 257)).problem(http.StatusBadRequest, CodeInvalidRequest)
	detailHas(t, p, "Idempotency-Key")
	e.signal(key, x.ExecutionID, "go", `{}`, "Content-Type", "text/plain").problem(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType)
	for _, path := range []string{"/steps?x=1", "/retry?x=1"} {
		method := "GET"
		if strings.HasPrefix(path, "/retry") {
			method = "POST"
		}
		detailHas(t, e.do(method, "/api/executions/"+x.ExecutionID+path, key, nil).problem(http.StatusBadRequest, CodeInvalidRequest), "x")
	}
	// None of it changed anything.
	if got := e.steps(key, x.ExecutionID); len(got) != 0 {
		t.Fatalf("refused calls recorded %+v", got)
	}
	if g := e.get(key, x.ExecutionID); g.Status != store.StatusRunning {
		t.Fatalf("refused calls changed the execution: %+v", g)
	}
	// A wait with timeout_seconds 0 waits without a timeout.
	s := e.suspendOn(key, l, `"step":"s","signal":"go","timeout_seconds":0`).want(http.StatusOK).exec()
	if s.Status != store.StatusSuspended || s.WakeAt != nil {
		t.Fatalf("timeout 0: %+v", s)
	}
}

// TestFlowEvents: the event stream shows a flow suspended and resumed, by a
// signal and by Wake, as the store tells of the changes (the hub does not
// poll here).
func TestFlowEvents(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	e := newEnv(t, func(c *Config) { c.Now = clock.Now; c.PollInterval = time.Hour })
	key := e.tenant("acme")
	x := e.submit(key, `{"kind":"flow"}`, http.StatusCreated)
	l := e.claimOne(key)
	_, ch := e.openStream("/api/executions/"+x.ExecutionID+"/events", key)
	if _, ev := nextEvent(t, ch); ev.Status != store.StatusRunning {
		t.Fatalf("first event: %+v", ev)
	}
	e.suspendOn(key, l, `"step":"s","signal":"go"`).want(http.StatusOK)
	_, ev := nextEvent(t, ch)
	if ev.Status != store.StatusSuspended || ev.WaitingFor == nil || *ev.WaitingFor != "go" {
		t.Fatalf("suspended event: %+v", ev)
	}
	e.signal(key, x.ExecutionID, "go", nil).want(http.StatusAccepted)
	if _, ev := nextEvent(t, ch); ev.Status != store.StatusQueued || ev.Attempt != 1 {
		t.Fatalf("resumed event: %+v", ev)
	}

	l = e.claimOne(key)
	if _, ev := nextEvent(t, ch); ev.Status != store.StatusRunning || ev.Attempt != 1 {
		t.Fatalf("running again: %+v", ev)
	}
	e.suspendOn(key, l, `"step":"nap","until":"`+clock.Now().Add(time.Minute).Format(time.RFC3339)+`"`).want(http.StatusOK)
	if _, ev := nextEvent(t, ch); ev.Status != store.StatusSuspended || ev.WakeAt == nil {
		t.Fatalf("sleeping event: %+v", ev)
	}
	clock.add(time.Minute)
	if _, err := e.store.Wake(context.Background(), &store.WakeParams{Now: clock.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, ev := nextEvent(t, ch); ev.Status != store.StatusQueued || ev.WakeAt != nil {
		t.Fatalf("woken event: %+v", ev)
	}
}

// The answers' JSON has every field present, null when unset.
func TestFlowWireShapes(t *testing.T) {
	t.Parallel()
	e, _, key := flowEnv(t)
	x := e.submit(key, `{"kind":"flow"}`, http.StatusCreated)
	var raw map[string]json.RawMessage
	e.do("GET", "/api/executions/"+x.ExecutionID, key, nil).want(http.StatusOK).decode(&raw)
	if string(raw["wake_at"]) != "null" || string(raw["waiting_for"]) != "null" {
		t.Fatalf("execution without a suspension: %s %s", raw["wake_at"], raw["waiting_for"])
	}
	l := e.claimOne(key)
	e.record(key, l, `"name":"a"`).want(http.StatusOK)
	r := e.do("GET", "/api/executions/"+x.ExecutionID+"/steps", key, nil).want(http.StatusOK)
	var items struct {
		Items []map[string]json.RawMessage `json:"items"`
	}
	r.decode(&items)
	for _, f := range []string{"name", "result", "started_at", "recorded_at", "attempt"} {
		if _, ok := items.Items[0][f]; !ok {
			t.Errorf("step has no %s: %s", f, r.body)
		}
	}
	r = e.do("GET", "/api/executions/"+e.submit(key, `{"kind":"flow"}`, http.StatusCreated).ExecutionID+"/steps", key, nil).want(http.StatusOK)
	if strings.TrimSpace(string(r.body)) != `{"items":[],"next_cursor":null}` {
		t.Fatalf("empty journal: %s", r.body)
	}
}
