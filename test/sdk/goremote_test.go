package sdk

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/latch-run/latch"
	"github.com/latch-run/latch/remote"
)

// The shared SDK scenario of sdk/SCENARIO.md in Go over HTTP, as the
// Python and TypeScript SDKs run it: every request goes to `latch serve`
// through package remote, with a tenant's key, and the workers are
// latch.NewRemoteWorker, the root package's handlers run over the API. A
// worker process of (b) is the test binary run again with
// remoteScenarioWorkerEnv set to the server's URL and LATCH_KEY to the
// tenant's key.

// remoteScenarioWorkerEnv makes the test binary a remote worker process of
// part (b) (see TestMain and remoteScenarioWorkerMain): its value is the
// server's URL.
const remoteScenarioWorkerEnv = "LATCH_SCENARIO_REMOTE_WORKER"

func TestGoRemoteScenario(t *testing.T) {
	srv := startScenarioServer(t)
	admin := remote.New(srv.url, goAdminKey)
	t.Run("a_one_dedup_key_64_concurrent_submits", func(t *testing.T) { remoteScenarioA(t, admin, srv) })
	t.Run("b_worker_killed_mid_job", func(t *testing.T) { remoteScenarioB(t, admin, srv) })
	t.Run("c_two_step_flow_waits_for_a_signal", func(t *testing.T) { remoteScenarioC(t, admin, srv) })
}

