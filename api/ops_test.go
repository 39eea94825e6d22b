package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

func TestHealthAndReady(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if r := e.do("GET", "/healthz", "", nil).want(http.StatusOK); string(r.body) != "{\"status\":\"ok\"}\n" {
		t.Fatalf("healthz: %s", r.body)
	}
	e.do("GET", "/readyz", "", nil).want(http.StatusOK)

	down := newEnv(t, func(c *Config) { c.Store = pingFails{c.Store} })
	r := down.do("GET", "/readyz", "", nil)
	r.problem(http.StatusServiceUnavailable, CodeUnavailable)
	down.do("GET", "/healthz", "", nil).want(http.StatusOK)
	if strings.Contains(string(r.body), "disk on fire") {
		t.Fatal("store error echoed")
	}
}

// pingFails is a store whose Ping fails.
type pingFails struct{ store.Store }

func (pingFails) Ping(context.Context) error { return errors.New("disk on fire") }

// getFails is a store whose Get fails with an internal error.
type getFails struct{ store.Store }

func (getFails) Get(context.Context, *store.GetParams) (*store.Execution, error) {
	return nil, errors.New("secret internal detail")
}

func TestInternalErrorsAreLoggedNotEchoed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.Store = getFails{c.Store} })
	key := e.tenant("acme")
	r := e.do("GET", "/api/executions/x", key, nil)
	p := r.problem(http.StatusInternalServerError, CodeInternal)
	if strings.Contains(string(r.body), "secret") || p.Detail != "internal error" {
		t.Fatalf("internal error body: %s", r.body)
	}
	if !strings.Contains(e.logs.String(), "secret internal detail") {
		t.Fatalf("internal error not logged: %s", e.logs.String())
	}
}

// While the store does not answer, a failed request is an outage to retry
// (503 unavailable with Retry-After), not an internal error; the cause is
// logged, not echoed.
func TestStoreOutageIsUnavailable(t *testing.T) {
	t.Parallel()
	var down atomic.Bool
	e := newEnv(t, func(c *Config) {
		c.Store = switchable{c.Store, &down}
	})
	key := e.tenant("acme")
	down.Store(true)
	r := e.do("GET", "/api/executions/x", key, nil)
	r.problem(http.StatusServiceUnavailable, CodeUnavailable)
	if r.header.Get("Retry-After") == "" || strings.Contains(string(r.body), "secret") {
		t.Fatalf("outage answer: %v %s", r.header, r.body)
	}
	if !strings.Contains(e.logs.String(), "secret internal detail") {
		t.Fatalf("the cause of the outage answer is not logged: %s", e.logs.String())
	}
}

// switchable is the real store until down is set; then reads fail and so
// does Ping, as with a store whose server is restarting. Authentication
// still goes through.
type switchable struct {
	store.Store
	down *atomic.Bool
}

func (s switchable) Get(ctx context.Context, p *store.GetParams) (*store.Execution, error) {
	if s.down.Load() {
		return getFails{}.Get(ctx, p)
	}
	return s.Store.Get(ctx, p)
}

