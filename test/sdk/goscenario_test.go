package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/latch-run/latch"
)

// The pieces of the Go scenario that its two runs share: the embedded one
// (go_test.go: Client and Worker on the server's store) and the remote one
// (goremote_test.go: package remote and latch.NewRemoteWorker over HTTP).
// Both workers are a *latch.Worker, so the handlers, a worker process's
// life and the checks of what the workers did are the same code.

// startScenarioWorkerProc starts the test binary as a worker process of
// part (b), env saying which (see TestMain), its handler's effects
// appended to the file effect; with hang, the handler hangs once started.
func startScenarioWorkerProc(t *testing.T, effect string, hang bool, env ...string) *workerProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$") // TestMain runs the worker and no test
	cmd.Env = append(append(os.Environ(), env...), "EFFECT_FILE="+effect, "HANG=")
	if hang {
		cmd.Env = append(cmd.Env, "HANG=1")
	}
	return startProc(t, cmd)
}

// killWorkerA SIGKILLs worker process a of part (b) and checks it died so.
func killWorkerA(t *testing.T, a *workerProc) {
	t.Helper()
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.exited
	if ws, ok := a.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("worker A ended with %v, want killed by SIGKILL", a.err)
	}
}

// checkEffects checks the handlers' side effects of part (b): started
// twice, completed once.
func checkEffects(t *testing.T, effect string) {
	t.Helper()
	raw, err := os.ReadFile(effect)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Split(strings.TrimSpace(string(raw)), "\n"); !slices.Equal(got, []string{"start 1", "start 2", "done 2"}) {
		t.Fatalf("the effect file is %q, want start 1, start 2, done 2", got)
	}
}

// checkRuns checks the runs of part (b), each "<attempt> <outcome>" with
// the worker that ran it: A's expired, B's succeeded.
func checkRuns(t *testing.T, runs, workers []string) {
	t.Helper()
	if !slices.Equal(runs, []string{"1 expired", "2 succeeded"}) {
		t.Fatalf("attempts %q, want 1 expired, 2 succeeded", runs)
	}
	if workers[0] == workers[1] {
		t.Fatalf("both runs were by worker %s, want A's then B's", workers[0])
	}
}

// stopWorkerB sends SIGTERM to worker process b of part (b): it stops
// claiming, says "stopped" and exits 0.
func stopWorkerB(t *testing.T, b *workerProc) {
	t.Helper()
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

// serveScenarioB is the life of a worker process of part (b), w the
// embedded or the remote worker: kind scenario-b, whose handler appends
// "start <attempt>" to $EFFECT_FILE and says "started <attempt>"; then,
// with HANG=1, it hangs until the process is killed, else it appends
// "done <attempt>" and returns {"attempt": <attempt>}. On SIGTERM (ctx
// done) it stops, says "stopped" and exits 0.
func serveScenarioB(ctx context.Context, w *latch.Worker) int {
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

// signalContext is a worker process's context: done on SIGTERM or SIGINT.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
}

// scenarioCFlow is part (c)'s flow and what it did: calls counts each step's
// function, runs has each run's return, as it returns.
type scenarioCFlow struct {
	calls struct{ one, two atomic.Int64 }
	runs  chan error
}

func newScenarioCFlow() *scenarioCFlow { return &scenarioCFlow{runs: make(chan error, 2)} }

// flow is the handler of kind scenario-c: step one, a wait for the signal
// approve, step two.
func (sc *scenarioCFlow) flow(ctx context.Context, job *latch.Job) (result any, err error) {
	type reserved struct {
		Reserved int `json:"reserved"`
	}
	type shipped struct {
		ShippedBy string `json:"shipped_by"`
	}
	defer func() { sc.runs <- err }()
	var p struct {
		Order int `json:"order"`
	}
	if err := job.Decode(&p); err != nil {
		return nil, latch.Permanent(err)
	}
	one, err := latch.StepValue(ctx, job, "one", func(context.Context) (reserved, error) {
		sc.calls.one.Add(1)
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
		sc.calls.two.Add(1)
		return shipped{ShippedBy: approval.By}, nil
	})
	if err != nil {
		return nil, err
	}
	return map[string]any{"one": one, "two": two}, nil
}

// runOnce runs w for one claim: it starts w with the flow, waits for the
// handler to return, and stops w, which returns once the run is settled.
func (sc *scenarioCFlow) runOnce(t *testing.T, w *latch.Worker) error {
	t.Helper()
	ctx := t.Context()
	w.Handle("scenario-c", sc.flow)
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-sc.runs:
	case <-time.After(30 * time.Second):
		t.Fatal("the worker ran nothing in 30 s")
	}
	if serr := w.Stop(ctx); serr != nil {
		t.Fatal(serr)
	}
	return err
}

// checkFirstRun checks the first run of part (c) returned ErrSuspended.
func checkFirstRun(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, latch.ErrSuspended) {
		t.Fatalf("the first run returned %v, want ErrSuspended", err)
	}
}

// checkJournal checks the journal of part (c), each step as
// "<name> <result> <attempt>": after the first run, step one only (final
// false); at the end, the three steps in order, each at attempt 1, each
// step's function run once.
func (sc *scenarioCFlow) checkJournal(t *testing.T, got []string, final bool) {
	t.Helper()
	if !final {
		if !slices.Equal(got, []string{`one {"reserved":7} 1`}) {
			t.Fatalf("the journal after the first run: %q, want step one {\"reserved\":7}", got)
		}
		return
	}
	want := []string{`one {"reserved":7} 1`, `approval {"by":"ann"} 1`, `two {"shipped_by":"ann"} 1`}
	if !slices.Equal(got, want) {
		t.Fatalf("the journal: %q, want %q", got, want)
	}
	if sc.calls.one.Load() != 1 || sc.calls.two.Load() != 1 {
		t.Fatalf("step one ran %d times, step two %d; want once each", sc.calls.one.Load(), sc.calls.two.Load())
	}
}
