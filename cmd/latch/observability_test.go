package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/sqlite"
)

// startStoppable runs latch serve on the SQLite file db with args; stop
// shuts it down (and is called at the test's end if the test did not).
func startStoppable(t *testing.T, db string, args ...string) (base string, stop func()) {
	t.Helper()
	t.Setenv("LATCH_ADMIN_KEY", testAdminKey)
	cfg, err := serveFlags(append([]string{"--addr", "127.0.0.1:0", "--store", "sqlite:" + db}, args...))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, io.Discard, io.Discard, func(a net.Addr) { addr <- a }) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}
	t.Cleanup(stop)
	select {
	case a := <-addr:
		return "http://" + a.String(), stop
	case err := <-done:
		stopped = true
		t.Fatalf("serve: %v", err)
	}
	return "", nil
}

type claimed struct {
	Leases []struct {
		ExecutionID string `json:"execution_id"`
		LeaseToken  string `json:"lease_token"`
		Queue       string `json:"queue"`
	} `json:"leases"`
}

// submitID submits body and returns the execution's id.
func submitID(t *testing.T, base, key, body string) string {
	t.Helper()
	var e struct {
		ID string `json:"execution_id"`
	}
	call(t, base, "POST", "/api/executions", key, body, http.StatusCreated, &e)
	return e.ID
}

// waitStatus long-polls an execution until it has status want.
func waitStatus(t *testing.T, base, key, id, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var e struct {
			Status string `json:"status"`
		}
		call(t, base, "GET", "/api/executions/"+id+"?wait_seconds=1", key, "", http.StatusOK, &e)
		if e.Status == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("execution %s is %s after 20s, want %s", id, e.Status, want)
		}
	}
}

// documentedSeries are the series docs/observability.md lists in its
// tables (the first column's `latch_...` names).
func documentedSeries(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../../docs/observability.md")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(latch_[a-z_]+)`").FindAllStringSubmatch(string(data), -1) {
		names = append(names, m[1])
	}
	if len(names) < 15 {
		t.Fatalf("docs/observability.md lists %d series; the table was not found", len(names))
	}
	return names
}

// seriesName is the metric family of a sample name (a histogram's
// _bucket, _count and _sum are its family's).
func seriesName(sample string) string {
	name, _, _ := strings.Cut(sample, "{")
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && (strings.HasSuffix(base, "_seconds") || base == "latch_execution_attempts") {
			return base
		}
	}
	return name
}

