package api

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latch-run/latch/engine"
)

// runSeries reads latch_runs_total and the count and sum of
// latch_run_duration_seconds for kind and outcome.
func runSeries(t *testing.T, s *Server, kind, outcome string) (runs float64, count uint64, sum float64) {
	t.Helper()
	mfs, err := s.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	match := func(labels map[string]string) bool { return labels["kind"] == kind && labels["outcome"] == outcome }
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if !match(labels) {
				continue
			}
			switch mf.GetName() {
			case "latch_runs_total":
				runs = m.GetCounter().GetValue()
			case "latch_run_duration_seconds":
				count, sum = m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
			}
		}
	}
	return runs, count, sum
}

// The attempts HTTP workers end count in the runs series with the outcome
// an in-process worker's would have, their run time from the claim to the
// call; in-process workers' runs come through OnWorkerRun into the same
// series.
func TestRunsCountHTTPWorkers(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	e := newEnv(t, func(c *Config) { c.Now = clock })
	key := e.tenant("acme")
	for range 4 {
		e.do("POST", "/api/executions", key, `{"kind":"ext"}`).want(http.StatusCreated)
	}
	var claimed claimResponse
	e.do("POST", "/api/workers/claim", key, `{"worker_id":"w","max":4}`).want(http.StatusOK).decode(&claimed)
	if len(claimed.Leases) != 4 {
		t.Fatalf("claimed %d, want 4", len(claimed.Leases))
	}
	l := claimed.Leases
	token := func(i int) string { return `{"lease_token":"` + l[i].LeaseToken + `"` }
	advance(3 * time.Second)
	e.do("POST", "/api/executions/"+l[0].ExecutionID+"/complete", key, token(0)+`}`).want(http.StatusOK)
	e.do("POST", "/api/executions/"+l[1].ExecutionID+"/fail", key, token(1)+`,"error":"x","retry_after_seconds":60}`).want(http.StatusOK)
	e.do("POST", "/api/executions/"+l[2].ExecutionID+"/fail", key, token(2)+`,"error":"x","retry":false}`).want(http.StatusOK)
	e.do("POST", "/api/executions/"+l[3].ExecutionID+"/cancel", key, nil).want(http.StatusOK)
	e.do("POST", "/api/executions/"+l[3].ExecutionID+"/complete", key, token(3)+`}`).want(http.StatusOK)
	// A repeated complete is refused (lease lost) and not counted again.
	e.do("POST", "/api/executions/"+l[0].ExecutionID+"/complete", key, token(0)+`}`).want(http.StatusConflict)

	e.api.OnWorkerRun()("ext", string(engine.OutcomeSucceeded), time.Second)

	for _, c := range []struct {
		outcome string
		runs    float64
		sum     float64
	}{
		{"succeeded", 2, 4}, // 3s over HTTP, 1s in-process
		{"retried", 1, 3},
		{"failed", 1, 3},
		{"cancelled", 1, 3},
	} {
		runs, count, sum := runSeries(t, e.api, "ext", c.outcome)
		if runs != c.runs || count != uint64(c.runs) || sum != c.sum {
			t.Errorf("%s: runs %g, durations %d summing %gs; want %g, %g, %gs", c.outcome, runs, count, sum,
				c.runs, c.runs, c.sum)
		}
	}
}

// The outcomes of HTTP workers' runs are named as the engine names its
// in-process workers' (the binary passes engine.Outcome as it is), so one
// series counts both.
func TestRunOutcomesAreTheEngines(t *testing.T) {
	for name, eng := range map[string]engine.Outcome{
		outcomeSucceeded: engine.OutcomeSucceeded,
		outcomeRetried:   engine.OutcomeRetried,
		outcomeFailed:    engine.OutcomeFailed,
		outcomeCancelled: engine.OutcomeCancelled,
		outcomeSuspended: engine.OutcomeSuspended,
	} {
		if name != string(eng) {
			t.Errorf("the API counts %q where the engine counts %q", name, eng)
		}
	}
}

// With a metrics token, /metrics answers only a request bearing it: the
// series name tenants' queues and kinds.
func TestMetricsToken(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MetricsToken = "s3cret-metrics-token" })
	key := e.tenant("acme")
	e.do("POST", "/api/executions", key, `{"kind":"echo","queue":"acme-private-q"}`).want(http.StatusCreated)
	for _, auth := range []string{"", "wrong", key, e.admin} {
		r := e.do("GET", "/metrics", auth, nil)
		r.problem(http.StatusUnauthorized, CodeUnauthorized)
		if strings.Contains(string(r.body), "acme-private-q") || r.header.Get("WWW-Authenticate") == "" {
			t.Errorf("key %q: %s", auth, r.body)
		}
	}
	r := e.do("GET", "/metrics", "s3cret-metrics-token", nil).want(http.StatusOK)
	if !strings.Contains(string(r.body), "latch_") {
		t.Errorf("metrics with the token: %.200s", r.body)
	}
	// Without a token, /metrics is open, as before.
	open := newEnv(t)
	open.do("GET", "/metrics", "", nil).want(http.StatusOK)
}
