package api

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

func TestWorkerLifecycle(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := &fakeClock{t: now}
	e := newEnv(t, func(c *Config) { c.Now = clock.Now })
	key := e.tenant("acme")
	x := e.submit(key, `{"kind":"echo","payload":{"a":1},"max_attempts":2,"timeout_seconds":7}`, http.StatusCreated)

	var claim claimResponse
	r := e.do("POST", "/api/workers/claim", key, `{"worker_id":"w1","lease_seconds":60}`).want(http.StatusOK)
	r.decode(&claim)
	if len(claim.Leases) != 1 {
		t.Fatalf("claim: %s", r.body)
	}
	l := claim.Leases[0]
	if l.ExecutionID != x.ExecutionID || l.Kind != "echo" || string(l.Payload) != `{"a":1}` || l.Attempt != 1 ||
		l.LeaseToken == "" || !l.LeaseExpiresAt.Equal(now.Add(60*time.Second)) || l.TimeoutSeconds != 7 || l.Tenant != "acme" {
		t.Fatalf("lease: %s", r.body)
	}
	// Nothing else to claim.
	e.do("POST", "/api/workers/claim", key, `{"worker_id":"w2"}`).want(http.StatusOK).decode(&claim)
	if len(claim.Leases) != 0 {
		t.Fatal("claimed a running execution twice")
	}

	clock.add(10 * time.Second)
	var hb heartbeatResponse
	e.do("POST", "/api/executions/"+x.ExecutionID+"/heartbeat", key, `{"lease_token":"`+l.LeaseToken+`","lease_seconds":120}`).want(http.StatusOK).decode(&hb)
	if !hb.LeaseExpiresAt.Equal(now.Add(130*time.Second)) || hb.CancelRequested {
		t.Fatalf("heartbeat: %+v", hb)
	}

	// Fail with an explicit retry delay: scheduled again at now+30s.
	f := e.do("POST", "/api/executions/"+x.ExecutionID+"/fail", key,
		`{"lease_token":"`+l.LeaseToken+`","error":"boom","retry_after_seconds":30}`).want(http.StatusOK).exec()
	if f.Status != store.StatusScheduled || *f.Error != "boom" || !f.RunAt.Equal(clock.Now().Add(30*time.Second)) {
		t.Fatalf("after fail: %+v", f)
	}
	// The old token is dead.
	for _, c := range []struct{ op, body string }{
		{"heartbeat", `{"lease_token":"` + l.LeaseToken + `"}`},
		{"complete", `{"lease_token":"` + l.LeaseToken + `"}`},
		{"fail", `{"lease_token":"` + l.LeaseToken + `","error":"x"}`},
		{"release", `{"lease_token":"` + l.LeaseToken + `"}`},
	} {
		e.do("POST", "/api/executions/"+x.ExecutionID+"/"+c.op, key, c.body).problem(http.StatusConflict, CodeLeaseLost)
	}
	// Not claimable before its run_at; claimable after.
	e.do("POST", "/api/workers/claim", key, `{"worker_id":"w1"}`).want(http.StatusOK).decode(&claim)
	if len(claim.Leases) != 0 {
		t.Fatal("claimed before retry delay")
	}
	clock.add(31 * time.Second)
	l2 := e.claimOne(key)
	if l2.Attempt != 2 || l2.LeaseToken == l.LeaseToken {
		t.Fatalf("second lease: %+v", l2)
	}
	// Last attempt fails for good.
	f = e.do("POST", "/api/executions/"+x.ExecutionID+"/fail", key, `{"lease_token":"`+l2.LeaseToken+`","error":"again"}`).want(http.StatusOK).exec()
	if f.Status != store.StatusFailed || f.FinishedAt == nil {
		t.Fatalf("after last fail: %+v", f)
	}
	if e.inflight("acme") != 0 {
		t.Fatal("failed execution holds quota")
	}
}