// remoteTenant makes a tenant of its own for one part with the admin key,
// and answers its name, its key and a client of srv with that key.
func remoteTenant(t *testing.T, admin *remote.Client, srv *scenarioServer, prefix string) (string, string, *remote.Client) {
	t.Helper()
	name := fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), tenantSeq.Add(1))
	created, err := admin.CreateTenant(t.Context(), remote.TenantSpec{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return name, created.APIKey, remote.New(srv.url, created.APIKey)
}

func remoteScenarioA(t *testing.T, admin *remote.Client, srv *scenarioServer) {
	ctx := t.Context()
	tenant, _, c := remoteTenant(t, admin, srv, "scenario-a")
	type answer struct {
		id           string
		deduplicated bool
		err          error
	}
	answers := make([]answer, 64)
	var ready, wg sync.WaitGroup
	barrier := make(chan struct{})
	ready.Add(64)
	for i := range answers {
		wg.Go(func() {
			ready.Done()
			<-barrier
			e, err := c.Submit(ctx, remote.SubmitRequest{Kind: "scenario-a", Payload: map[string]int{"n": 1}, DedupKey: "scenario-a"})
			answers[i].err = err
			if e != nil {
				answers[i].id = e.ExecutionID
				answers[i].deduplicated = e.Deduplicated != nil && *e.Deduplicated
			}
		})
	}
	ready.Wait()
	close(barrier)
	wg.Wait()

	ids := map[string]bool{}
	fresh := 0
	for i, a := range answers {
		if a.err != nil {
			t.Fatalf("submit %d: %v", i, a.err)
		}
		ids[a.id] = true
		if !a.deduplicated {
			fresh++
		}
	}
	if len(ids) != 1 || fresh != 1 {
		t.Fatalf("64 submits answered %d ids, %d not deduplicated; want 1 and 1", len(ids), fresh)
	}
	page, err := c.ListPage(ctx, remote.ListOptions{DedupKey: "scenario-a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 || !ids[page.Items[0].ExecutionID] {
		t.Fatalf("listing dedup key scenario-a: %d executions, want the one of the answers", len(page.Items))
	}
	tn, err := admin.GetTenant(ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	if tn.Inflight != 1 {
		t.Fatalf("the tenant's inflight is %d, want 1", tn.Inflight)
	}
}

func startRemoteWorkerProc(t *testing.T, url, key, effect string, hang bool) *workerProc {
	t.Helper()
	return startScenarioWorkerProc(t, effect, hang, remoteScenarioWorkerEnv+"="+url, "LATCH_KEY="+key)
}

func remoteScenarioB(t *testing.T, admin *remote.Client, srv *scenarioServer) {
	ctx := t.Context()
	_, key, c := remoteTenant(t, admin, srv, "scenario-b")
	effect := filepath.Join(t.TempDir(), "effect")
	if err := os.WriteFile(effect, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// 1. Submit.
	e, err := c.Submit(ctx, remote.SubmitRequest{Kind: "scenario-b", Payload: map[string]any{}, MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}

	// 2–3. Worker process A starts the job and hangs; it is SIGKILLed.
	a := startRemoteWorkerProc(t, srv.url, key, effect, true)
	if l := a.line(t); l != "started 1" {
		t.Fatalf("worker A said %q, want \"started 1\"", l)
	}
	running, err := c.Get(ctx, e.ExecutionID)
	if err != nil {
		t.Fatal(err)
	}
	if running.Status != remote.StatusRunning || running.Attempt != 1 {
		t.Fatalf("while A runs it: %s, attempt %d; want running, attempt 1", running.Status, running.Attempt)
	}
	killWorkerA(t, a)

	// 4–5. Worker process B takes it once the server has rescued A's lease.
	b := startRemoteWorkerProc(t, srv.url, key, effect, false)
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	done, err := c.Wait(wctx, e.ExecutionID)
	if err != nil {
		t.Fatalf("%v; worker B's stderr:\n%s", err, b.stderr.String())
	}
	if done.Status != remote.StatusSucceeded || done.Attempt != 2 || string(done.Result) != `{"attempt":2}` {
		t.Fatalf("it ended %s, attempt %d, result %s; want succeeded, attempt 2, {\"attempt\":2}", done.Status, done.Attempt, done.Result)
	}

	// 6. Started twice, completed once.
	checkEffects(t, effect)

	// 7. A's run expired, B's succeeded.
	attempts, err := c.Attempts(ctx, e.ExecutionID)
	if err != nil {
		t.Fatal(err)
	}
	var runs, workers []string
	for _, x := range attempts.Items {
		outcome := "running"
		if x.Outcome != nil {
			outcome = string(*x.Outcome)
		}
		runs = append(runs, fmt.Sprintf("%d %s", x.Attempt, outcome))
		workers = append(workers, x.WorkerID)
	}
	checkRuns(t, runs, workers)

	// 8. SIGTERM: B stops claiming and exits 0.
	stopWorkerB(t, b)
}

// remoteScenarioWorkerMain is a remote worker process of part (b), as
// scenarioWorkerMain but over HTTP with the key in $LATCH_KEY.
func remoteScenarioWorkerMain(url string) int {
	ctx, stop := signalContext()
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return serveScenarioB(ctx, latch.NewRemoteWorker(remote.New(url, os.Getenv("LATCH_KEY")),
		latch.WorkerOptions{Slots: 1, LeaseDuration: 2 * time.Second, Logger: logger}))
}

func remoteScenarioC(t *testing.T, admin *remote.Client, srv *scenarioServer) {
	ctx := t.Context()
	_, _, c := remoteTenant(t, admin, srv, "scenario-c")
	sc := newScenarioCFlow()
	// runOnce runs a remote worker for one claim.
	runOnce := func() error {
		t.Helper()
		return sc.runOnce(t, latch.NewRemoteWorker(c, latch.WorkerOptions{Slots: 1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	}
	// 1. Submit.
	e, err := c.Submit(ctx, remote.SubmitRequest{Kind: "scenario-c", Payload: map[string]int{"order": 7}})
	if err != nil {
		t.Fatal(err)
	}
	journal := func() []string {
		t.Helper()
		var out []string
		for s, err := range c.Steps(ctx, e.ExecutionID, remote.PageOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%s %s %d", s.Name, s.Result, s.Attempt))
		}
		return out
	}

	// 2. One claim: the flow records step one and suspends.
	checkFirstRun(t, runOnce())
	s, err := c.Get(ctx, e.ExecutionID)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != remote.StatusSuspended || s.WaitingFor == nil || *s.WaitingFor != "approve" || s.Attempt != 1 {
		t.Fatalf("after the first run: %s, waiting for %v, attempt %d; want suspended, approve, 1", s.Status, s.WaitingFor, s.Attempt)
	}
	sc.checkJournal(t, journal(), false)

	// 3. The signal ends the wait.
	sent, err := c.Signal(ctx, e.ExecutionID, "approve", map[string]string{"by": "ann"}, remote.SignalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !sent.Delivered {
		t.Fatal("the signal was not delivered to the waiting flow")
	}

	// 4. One more claim: the flow resumes and completes, in the same attempt.
	if err := runOnce(); err != nil {
		t.Fatalf("the second run returned %v", err)
	}
	done, err := c.Get(ctx, e.ExecutionID)
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != remote.StatusSucceeded || done.Attempt != 1 ||
		string(done.Result) != `{"one":{"reserved":7},"two":{"shipped_by":"ann"}}` {
		t.Fatalf("after the second run: %s, attempt %d, result %s", done.Status, done.Attempt, done.Result)
	}

	// 5–6. The journal, in order, each at attempt 1; each step's function
	// ran once.
	sc.checkJournal(t, journal(), true)
}
