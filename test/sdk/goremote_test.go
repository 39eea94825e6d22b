package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$") // TestMain runs the worker and no test
	cmd.Env = append(os.Environ(), remoteScenarioWorkerEnv+"="+url, "LATCH_KEY="+key, "EFFECT_FILE="+effect, "HANG=")
	if hang {
		cmd.Env = append(cmd.Env, "HANG=1")
	}
	return startProc(t, cmd)
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
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.exited
	if ws, ok := a.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("worker A ended with %v, want killed by SIGKILL", a.err)
	}

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
	raw, err := os.ReadFile(effect)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Split(strings.TrimSpace(string(raw)), "\n"); !slices.Equal(got, []string{"start 1", "start 2", "done 2"}) {
		t.Fatalf("the effect file is %q, want start 1, start 2, done 2", got)
	}

	// 7. A's run expired, B's succeeded.
	attempts, err := c.Attempts(ctx, e.ExecutionID)
	if err != nil {
		t.Fatal(err)
	}
	var runs []string
	for _, x := range attempts.Items {
		outcome := "running"
		if x.Outcome != nil {
			outcome = string(*x.Outcome)
		}
		runs = append(runs, fmt.Sprintf("%d %s", x.Attempt, outcome))
	}
	if !slices.Equal(runs, []string{"1 expired", "2 succeeded"}) {
		t.Fatalf("attempts %q, want 1 expired, 2 succeeded", runs)
	}
	if attempts.Items[0].WorkerID == attempts.Items[1].WorkerID {
		t.Fatalf("both runs were by worker %s, want A's then B's", attempts.Items[0].WorkerID)
	}

	// 8. SIGTERM: B stops claiming and exits 0.
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var out []string
	for l := range b.lines {
		out = append(out, l)
	}
	<-b.exited
	if b.err != nil {
		t.Fatalf("worker B after SIGTERM: %v; stderr:\n%s", b.err, b.stderr.String())
	}
	if !slices.Equal(out, []string{"started 2", "stopped"}) {
		t.Fatalf("worker B said %q, want started 2, stopped", out)
	}
}

// remoteScenarioWorkerMain is a remote worker process of part (b), as
// scenarioWorkerMain but over HTTP with the key in $LATCH_KEY.
func remoteScenarioWorkerMain(url string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	effect, hang := os.Getenv("EFFECT_FILE"), os.Getenv("HANG") == "1"
	appendLine := func(line string) error {
		f, err := os.OpenFile(effect, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		if _, err := io.WriteString(f, line+"\n"); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	w := latch.NewRemoteWorker(remote.New(url, os.Getenv("LATCH_KEY")),
		latch.WorkerOptions{Slots: 1, LeaseDuration: 2 * time.Second, Logger: logger})
	w.Handle("scenario-b", func(ctx context.Context, job *latch.Job) (any, error) {
		if err := appendLine(fmt.Sprintf("start %d", job.Attempt)); err != nil {
			return nil, err
		}
		fmt.Printf("started %d\n", job.Attempt)
		if hang {
			select {} // until SIGKILL
		}
		if err := appendLine(fmt.Sprintf("done %d", job.Attempt)); err != nil {
			return nil, err
		}
		return map[string]int{"attempt": job.Attempt}, nil
	})
	if err := w.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Stop(sctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("stopped")
	return 0
}

func remoteScenarioC(t *testing.T, admin *remote.Client, srv *scenarioServer) {
	ctx := t.Context()
	_, _, c := remoteTenant(t, admin, srv, "scenario-c")
	var calls struct{ one, two atomic.Int64 }
	type reserved struct {
		Reserved int `json:"reserved"`
	}
	type shipped struct {
		ShippedBy string `json:"shipped_by"`
	}
	runs := make(chan error, 2) // each run's return, as it returns
	flow := func(ctx context.Context, job *latch.Job) (result any, err error) {
		defer func() { runs <- err }()
		var p struct {
			Order int `json:"order"`
		}
		if err := job.Decode(&p); err != nil {
			return nil, latch.Permanent(err)
		}
		one, err := latch.StepValue(ctx, job, "one", func(context.Context) (reserved, error) {
			calls.one.Add(1)
			return reserved{Reserved: p.Order}, nil
		})
		if err != nil {
			return nil, err
		}
		raw, err := job.WaitSignal(ctx, "approval", "approve", 60*time.Second)
		if err != nil {
			return nil, err // ErrSuspended: the flow waits, holding no worker
		}
		var approval struct {
			By string `json:"by"`
		}
		if err := json.Unmarshal(raw, &approval); err != nil {
			return nil, latch.Permanent(err)
		}
		two, err := latch.StepValue(ctx, job, "two", func(context.Context) (shipped, error) {
			calls.two.Add(1)
			return shipped{ShippedBy: approval.By}, nil
		})
		if err != nil {
			return nil, err
		}
		return map[string]any{"one": one, "two": two}, nil
	}
	// runOnce runs a remote worker for one claim: it starts one, waits for
	// the handler to return, and stops it, which returns once the run is
	// settled on the server.
	runOnce := func() error {
		t.Helper()
		w := latch.NewRemoteWorker(c, latch.WorkerOptions{Slots: 1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		w.Handle("scenario-c", flow)
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		var err error
		select {
		case err = <-runs:
		case <-time.After(30 * time.Second):
			t.Fatal("the worker ran nothing in 30 s")
		}
		if serr := w.Stop(ctx); serr != nil {
			t.Fatal(serr)
		}
		return err
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
	if err := runOnce(); !errors.Is(err, latch.ErrSuspended) {
		t.Fatalf("the first run returned %v, want ErrSuspended", err)
	}
	s, err := c.Get(ctx, e.ExecutionID)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != remote.StatusSuspended || s.WaitingFor == nil || *s.WaitingFor != "approve" || s.Attempt != 1 {
		t.Fatalf("after the first run: %s, waiting for %v, attempt %d; want suspended, approve, 1", s.Status, s.WaitingFor, s.Attempt)
	}
	if got := journal(); !slices.Equal(got, []string{`one {"reserved":7} 1`}) {
		t.Fatalf("the journal after the first run: %q, want step one {\"reserved\":7}", got)
	}

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

	// 5. The journal, in order, each at attempt 1.
	want := []string{`one {"reserved":7} 1`, `approval {"by":"ann"} 1`, `two {"shipped_by":"ann"} 1`}
	if got := journal(); !slices.Equal(got, want) {
		t.Fatalf("the journal: %q, want %q", got, want)
	}

	// 6. Each step's function ran once.
	if calls.one.Load() != 1 || calls.two.Load() != 1 {
		t.Fatalf("step one ran %d times, step two %d; want once each", calls.one.Load(), calls.two.Load())
	}
}