func TestWorkerFailBackoffAndNoRetry(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	e := newEnv(t, func(c *Config) { c.Now = clock.Now })
	key := e.tenant("acme")
	e.submit(key, `{"kind":"echo"}`, http.StatusCreated)
	l := e.claimOne(key)
	// Default: backoff of attempt 1, in [0.5s, 1s].
	f := e.do("POST", "/api/executions/"+l.ExecutionID+"/fail", key, `{"lease_token":"`+l.LeaseToken+`","error":"x"}`).want(http.StatusOK).exec()
	d := f.RunAt.Sub(clock.Now())
	if f.Status != store.StatusScheduled || d < 500*time.Millisecond || d > time.Second {
		t.Fatalf("backoff: %s after %s", f.Status, d)
	}
	clock.add(time.Second)
	l = e.claimOne(key)
	f = e.do("POST", "/api/executions/"+l.ExecutionID+"/fail", key, `{"lease_token":"`+l.LeaseToken+`","error":"fatal","retry":false}`).want(http.StatusOK).exec()
	if f.Status != store.StatusFailed || f.Attempt != 2 {
		t.Fatalf("retry false: %+v", f)
	}
	// A long error is cut, not refused.
	e.submit(key, `{"kind":"echo"}`, http.StatusCreated)
	l = e.claimOne(key)
	long := strings.Repeat("e", 100<<10)
	f = e.do("POST", "/api/executions/"+l.ExecutionID+"/fail", key, `{"lease_token":"`+l.LeaseToken+`","error":"`+long+`","retry":false}`).want(http.StatusOK).exec()
	if len(*f.Error) != store.MaxErrorBytes {
		t.Fatalf("error of %d bytes stored as %d", len(long), len(*f.Error))
	}
}

func TestWorkerClaimScope(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acme, other := e.tenant("acme"), e.tenant("other")
	e.submit(acme, `{"kind":"a","queue":"q1"}`, http.StatusCreated)
	e.submit(acme, `{"kind":"b","queue":"q2"}`, http.StatusCreated)
	e.submit(other, `{"kind":"a","queue":"q1"}`, http.StatusCreated)

	var claim claimResponse
	e.do("POST", "/api/workers/claim", acme, `{"worker_id":"w","max":10,"kinds":["a"]}`).want(http.StatusOK).decode(&claim)
	if len(claim.Leases) != 1 || claim.Leases[0].Tenant != "acme" || claim.Leases[0].Kind != "a" {
		t.Fatalf("acme kinds=[a]: %+v", claim.Leases)
	}
	e.do("POST", "/api/workers/claim", e.admin, `{"worker_id":"w","max":10,"queues":["q2"]}`, "Latch-Tenant", "other").want(http.StatusOK).decode(&claim)
	if len(claim.Leases) != 0 {
		t.Fatalf("admin as other, queue q2: %+v", claim.Leases)
	}
	e.do("POST", "/api/workers/claim", e.admin, `{"worker_id":"w","max":10}`).want(http.StatusOK).decode(&claim)
	if len(claim.Leases) != 2 {
		t.Fatalf("admin claims %d, want 2", len(claim.Leases))
	}
	tenants := map[string]bool{}
	for _, l := range claim.Leases {
		tenants[l.Tenant] = true
	}
	if !tenants["acme"] || !tenants["other"] {
		t.Fatalf("admin claimed from %v", tenants)
	}
	// The admin finishes another tenant's work without Latch-Tenant.
	l := claim.Leases[0]
	e.do("POST", "/api/executions/"+l.ExecutionID+"/complete", e.admin, `{"lease_token":"`+l.LeaseToken+`","result":[1, 2]}`).want(http.StatusOK)
}

func TestWorkerClaimWaitWakesOnSubmit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.PollInterval = time.Hour }) // only the notifier wakes
	key := e.tenant("acme")
	done := make(chan *resp, 1)
	start := time.Now()
	go func() { done <- e.do("POST", "/api/workers/claim", key, `{"worker_id":"w","wait_seconds":20}`) }()
	time.Sleep(100 * time.Millisecond) // let the claim start waiting; it must wake either way
	x := e.submit(key, `{"kind":"echo"}`, http.StatusCreated)
	var claim claimResponse
	(<-done).want(http.StatusOK).decode(&claim)
	if len(claim.Leases) != 1 || claim.Leases[0].ExecutionID != x.ExecutionID {
		t.Fatalf("long poll claimed %+v", claim.Leases)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("long poll took %s", d)
	}
	// Nothing to claim: it answers empty after the wait.
	start = time.Now()
	e.do("POST", "/api/workers/claim", key, `{"worker_id":"w","wait_seconds":1}`).want(http.StatusOK).decode(&claim)
	if len(claim.Leases) != 0 || time.Since(start) < time.Second {
		t.Fatalf("empty long poll: %+v after %s", claim.Leases, time.Since(start))
	}
}