func (s switchable) Ping(ctx context.Context) error {
	if s.down.Load() {
		return errors.New("connection refused")
	}
	return s.Store.Ping(ctx)
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.tenant("acme")
	e.submit(key, `{"kind":"echo","dedup_key":"a"}`, http.StatusCreated)
	e.submit(key, `{"kind":"echo","dedup_key":"a"}`, http.StatusOK)
	e.do("POST", "/api/executions", key, `{"kind":""}`).want(http.StatusBadRequest)
	e.do("GET", "/api/executions/nope", key, nil).want(http.StatusNotFound)
	e.do("POST", "/api/workers/claim", key, `{"worker_id":"w"}`).want(http.StatusOK)
	e.api.OnWorkerClaim()(3) // what in-process workers count
	r := e.do("GET", "/metrics", "", nil).want(http.StatusOK)
	body := string(r.body)
	for _, want := range []string{
		`latch_http_requests_total{code="201",route="POST /api/executions"} 1`,
		`latch_http_requests_total{code="200",route="POST /api/executions"} 1`,
		`latch_http_requests_total{code="400",route="POST /api/executions"} 1`,
		`latch_http_requests_total{code="404",route="GET /api/executions/{id}"} 1`,
		`latch_http_request_duration_seconds_bucket{route="POST /api/executions",le="+Inf"} 3`,
		`latch_submits_total{outcome="created"} 1`,
		`latch_submits_total{outcome="deduplicated"} 1`,
		`latch_submits_total{outcome="invalid_request"} 1`,
		`latch_leases_claimed_total{source="http"} 1`,
		`latch_leases_claimed_total{source="worker"} 3`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if e.api.Registry() == nil {
		t.Fatal("no registry")
	}
}

func TestRouting(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.tenant("acme")
	// Unknown paths.
	for _, c := range []struct{ method, path string }{
		{"GET", "/api/nothing"}, {"GET", "/api/schedules/a/b"}, {"GET", "/api/rate-limits"},
		{"GET", "/"}, {"GET", "/console/page"}, {"GET", "/api"},
	} {
		e.do(c.method, c.path, key, nil).problem(http.StatusNotFound, CodeNotFound)
	}
	// A known path with another method: 405 with Allow.
	r := e.do("PUT", "/api/executions", key, nil)
	r.problem(http.StatusMethodNotAllowed, CodeMethodNotAllowed)
	if allow := r.header.Get("Allow"); !strings.Contains(allow, "GET") || !strings.Contains(allow, "POST") {
		t.Fatalf("Allow %q", allow)
	}
	e.do("PUT", "/api/tenants/acme", e.admin, nil).problem(http.StatusMethodNotAllowed, CodeMethodNotAllowed)
	r = e.do("POST", "/api/schedules/nightly", key, nil)
	r.problem(http.StatusMethodNotAllowed, CodeMethodNotAllowed)
	if allow := r.header.Get("Allow"); !strings.Contains(allow, "PUT") || !strings.Contains(allow, "DELETE") {
		t.Fatalf("Allow %q", allow)
	}
	e.do("PATCH", "/api/rate-limits/k", key, nil).problem(http.StatusMethodNotAllowed, CodeMethodNotAllowed)
	e.do("POST", "/healthz", "", nil).problem(http.StatusMethodNotAllowed, CodeMethodNotAllowed)

	// The OpenAPI document is public.
	doc := e.do("GET", "/api/openapi.json", "", nil).want(http.StatusOK)
	if !strings.HasPrefix(doc.header.Get("Content-Type"), "application/json") || !strings.Contains(string(doc.body), `"openapi"`) {
		t.Fatalf("openapi: %s %.80s", doc.header.Get("Content-Type"), doc.body)
	}
}

func TestConsoleMount(t *testing.T) {
	t.Parallel()
	console := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/boom" {
			panic("console bug")
		}
		io.WriteString(w, "console "+r.URL.Path)
	})
	e := newEnv(t, func(c *Config) { c.Console = console })
	key := e.tenant("acme")
	if r := e.do("GET", "/", "", nil).want(http.StatusOK); string(r.body) != "console /" {
		t.Fatalf("console: %s", r.body)
	}
	if r := e.do("GET", "/executions/x", "", nil).want(http.StatusOK); string(r.body) != "console /executions/x" {
		t.Fatalf("console: %s", r.body)
	}
	// The API keeps its own paths, 404s and 405s.
	e.do("GET", "/api/nothing", key, nil).problem(http.StatusNotFound, CodeNotFound)
	e.do("GET", "/api/schedules", key, nil).want(http.StatusOK)
	e.do("PUT", "/api/executions", key, nil).problem(http.StatusMethodNotAllowed, CodeMethodNotAllowed)
	e.do("GET", "/healthz", "", nil).want(http.StatusOK)
	// A panic anywhere is a logged 500, not a dropped connection.
	e.do("GET", "/boom", "", nil).problem(http.StatusInternalServerError, CodeInternal)
	if !strings.Contains(e.logs.String(), "console bug") {
		t.Fatal("panic not logged")
	}
}

func TestCloseEndsWaits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.tenant("acme")
	x := e.submit(key, `{"kind":"echo"}`, http.StatusCreated)
	_, events := e.openStream("/api/executions/"+x.ExecutionID+"/events", key)
	nextEvent(t, events)
	claimed := make(chan *resp, 1)
	got := make(chan *resp, 1)
	go func() {
		claimed <- e.do("POST", "/api/workers/claim", key, `{"worker_id":"w","kinds":["none"],"wait_seconds":30}`)
	}()
	go func() { got <- e.do("GET", "/api/executions/"+x.ExecutionID+"?wait_seconds=60", key, nil) }()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	e.api.Close()
	e.api.Close() // idempotent
	var claim claimResponse
	(<-claimed).want(http.StatusOK).decode(&claim)
	if len(claim.Leases) != 0 {
		t.Fatal("claimed on close")
	}
	if st := (<-got).want(http.StatusOK).exec().Status; st != store.StatusQueued {
		t.Fatalf("status %s", st)
	}
	streamEnds(t, events)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Close took %s to end waits", d)
	}
	// Requests are still served.
	e.do("GET", "/api/executions/"+x.ExecutionID, key, nil).want(http.StatusOK)
}

// A store call that fails because its connection was reset is an outage to
// retry even when the store answers the ping that follows (the pool has
// reconnected by then): 503, not 500.
func TestLostStoreConnectionIsUnavailable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.Store = connReset{c.Store} })
	key := e.tenant("acme")
	r := e.do("GET", "/api/executions/x", key, nil)
	r.problem(http.StatusServiceUnavailable, CodeUnavailable)
	if r.header.Get("Retry-After") == "" {
		t.Fatalf("no Retry-After: %v", r.header)
	}
}

// connReset is a store whose Get fails as a reset connection does, wrapped
// as the drivers wrap it; its Ping succeeds.
type connReset struct{ store.Store }

func (connReset) Get(context.Context, *store.GetParams) (*store.Execution, error) {
	return nil, fmt.Errorf("postgres: get: %w", &net.OpError{Op: "write", Net: "tcp", Err: syscall.ECONNRESET})
}
