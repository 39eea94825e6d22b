package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// explainGate is a gate as answered, every field any gate has.
type explainGate struct {
	Gate         store.GateKind `json:"gate"`
	Detail       string         `json:"detail"`
	Key          string         `json:"key"`
	Limit        int            `json:"limit"`
	Running      int            `json:"running"`
	Holders      []string       `json:"holders"`
	NextTokenAt  *time.Time     `json:"next_token_at"`
	RunAt        *time.Time     `json:"run_at"`
	WaitingFor   *string        `json:"waiting_for"`
	WakeAt       *time.Time     `json:"wake_at"`
	TenantsAhead int            `json:"tenants_ahead"`
	Queue        string         `json:"queue"`
	Kind         string         `json:"kind"`
}

type explainAnswer struct {
	ExecutionID string        `json:"execution_id"`
	Status      store.Status  `json:"status"`
	Gates       []explainGate `json:"gates"`
}

func (e *testEnv) explain(key, id string) (*explainAnswer, string) {
	e.t.Helper()
	r := e.do("GET", "/api/executions/"+id+"/explain", key, nil).want(http.StatusOK)
	var out explainAnswer
	r.decode(&out)
	if out.ExecutionID != id || out.Gates == nil {
		e.t.Fatalf("explain %s: %s", id, r.body)
	}
	return &out, string(r.body)
}

// liveWorker reports, at now, a worker of every tenant claiming kinds.
func (e *testEnv) liveWorker(now time.Time, kinds ...string) {
	e.t.Helper()
	if err := e.store.ReportServer(context.Background(), &store.ServerReport{ID: "s1", Now: now,
		Workers: []store.WorkerSeen{{ID: "w1", LastSeenAt: now, Kinds: kinds}}}); err != nil {
		e.t.Fatal(err)
	}
}

// TestExplain: each gate the API answers with its figures; a running
// execution answers its status and no gate.
func TestExplain(t *testing.T) {
	t.Parallel()
	e, clock, key := flowEnv(t)
	x := e.submit(key, `{"kind":"resize-image","queue":"media"}`, http.StatusCreated)
	got, body := e.explain(key, x.ExecutionID)
	if got.Status != store.StatusQueued || len(got.Gates) != 1 || got.Gates[0].Gate != store.GateNoWorker ||
		got.Gates[0].Queue != "media" || got.Gates[0].Kind != "resize-image" || got.Gates[0].Detail == "" {
		t.Fatalf("no worker: %s", body)
	}
	e.liveWorker(clock.Now(), "resize-image")
	if _, body := e.explain(key, x.ExecutionID); !strings.Contains(body, `"gates":[]`) {
		t.Errorf("with a worker claiming it: %s, want no gate", body)
	}

	later := clock.Now().Add(time.Hour)
	y := e.submit(key, `{"kind":"resize-image","run_at":"`+later.Format(time.RFC3339)+`"}`, http.StatusCreated)
	got, body = e.explain(key, y.ExecutionID)
	if got.Status != store.StatusScheduled || len(got.Gates) != 1 || got.Gates[0].Gate != store.GateRunAt ||
		got.Gates[0].RunAt == nil || !got.Gates[0].RunAt.Equal(later) {
		t.Errorf("scheduled: %s", body)
	}

	e.do("PUT", "/api/rate-limits/api", key, `{"rate":1,"per_seconds":60}`).want(http.StatusOK)
	sub := `{"kind":"resize-image","concurrency_key":"acct","concurrency_limit":1,"rate_key":"api"}`
	first := e.submit(key, sub, http.StatusCreated)
	second := e.submit(key, sub, http.StatusCreated)
	// Claim what is ready: x, then first (the key and the bucket then hold second).
	for range 2 {
		e.claimOne(key)
	}
	got, body = e.explain(key, second.ExecutionID)
	by := map[store.GateKind]explainGate{}
	for _, g := range got.Gates {
		by[g.Gate] = g
	}
	if c := by[store.GateConcurrencyKey]; c.Key != "acct" || c.Limit != 1 || c.Running != 1 ||
		len(c.Holders) != 1 || c.Holders[0] != first.ExecutionID {
		t.Errorf("concurrency key: %s", body)
	}
	if r := by[store.GateRateLimit]; r.Key != "api" || r.NextTokenAt == nil ||
		!r.NextTokenAt.Equal(clock.Now().Add(time.Minute)) {
		t.Errorf("rate limit: %s", body)
	}
	if len(got.Gates) != 2 {
		t.Errorf("gates: %s, want the key and the bucket", body)
	}

	got, body = e.explain(key, first.ExecutionID)
	if got.Status != store.StatusRunning || !strings.Contains(body, `"gates":[]`) {
		t.Errorf("running: %s", body)
	}
	// The admin reads any tenant's.
	if got, _ := e.explain(e.admin, second.ExecutionID); len(got.Gates) != 2 {
		t.Errorf("the admin reads %+v", got)
	}
}

// TestExplainWaiting: a flow waiting for a signal answers the signal and
// the wait's end; a sleep answers waiting_for null.
func TestExplainWaiting(t *testing.T) {
	t.Parallel()
	e, clock, key := flowEnv(t)
	x := e.submit(key, `{"kind":"flow"}`, http.StatusCreated)
	l := e.claimOne(key)
	e.suspendOn(key, l, `"step":"approval","signal":"approved","timeout_seconds":60`).want(http.StatusOK)
	got, body := e.explain(key, x.ExecutionID)
	if got.Status != store.StatusSuspended || len(got.Gates) != 1 || got.Gates[0].Gate != store.GateWaiting ||
		got.Gates[0].WaitingFor == nil || *got.Gates[0].WaitingFor != "approved" ||
		got.Gates[0].WakeAt == nil || !got.Gates[0].WakeAt.Equal(clock.Now().Add(time.Minute)) {
		t.Errorf("waiting: %s", body)
	}
}

// TestExplainOfAnotherTenant: another tenant's execution and a missing one
// are 404 not_found, as problem+json; explain changes nothing.
func TestExplainOfAnotherTenant(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	mine := e.tenant("acme")
	other := e.tenant("other")
	x := e.submit(mine, `{"kind":"echo"}`, http.StatusCreated)
	before := e.do("GET", "/api/executions/"+x.ExecutionID, mine, nil).want(http.StatusOK).body

	p := e.do("GET", "/api/executions/"+x.ExecutionID+"/explain", other, nil).problem(http.StatusNotFound, CodeNotFound)
	detailHas(t, p, x.ExecutionID)
	e.do("GET", "/api/executions/0193a6e4-7c1e-7b3a-9f1e-2d9c3e8a4b10/explain", mine, nil).problem(http.StatusNotFound, CodeNotFound)
	e.do("GET", "/api/executions/"+x.ExecutionID+"/explain", e.admin, nil, "Latch-Tenant", "other").
		problem(http.StatusNotFound, CodeNotFound)
	e.explain(mine, x.ExecutionID)
	e.do("GET", "/api/executions/"+x.ExecutionID+"/explain", "", nil).problem(http.StatusUnauthorized, CodeUnauthorized)

	after := e.do("GET", "/api/executions/"+x.ExecutionID, mine, nil).want(http.StatusOK).body
	if string(after) != string(before) {
		t.Errorf("explain changed the execution:\n%s\n%s", before, after)
	}
}