func TestWorkerInvalid(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.MaxPayloadBytes = 100 })
	key := e.tenant("acme")
	e.submit(key, `{"kind":"echo"}`, http.StatusCreated)
	for body, field := range map[string]string{
		`{}`:                                     "worker_id",
		`{"worker_id":""}`:                       "worker_id",
		`{"worker_id":7}`:                        "worker_id",
		`{"worker_id":"w","max":0}`:              "max",
		`{"worker_id":"w","max":101}`:            "max",
		`{"worker_id":"w","lease_seconds":0}`:    "lease_seconds",
		`{"worker_id":"w","lease_seconds":3601}`: "lease_seconds",
		`{"worker_id":"w","wait_seconds":31}`:    "wait_seconds",
		`{"worker_id":"w","queues":"q"}`:         "queues",
		`{"worker_id":"w","queues":["a b"]}`:     "queues[0]",
		`{"worker_id":"w","kinds":[""]}`:         "kinds[0]",
		`{"worker_id":"w","tenant":"x"}`:         "tenant",
	} {
		p := e.do("POST", "/api/workers/claim", key, body).problem(http.StatusBadRequest, CodeInvalidRequest)
		detailHas(t, p, field)
	}
	if e.inflight("acme") != 1 {
		t.Fatal("refused claims changed state")
	}
	l := e.claimOne(key)
	id := l.ExecutionID
	tok := `"lease_token":"` + l.LeaseToken + `"`
	for _, c := range []struct{ op, body, field string }{
		{"heartbeat", `{}`, "lease_token"},
		{"heartbeat", `{"lease_token":""}`, "lease_token"},
		{"heartbeat", `{` + tok + `,"lease_seconds":0}`, "lease_seconds"},
		{"complete", `{` + tok + `,"result":1,"extra":1}`, "extra"},
		{"fail", `{` + tok + `}`, "error"},
		{"fail", `{` + tok + `,"error":"x","retry":"no"}`, "retry"},
		{"fail", `{` + tok + `,"error":"x","retry_after_seconds":-1}`, "retry_after_seconds"},
		{"release", `{}`, "lease_token"},
		{"release", `{` + tok + `,"unstarted":"yes"}`, "unstarted"},
		{"release", `{` + tok + `,"extra":1}`, "extra"},
	} {
		p := e.do("POST", "/api/executions/"+id+"/"+c.op, key, c.body).problem(http.StatusBadRequest, CodeInvalidRequest)
		detailHas(t, p, c.field)
	}
	e.do("POST", "/api/executions/"+id+"/complete", key, `{`+tok+`,"result":"`+strings.Repeat("x", 101)+`"}`).
		problem(http.StatusRequestEntityTooLarge, CodePayloadTooLarge)
	// Still running, lease intact.
	if x := e.do("GET", "/api/executions/"+id, key, nil).want(http.StatusOK).exec(); x.Status != store.StatusRunning {
		t.Fatalf("after refused calls: %s", x.Status)
	}
	e.do("POST", "/api/executions/"+id+"/complete", key, `{`+tok+`}`).want(http.StatusOK)
}

// fakeClock is a settable Config.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestWorkerUnknownExecution(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.tenant("acme")
	for _, id := range []string{"nope", strings.Repeat("x", 200)} {
		e.do("POST", "/api/executions/"+id+"/heartbeat", key, `{"lease_token":"t"}`).problem(http.StatusConflict, CodeLeaseLost)
		e.do("POST", "/api/executions/"+id+"/complete", key, `{"lease_token":"t"}`).problem(http.StatusConflict, CodeLeaseLost)
		e.do("POST", "/api/executions/"+id+"/fail", key, `{"lease_token":"t","error":"x"}`).problem(http.StatusConflict, CodeLeaseLost)
		e.do("POST", "/api/executions/"+id+"/release", key, `{"lease_token":"t"}`).problem(http.StatusConflict, CodeLeaseLost)
	}
}
