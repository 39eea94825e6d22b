package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/latch-run/latch/store"
)

// outage is the real store until on is set; then its data calls fail as a
// backend fails during a restart: an error wrapping store.ErrUnavailable
// whose cause is no network error, while Ping (the server's own probe)
// already succeeds again. Keys still resolve, so requests get past
// authentication.
type outage struct {
	store.Store
	on *atomic.Bool
}

var errRestart = fmt.Errorf("postgres: %w: %w", store.ErrUnavailable,
	errors.New("FATAL: terminating connection due to administrator command (SQLSTATE 57P01)"))

func (o outage) Admit(ctx context.Context, p *store.AdmitParams) (*store.AdmitResult, error) {
	if o.on.Load() {
		return nil, errRestart
	}
	return o.Store.Admit(ctx, p)
}

func (o outage) Get(ctx context.Context, p *store.GetParams) (*store.Execution, error) {
	if o.on.Load() {
		return nil, errRestart
	}
	return o.Store.Get(ctx, p)
}

func (o outage) List(ctx context.Context, p *store.ListParams) (*store.ListResult, error) {
	if o.on.Load() {
		return nil, errRestart
	}
	return o.Store.List(ctx, p)
}

func (o outage) Claim(ctx context.Context, p *store.ClaimParams) (*store.ClaimResult, error) {
	if o.on.Load() {
		return nil, errRestart
	}
	return o.Store.Claim(ctx, p)
}

func (o outage) FireSchedule(ctx context.Context, p *store.FireScheduleParams) (*store.FireScheduleResult, error) {
	if o.on.Load() {
		return nil, errRestart
	}
	return o.Store.FireSchedule(ctx, p)
}

// TestStoreErrUnavailableIs503: whatever the call, a store error wrapping
// store.ErrUnavailable is a 503 unavailable with Retry-After — never a 500 —
// even when the store answers a ping again by the time the error is
// handled.
func TestStoreErrUnavailableIs503(t *testing.T) {
	t.Parallel()
	var on atomic.Bool
	e := newEnv(t, func(c *Config) { c.Store = outage{c.Store, &on} })
	key := e.tenant("acme")
	e.putSchedule(key, "s", `{"every":"1h","kind":"echo"}`, http.StatusCreated)
	on.Store(true)
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/api/executions", `{"kind":"echo","dedup_key":"k"}`},
		{"POST", "/api/executions/batch", `{"items":[{"kind":"echo"}]}`},
		{"GET", "/api/executions/00000000-0000-0000-0000-000000000000", ""},
		{"GET", "/api/executions", ""},
		{"POST", "/api/workers/claim", `{"worker_id":"w"}`},
		{"POST", "/api/schedules/s/trigger", ""},
	} {
		var body any
		if c.body != "" {
			body = c.body
		}
		r := e.do(c.method, c.path, key, body)
		r.problem(http.StatusServiceUnavailable, CodeUnavailable)
		if n, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || n < 1 {
			t.Errorf("%s %s: Retry-After %q", c.method, c.path, r.header.Get("Retry-After"))
		}
	}
}
