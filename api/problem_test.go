package api

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// TestProblemGolden answers one request per problem code and compares the
// status, the contract's headers and the body with testdata/problems/, so a
// change of the error contract shows up as a diff. Run with -update to
// accept a change.
func TestProblemGolden(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) {
		c.MaxPayloadBytes, c.MaxSchedulesPerTenant, c.MaxStreamsPerTenant = 100, 1, 1
		c.MinScheduleInterval = time.Minute
	})
	key := e.tenant("acme", `,"max_inflight":2`)
	e.submit(key, `{"kind":"echo","dedup_key":"k"}`, http.StatusCreated)
	e.submit(key, `{"kind":"echo","dedup_key":"q"}`, http.StatusCreated)
	l := e.claimOne(key)
	e.do("POST", "/api/executions/"+l.ExecutionID+"/complete", key, `{"lease_token":"`+l.LeaseToken+`"}`).want(http.StatusOK)
	running := e.submit(e.admin, `{"kind":"echo"}`, http.StatusCreated, "Latch-Tenant", "acme")
	e.do("PUT", "/api/schedules/nightly", key, `{"every":"1h","kind":"echo","overlap":"allow"}`).want(http.StatusCreated)
	_, stream := e.openStream("/api/executions/"+running.ExecutionID+"/events", key)
	nextEvent(t, stream) // holds acme's one stream
	off := e.tenant("off")
	e.do("PATCH", "/api/tenants/off", e.admin, `{"disabled":true}`).want(http.StatusOK)
	down := newEnv(t, func(c *Config) { c.Store = pingFails{c.Store} })
	broken := newEnv(t, func(c *Config) { c.Store = getFails{c.Store} })
	bkey := broken.tenant("acme")
	var outageOn atomic.Bool
	out := newEnv(t, func(c *Config) { c.Store = outage{c.Store, &outageOn} })
	okey := out.tenant("acme")
	outageOn.Store(true)
	low := newEnv(t, func(c *Config) { c.Store = lowFlowBounds{c.Store} })
	lkey := low.tenant("acme")
	low.submit(lkey, `{"kind":"flow"}`, http.StatusCreated)
	ll := low.claimOne(lkey)
	low.record(lkey, ll, `"name":"one"`).want(http.StatusOK)
	low.signal(lkey, ll.ExecutionID, "go", nil).want(http.StatusAccepted)
	few := newEnv(t, func(c *Config) { c.Store = fewSubscriptions{c.Store} })
	fkey := few.tenant("acme")
	few.do("PUT", "/api/subscriptions/first", fkey, `{"event":"e","kind":"k"}`).want(http.StatusCreated)

	for _, c := range []struct {
		name string
		send func() *resp
	}{
		{"unauthorized", func() *resp { return e.do("GET", "/api/executions", "", nil) }},
		{"forbidden", func() *resp { return e.do("POST", "/api/tenants", key, `{"name":"x"}`) }},
		{"tenant_disabled", func() *resp { return e.do("GET", "/api/executions", off, nil) }},
		{"not_found", func() *resp { return e.do("GET", "/api/executions/missing", key, nil) }},
		{"not_found_route", func() *resp { return e.do("GET", "/api/nothing", key, nil) }},
		{"not_found_schedule", func() *resp { return e.do("GET", "/api/schedules/ghost", key, nil) }},
		{"not_found_rate_limit", func() *resp { return e.do("GET", "/api/rate-limits/ghost", key, nil) }},
		{"invalid_request_field", func() *resp { return e.do("POST", "/api/executions", key, `{"kind":""}`) }},
		{"invalid_request_unknown_field", func() *resp { return e.do("POST", "/api/executions", key, `{"kind":"echo","kindd":1}`) }},
		{"invalid_request_type", func() *resp { return e.do("POST", "/api/executions", key, `{"kind":"echo","max_attempts":"3"}`) }},
		{"invalid_request_malformed", func() *resp { return e.do("POST", "/api/executions", key, `{"kind":"echo",}`) }},
		{"invalid_request_trailing", func() *resp { return e.do("POST", "/api/executions", key, `{"kind":"echo"}{}`) }},
		{"invalid_request_latch_tenant", func() *resp { return e.do("POST", "/api/executions", e.admin, `{"kind":"echo"}`) }},
		{"invalid_request_schedule_latch_tenant", func() *resp { return e.do("GET", "/api/schedules/nightly", e.admin, nil) }},
		{"invalid_request_cron", func() *resp { return e.do("PUT", "/api/schedules/s", key, `{"kind":"echo","cron":"61 * * * *"}`) }},
		{"invalid_request_every", func() *resp { return e.do("PUT", "/api/schedules/s", key, `{"kind":"echo","every":"500ms"}`) }},
		{"invalid_request_timezone", func() *resp {
			return e.do("PUT", "/api/schedules/s", key, `{"kind":"echo","cron":"@daily","timezone":"Mars/Olympus"}`)
		}},
		{"invalid_request_rate", func() *resp { return e.do("PUT", "/api/rate-limits/k", key, `{"rate":0,"per_seconds":1}`) }},
		{"payload_too_large", func() *resp {
			return e.do("POST", "/api/executions", key, `{"kind":"echo","payload":"`+strings.Repeat("x", 100)+`"}`)
		}},
		{"unsupported_media_type", func() *resp {
			return e.do("POST", "/api/executions", key, `{"kind":"echo"}`, "Content-Type", "text/plain")
		}},
		{"quota_exceeded", func() *resp { return e.do("POST", "/api/executions", key, `{"kind":"echo"}`) }},
		{"quota_exceeded_trigger", func() *resp { return e.do("POST", "/api/schedules/nightly/trigger", key, nil) }},
		{"too_many_requests", func() *resp { return e.do("GET", "/api/executions/"+running.ExecutionID+"/events", key, nil) }},
		{"schedule_limit", func() *resp { return e.do("PUT", "/api/schedules/another", key, `{"every":"1h","kind":"echo"}`) }},
		{"schedule_too_frequent", func() *resp {
			return e.do("PUT", "/api/schedules/nightly", key, `{"cron":"*/10 * * * * *","kind":"echo"}`)
		}},
		{"dedup_key_reused", func() *resp { return e.do("POST", "/api/executions", key, `{"kind":"other","dedup_key":"k"}`) }},
		{"tenant_exists", func() *resp { return e.do("POST", "/api/tenants", e.admin, `{"name":"acme"}`) }},
		{"not_terminal", func() *resp { return e.do("DELETE", "/api/executions/"+running.ExecutionID, key, nil) }},
		{"lease_lost", func() *resp {
			return e.do("POST", "/api/executions/"+l.ExecutionID+"/heartbeat", key, `{"lease_token":"`+l.LeaseToken+`"}`)
		}},
		{"not_active", func() *resp { return e.do("POST", "/api/executions/"+l.ExecutionID+"/signals/go", key, `{}`) }},
		{"too_many_steps", func() *resp { return low.record(lkey, ll, `"name":"two"`) }},
		{"signal_buffer_full", func() *resp { return low.signal(lkey, ll.ExecutionID, "go", nil) }},
		{"too_many_subscriptions", func() *resp { return few.do("PUT", "/api/subscriptions/second", fkey, `{"event":"e","kind":"k"}`) }},
		{"not_failed", func() *resp { return e.do("POST", "/api/executions/"+l.ExecutionID+"/retry", key, nil) }},
		{"method_not_allowed", func() *resp { return e.do("PUT", "/api/executions", key, nil) }},
		{"internal", func() *resp { return broken.do("GET", "/api/executions/x", bkey, nil) }},
		{"unavailable", func() *resp { return down.do("GET", "/readyz", "", nil) }},
		{"unavailable_store", func() *resp { return out.do("GET", "/api/executions/x", okey, nil) }},
		{"headers_too_large", func() *resp {
			return e.do("GET", "/api/executions", key, nil, "X-Filler", strings.Repeat("f", MaxHeaderBytes))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := c.send()
			var b strings.Builder
			fmt.Fprintf(&b, "HTTP %d\n", r.status)
			for _, h := range []string{"Content-Type", "Retry-After", "Allow", "WWW-Authenticate"} {
				if v := r.header.Get(h); v != "" {
					fmt.Fprintf(&b, "%s: %s\n", h, v)
				}
			}
			b.WriteString("\n")
			b.Write(r.body)
			golden(t, filepath.Join("testdata", "problems", c.name+".golden"), b.String())
		})
	}
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to create it)", err, t.Name())
	}
	if got != string(want) {
		t.Fatalf("%s differs:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestProblemFor(t *testing.T) {
	t.Parallel()
	for err, code := range map[error]Code{
		fmt.Errorf("x: %w", store.ErrNotFound):             CodeNotFound,
		fmt.Errorf("x: %w", store.ErrTenantExists):         CodeTenantExists,
		fmt.Errorf("x: %w", store.ErrQuotaExceeded):        CodeQuotaExceeded,
		fmt.Errorf("x: %w", store.ErrDedupKeyReused):       CodeDedupKeyReused,
		fmt.Errorf("x: %w", store.ErrLeaseLost):            CodeLeaseLost,
		fmt.Errorf("x: %w", store.ErrNotTerminal):          CodeNotTerminal,
		fmt.Errorf("x: %w", store.ErrTooManySteps):         CodeTooManySteps,
		fmt.Errorf("x: %w", store.ErrSignalBufferFull):     CodeSignalBufferFull,
		fmt.Errorf("x: %w", store.ErrInvalid):              CodeInvalidRequest,
		fmt.Errorf("x: %w", store.ErrTooManySubscriptions): CodeTooManySubscriptions,
		&http.MaxBytesError{Limit: 5}:                      CodePayloadTooLarge,
		fmt.Errorf("x: %w", store.ErrUnavailable):          CodeUnavailable,
		fmt.Errorf("x: %w", context.DeadlineExceeded):      CodeUnavailable,
		errors.New("boom"):                                 CodeInternal,
	} {
		p := problemFor(err)
		if p.Code != code || p.Status != codeInfo[code].status || p.Type != problemTypeBase+string(code) {
			t.Errorf("%v: %+v, want %s", err, p, code)
		}
	}
	if p := problemFor(errors.New("boom")); strings.Contains(p.Detail, "boom") {
		t.Error("internal error echoed")
	}
}