// Every series docs/observability.md names is served by a latch serve
// that did real work — in-process runs, HTTP runs that completed, failed
// with and without a retry, a rate-limit deferral, a concurrency key at
// its limit, suspended flows, signals, a rescue — with the value that
// work implies; the Grafana dashboard queries only series served; and the
// server's reports in the store count the starts, failures and workers.
func TestServeObservability(t *testing.T) {
	db := testdb.SQLite(t)
	base, stop := startStoppable(t, db, "--workers", "3", "--rescue-interval", "100ms", "--shutdown-grace", "3s")
	key := newTenant(t, base, testAdminKey)
	call(t, base, "PUT", "/api/rate-limits/slow", key, `{"rate":1,"per_seconds":3600,"burst":1}`, http.StatusOK, nil)

	// In-process: two echoes, and two rate-limited ones, the second
	// deferred an hour.
	var inProcess []string
	for _, body := range []string{
		`{"kind":"echo","payload":{"n":1}}`,
		`{"kind":"echo","payload":{"n":2}}`,
		`{"kind":"echo","queue":"rl","rate_key":"slow","payload":{"n":3}}`,
	} {
		inProcess = append(inProcess, submitID(t, base, key, body))
	}
	for _, id := range inProcess {
		waitStatus(t, base, key, id, "succeeded")
	}
	deferred := submitID(t, base, key, `{"kind":"echo","queue":"rl","rate_key":"slow","payload":{"n":4}}`)
	waitStatus(t, base, key, deferred, "scheduled")

	// Over HTTP: one completes, one fails with a retry an hour later, one
	// fails for good.
	for range 3 {
		submitID(t, base, key, `{"kind":"external","queue":"ext"}`)
	}
	var c claimed
	call(t, base, "POST", "/api/workers/claim", key, `{"worker_id":"ext-worker","queues":["ext"],"max":3}`, http.StatusOK, &c)
	if len(c.Leases) != 3 {
		t.Fatalf("claimed %d in ext, want 3", len(c.Leases))
	}
	l := c.Leases
	call(t, base, "POST", "/api/executions/"+l[0].ExecutionID+"/complete", key,
		`{"lease_token":"`+l[0].LeaseToken+`","result":{"ok":true}}`, http.StatusOK, nil)
	call(t, base, "POST", "/api/executions/"+l[1].ExecutionID+"/fail", key,
		`{"lease_token":"`+l[1].LeaseToken+`","error":"busy","retry_after_seconds":3600}`, http.StatusOK, nil)
	call(t, base, "POST", "/api/executions/"+l[2].ExecutionID+"/fail", key,
		`{"lease_token":"`+l[2].LeaseToken+`","error":"bad","retry":false}`, http.StatusOK, nil)

	// Two flows wait for a signal "go"; one gets another signal
	// (buffered), the other gets "go" (delivered) and is ready again.
	for range 2 {
		submitID(t, base, key, `{"kind":"flowy","queue":"flows"}`)
	}
	call(t, base, "POST", "/api/workers/claim", key, `{"worker_id":"ext-worker","queues":["flows"],"max":2}`, http.StatusOK, &c)
	if len(c.Leases) != 2 {
		t.Fatalf("claimed %d in flows, want 2", len(c.Leases))
	}
	for _, l := range c.Leases {
		call(t, base, "POST", "/api/executions/"+l.ExecutionID+"/suspend", key,
			`{"lease_token":"`+l.LeaseToken+`","step":"wait","signal":"go"}`, http.StatusOK, nil)
	}
	call(t, base, "POST", "/api/executions/"+c.Leases[0].ExecutionID+"/signals/later", key, `{}`, http.StatusAccepted, nil)
	call(t, base, "POST", "/api/executions/"+c.Leases[1].ExecutionID+"/signals/go", key, `{}`, http.StatusAccepted, nil)

	// A concurrency key at its limit: one runs (claimed over HTTP and
	// held), the other waits, ready.
	for range 2 {
		submitID(t, base, key, `{"kind":"external","queue":"held","concurrency_key":"one"}`)
	}
	call(t, base, "POST", "/api/workers/claim", key, `{"worker_id":"ext-worker","queues":["held"],"max":2}`, http.StatusOK, &c)
	if len(c.Leases) != 1 {
		t.Fatalf("claimed %d in held, want 1 (the concurrency key's limit)", len(c.Leases))
	}

	// A lease left to expire with no attempt left: rescued, failed.
	lost := submitID(t, base, key, `{"kind":"external","queue":"lost","max_attempts":1}`)
	call(t, base, "POST", "/api/workers/claim", key,
		`{"worker_id":"gone","queues":["lost"],"max":1,"lease_seconds":1}`, http.StatusOK, &c)
	if len(c.Leases) != 1 {
		t.Fatalf("claimed %d in lost, want 1", len(c.Leases))
	}
	waitStatus(t, base, key, lost, "failed")

	want := map[string]float64{
		`latch_http_requests_in_flight`:                                         1, // the scrape itself
		`latch_submits_total{outcome="created"}`:                                12,
		`latch_leases_claimed_total{source="http"}`:                             7,
		`latch_leases_claimed_total{source="worker"}`:                           3,
		`latch_runs_total{kind="echo",outcome="succeeded"}`:                     3,
		`latch_runs_total{kind="external",outcome="succeeded"}`:                 1,
		`latch_runs_total{kind="external",outcome="retried"}`:                   1,
		`latch_runs_total{kind="external",outcome="failed"}`:                    1,
		`latch_runs_total{kind="flowy",outcome="suspended"}`:                    2,
		`latch_run_duration_seconds_count{kind="flowy",outcome="suspended"}`:    2,
		`latch_run_duration_seconds_count{kind="echo",outcome="succeeded"}`:     3,
		`latch_run_duration_seconds_count{kind="external",outcome="succeeded"}`: 1,
		`latch_run_duration_seconds_count{kind="external",outcome="retried"}`:   1,
		`latch_run_duration_seconds_count{kind="external",outcome="failed"}`:    1,
		`latch_rescues_total{outcome="requeued"}`:                               0,
		`latch_rescues_total{outcome="failed"}`:                                 1,
		`latch_rescues_total{outcome="cancelled"}`:                              0,
		`latch_schedule_ticks_total{outcome="admitted"}`:                        0,
		`latch_retries_total{kind="external"}`:                                  1,
		`latch_rate_limit_deferrals_total`:                                      1,
		`latch_suspends_total{kind="flowy"}`:                                    2,
		`latch_signals_total{outcome="buffered"}`:                               1,
		`latch_signals_total{outcome="delivered"}`:                              1,
		`latch_store_up`:                                                                 1,
		`latch_queue_ready{queue="flows"}`:                                               1,
		`latch_queue_ready{queue="held"}`:                                                1,
		`latch_queue_ready{queue="rl"}`:                                                  0,
		`latch_queue_ready{queue="ext"}`:                                                 0,
		`latch_executions{queue="ext",status="scheduled"}`:                               1,
		`latch_executions{queue="rl",status="scheduled"}`:                                1,
		`latch_executions{queue="flows",status="suspended"}`:                             1,
		`latch_executions{queue="held",status="running"}`:                                1,
		`latch_executions{queue="held",status="suspended"}`:                              0,
		`latch_concurrency_keys_at_limit`:                                                1,
		`latch_queue_oldest_ready_age_seconds{queue="rl"}`:                               0,
		`latch_store_operation_duration_seconds_count{operation="Complete",result="ok"}`: 4,
		`latch_store_operation_duration_seconds_count{operation="Fail",result="ok"}`:     2,
		`latch_store_operation_duration_seconds_count{operation="Suspend",result="ok"}`:  2,
		`latch_store_operation_duration_seconds_count{operation="Signal",result="ok"}`:   2,
		// Executions a worker ended: attempts and submit to finish (the
		// rescued one is not a worker's end).
		`latch_execution_attempts_count{kind="echo",status="succeeded"}`:             3,
		`latch_execution_attempts_sum{kind="echo",status="succeeded"}`:               3,
		`latch_execution_attempts_count{kind="external",status="succeeded"}`:         1,
		`latch_execution_attempts_count{kind="external",status="failed"}`:            1,
		`latch_execution_duration_seconds_count{kind="echo",status="succeeded"}`:     3,
		`latch_execution_duration_seconds_count{kind="external",status="succeeded"}`: 1,
		`latch_execution_duration_seconds_count{kind="external",status="failed"}`:    1,
		// Every lease handed out, in-process and over HTTP, by queue (the
		// deferred one is not claimed).
		`latch_claim_wait_seconds_count{queue="default"}`: 2,
		`latch_claim_wait_seconds_count{queue="rl"}`:      1,
		`latch_claim_wait_seconds_count{queue="ext"}`:     3,
		`latch_claim_wait_seconds_count{queue="flows"}`:   2,
		`latch_claim_wait_seconds_count{queue="held"}`:    1,
		`latch_claim_wait_seconds_count{queue="lost"}`:    1,
	}
	// Series whose value the work bounds but does not fix.
	atLeast := map[string]float64{
		`latch_http_requests_total{code="200",route="POST /api/workers/claim"}`:              4,
		`latch_http_request_duration_seconds_count{route="POST /api/executions"}`:            12,
		`latch_store_operation_duration_seconds_count{operation="Claim",result="ok"}`:        4,
		`latch_store_operation_duration_seconds_count{operation="ReportServer",result="ok"}`: 1,
		`latch_queue_oldest_ready_age_seconds{queue="held"}`:                                 0,
	}
	got := scrape(t, base)
	var wrong []string
	// The build, whatever its version: one series at 1, built by this Go.
	builds := 0
	for sample, v := range got {
		if seriesName(sample) == "latch_build_info" {
			builds++
			if v != 1 || !strings.Contains(sample, `goversion="`+runtime.Version()+`"`) {
				wrong = append(wrong, fmt.Sprintf("%s = %g, want 1 with goversion %s", sample, v, runtime.Version()))
			}
		}
	}
	if builds != 1 {
		wrong = append(wrong, fmt.Sprintf("latch_build_info: %d series, want 1", builds))
	}
	for series, v := range want {
		if g, ok := got[series]; !ok || g != v {
			wrong = append(wrong, fmt.Sprintf("%s = %g (present %v), want %g", series, g, ok, v))
		}
	}
	for series, v := range atLeast {
		if g, ok := got[series]; !ok || g < v {
			wrong = append(wrong, fmt.Sprintf("%s = %g (present %v), want at least %g", series, g, ok, v))
		}
	}
	if age := got[`latch_queue_oldest_ready_age_seconds{queue="held"}`]; age > 60 {
		wrong = append(wrong, fmt.Sprintf("the held execution has been ready %gs, more than the test ran", age))
	}
	// The queue gauges read the store at the scrape, maybe after the
	// latency histogram was collected: the next scrape, within the
	// gauges' cache, shows that one read and no other.
	queueReads := `latch_store_operation_duration_seconds_count{operation="QueueStats",result="ok"}`
	if n := scrape(t, base)[queueReads]; n != 1 {
		wrong = append(wrong, fmt.Sprintf("%s = %g after two scrapes, want 1 (the gauges' cache)", queueReads, n))
	}
	sort.Strings(wrong)
	if len(wrong) > 0 {
		t.Errorf("/metrics after the work:\n%s", strings.Join(wrong, "\n"))
	}

	// The documentation and what is served agree: every documented series
	// is served and checked above, every latch_ series served is
	// documented.
	documented := documentedSeries(t)
	served := map[string]bool{}
	for sample := range got {
		if strings.HasPrefix(sample, "latch_") {
			served[seriesName(sample)] = true
		}
	}
	checked := map[string]bool{"latch_build_info": true}
	for series := range want {
		checked[seriesName(series)] = true
	}
	for series := range atLeast {
		checked[seriesName(series)] = true
	}
	for _, name := range documented {
		if !served[name] {
			t.Errorf("%s is documented in docs/observability.md but not served", name)
		}
		if !checked[name] {
			t.Errorf("%s is documented but this test does not check its value", name)
		}
	}
	for name := range served {
		if !slices.Contains(documented, name) {
			t.Errorf("%s is served but not documented in docs/observability.md", name)
		}
	}

	// The dashboard queries only what is served, and has a panel for
	// every documented series.
	queried := dashboardSeries(t)
	for _, name := range queried {
		if !served[name] {
			t.Errorf("docs/grafana/latch-dashboard.json queries %s, which /metrics does not serve", name)
		}
	}
	for _, name := range documented {
		if !slices.Contains(queried, name) {
			t.Errorf("%s is documented but no panel of the dashboard shows it", name)
		}
	}

	// The server's reports: stopping writes the last one; the store then
	// has the starts and failures of the work, and the workers.
	stop()
	st, err := sqlite.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	since := time.Now().Add(-time.Hour)
	minutes, err := st.Activity(t.Context(), &store.ActivityParams{Since: since})
	if err != nil {
		t.Fatal(err)
	}
	starts, failures := 0, 0
	for _, m := range minutes {
		starts += m.Starts
		failures += m.Failures
	}
	if starts != 10 || failures != 2 {
		t.Errorf("activity reported: %d starts, %d failures; want 10 (3 in-process, 7 over HTTP), 2 (the HTTP fails)",
			starts, failures)
	}
	pres, err := st.Presence(t.Context(), &store.PresenceParams{Since: since})
	if err != nil {
		t.Fatal(err)
	}
	if len(pres.Servers) != 1 || strings.Count(pres.Servers[0].ID, ":") < 2 {
		t.Errorf("servers reported: %+v, want one, id host:pid:random", pres.Servers)
	}
	var workers []string
	for _, w := range pres.Workers {
		workers = append(workers, w.Tenant+"/"+w.ID)
	}
	slices.Sort(workers)
	if len(workers) != 3 || workers[0] == "" || !strings.HasPrefix(workers[0], "/") ||
		workers[1] != "acme/ext-worker" || workers[2] != "acme/gone" {
		t.Errorf("workers reported: %v, want the in-process worker (tenant \"\"), acme/ext-worker and acme/gone", workers)
	}
}

// dashboardSeries are the latch_ series the dashboard's queries name.
func dashboardSeries(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../../docs/grafana/latch-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name string `json:"name"`
				Type string `json:"type"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	if !slices.ContainsFunc(d.Templating.List, func(v struct {
		Name string `json:"name"`
		Type string `json:"type"`
	}) bool {
		return v.Type == "datasource"
	}) {
		t.Error("the dashboard has no datasource variable")
	}
	seen := map[string]bool{}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			continue
		}
		for _, tg := range p.Targets {
			names := regexp.MustCompile(`latch_[a-z_]+`).FindAllString(tg.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q queries no latch series: %s", p.Title, tg.Expr)
			}
			for _, n := range names {
				seen[seriesName(n)] = true
			}
		}
	}
	return slices.Sorted(func(yield func(string) bool) {
		for n := range seen {
			if !yield(n) {
				return
			}
		}
	})
}
