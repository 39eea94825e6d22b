package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// counter counts the side effects of a flow's steps by name.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) inc(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[name]++
}

func (c *counter) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

// step is a flow step whose side effect is counted.
func (c *counter) step(ctx context.Context, job *Job, name string) error {
	_, err := job.Step(ctx, name, func(context.Context) (json.RawMessage, error) {
		c.inc(name)
		return json.RawMessage(`"` + name + ` done"`), nil
	})
	return err
}

// retryingWorker is a worker on this env that retries a failed run at once.
func (e *env) retryingWorker() *Worker {
	cfg := e.config()
	cfg.Backoff = func(int) time.Duration { return 0 }
	return NewWorker(cfg)
}

// wantSecondAttemptRanStepsOnce starts w, submits a "flow" whose handler
// fails its first run, and wants it to succeed at its second attempt with
// each of the steps named run once.
func (e *env) wantSecondAttemptRanStepsOnce(w *Worker, effects *counter, names ...string) *store.Execution {
	e.t.Helper()
	e.start(w)
	ex := e.submit("flow", `{}`, maxAttempts(3))
	if got := e.waitStatus(ex.ID, store.StatusSucceeded); got.Attempt != 2 {
		e.t.Errorf("attempt %d, want 2", got.Attempt)
	}
	for _, name := range names {
		if n := effects.get(name); n != 1 {
			e.t.Errorf("step %s ran %d times, want once", name, n)
		}
	}
	return ex
}

// outcomes collects the outcome of every run a worker reports.
type outcomes struct {
	mu  sync.Mutex
	got []Outcome
}

func (o *outcomes) add(r *Run) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.got = append(o.got, r.Outcome)
}

func (o *outcomes) list() []Outcome {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]Outcome(nil), o.got...)
}

func TestFlowRetrySkipsRecordedSteps(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var effects counter
	var runs atomic.Int32
	w := e.retryingWorker()
	w.Handle("flow", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		for _, name := range []string{"a", "b"} {
			if err := effects.step(ctx, job, name); err != nil {
				return nil, err
			}
		}
		if runs.Add(1) == 1 {
			return nil, errors.New("step c failed this time")
		}
		if err := effects.step(ctx, job, "c"); err != nil {
			return nil, err
		}
		return json.RawMessage(`"shipped"`), nil
	})
	ex := e.wantSecondAttemptRanStepsOnce(w, &effects, "a", "b", "c")
	page, err := e.st.Steps(e.ctx, &store.StepsParams{ID: ex.ID})
	if err != nil {
		t.Fatal(err)
	}
	if steps := page.Items; len(steps) != 3 || steps[0].Attempt != 1 || steps[2].Attempt != 2 {
		t.Errorf("journal %+v, want a and b at attempt 1, c at attempt 2", steps)
	}
}

func TestFlowSleepFreesTheSlotAndResumes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var effects counter
	var seen outcomes
	cfg := e.config()
	cfg.OnRun = seen.add
	w := NewWorker(cfg)
	attempts := make(chan int, 4)
	w.Handle("flow", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		attempts <- job.Attempt
		if err := effects.step(ctx, job, "charge"); err != nil {
			return nil, err
		}
		if err := job.Sleep(ctx, "until delivery", time.Hour); err != nil {
			return nil, err
		}
		if err := effects.step(ctx, job, "ship"); err != nil {
			return nil, err
		}
		return nil, nil
	})
	e.start(w)
	waker := NewWaker(WakerConfig{Store: e.st, Logger: e.log, Now: e.clock.Now})

	ex := e.submit("flow", `{}`)
	x := e.waitStatus(ex.ID, store.StatusSuspended)
	if x.WakeAt == nil || !x.WakeAt.Equal(e.clock.Now().Add(time.Hour)) {
		t.Errorf("WakeAt %v, want an hour from now", x.WakeAt)
	}
	e.checkInflight(1)
	if n, err := waker.RunOnce(e.ctx); err != nil || n != 0 {
		t.Errorf("wake before the hour: %d, %v; want 0", n, err)
	}
	e.clock.Advance(time.Hour)
	if n, err := waker.RunOnce(e.ctx); err != nil || n != 1 {
		t.Fatalf("wake after the hour: %d, %v; want 1", n, err)
	}
	x = e.waitStatus(ex.ID, store.StatusSucceeded)
	if x.Attempt != 1 {
		t.Errorf("attempt %d after a resume, want 1", x.Attempt)
	}
	if a, b := recv(t, attempts, "first run"), recv(t, attempts, "resumed run"); a != 1 || b != 1 {
		t.Errorf("runs saw attempts %d and %d, want 1 and 1", a, b)
	}
	if effects.get("charge") != 1 || effects.get("ship") != 1 {
		t.Errorf("charge ran %d times, ship %d; want once each", effects.get("charge"), effects.get("ship"))
	}
	e.checkInflight(0)
	// The worker's stop drains the OnRun reports; the first run suspended.
	if got := seen.list(); len(got) < 1 || got[0] != OutcomeSuspended {
		t.Errorf("outcomes %v, want the first run suspended", got)
	}
}

func TestFlowZeroSleepRecordsWithoutSuspending(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var runs atomic.Int32
	w := NewWorker(e.config())
	w.Handle("flow", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		runs.Add(1)
		if err := job.Sleep(ctx, "zero", 0); err != nil {
			return nil, err
		}
		return json.RawMessage(`1`), nil
	})
	e.start(w)
	ex := e.submit("flow", `{}`)
	e.waitStatus(ex.ID, store.StatusSucceeded)
	if runs.Load() != 1 {
		t.Errorf("handler ran %d times, want once (a zero sleep does not suspend)", runs.Load())
	}
	page, err := e.st.Steps(e.ctx, &store.StepsParams{ID: ex.ID})
	if err != nil {
		t.Fatal(err)
	}
	if steps := page.Items; len(steps) != 1 || steps[0].Name != "zero" || string(steps[0].Result) != "null" {
		t.Errorf("journal %+v, want the step zero recorded as null", steps)
	}
}

func TestFlowWaitSignal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := NewWorker(e.config())
	w.Handle("approval", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		data, err := job.WaitSignal(ctx, "approval", "approve", 24*time.Hour)
		switch {
		case errors.Is(err, ErrWaitTimedOut):
			return json.RawMessage(`"nobody answered"`), nil
		case err != nil:
			return nil, err
		}
		return data, nil
	})
	e.start(w)
	waker := NewWaker(WakerConfig{Store: e.st, Logger: e.log, Now: e.clock.Now})

	signalled := e.submit("approval", `{}`)
	x := e.waitStatus(signalled.ID, store.StatusSuspended)
	if x.WaitingFor != "approve" {
		t.Errorf("waiting for %q, want approve", x.WaitingFor)
	}
	res, err := e.st.Signal(e.ctx, &store.SignalParams{Tenant: e.tenant, ExecutionID: signalled.ID,
		Name: "approve", Data: json.RawMessage(`{"by":"ann"}`), Now: e.clock.Now()})
	if err != nil || !res.Delivered {
		t.Fatalf("signal: %+v, %v; want delivered", res, err)
	}
	if x := e.waitStatus(signalled.ID, store.StatusSucceeded); string(x.Result) != `{"by":"ann"}` {
		t.Errorf("result %s, want the signal's data", x.Result)
	}

	ignored := e.submit("approval", `{}`)
	e.waitStatus(ignored.ID, store.StatusSuspended)
	e.clock.Advance(24 * time.Hour)
	if n, err := waker.RunOnce(e.ctx); err != nil || n != 1 {
		t.Fatalf("wake after the timeout: %d, %v; want 1", n, err)
	}
	if x := e.waitStatus(ignored.ID, store.StatusSucceeded); string(x.Result) != `"nobody answered"` {
		t.Errorf("result %s, want the timeout's answer", x.Result)
	}
}

func TestFlowHandlerThatIgnoresSuspensionRecordsNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var seen outcomes
	cfg := e.config()
	cfg.OnRun = seen.add
	w := NewWorker(cfg)
	w.Handle("flow", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		_ = job.Sleep(ctx, "nap", time.Hour) // wrongly ignored
		return json.RawMessage(`"finished anyway"`), nil
	})
	e.start(w)
	ex := e.submit("flow", `{}`)
	e.waitStatus(ex.ID, store.StatusSuspended)
	deadline := time.Now().Add(waitLimit)
	for len(seen.list()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := seen.list(); len(got) != 1 || got[0] != OutcomeSuspended {
		t.Errorf("outcomes %v, want one run, suspended", got)
	}
	if x := e.get(ex.ID); x.Status != store.StatusSuspended || x.Result != nil {
		t.Errorf("status %s result %s, want still suspended with no result", x.Status, x.Result)
	}
}

func TestFlowWithoutWorkerSaysSo(t *testing.T) {
	t.Parallel()
	var j *Job
	if _, err := j.Step(t.Context(), "a", nil); !errors.Is(err, errNoFlow) {
		t.Errorf("Step on a Job not made by a worker: %v, want errNoFlow", err)
	}
	if err := (&Job{}).Sleep(t.Context(), "a", time.Second); !errors.Is(err, errNoFlow) {
		t.Errorf("Sleep on a Job not made by a worker: %v, want errNoFlow", err)
	}
}

// TestFlowReplaysAJournalLargerThanItsLease: a journal of 3 MiB comes in a
// lease in part (store.ClaimJournalBytes); the run after a failure still
// gets every recorded step's result, read from the store on demand, and
// runs none of them again.
func TestFlowReplaysAJournalLargerThanItsLease(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var effects counter
	var runs atomic.Int32
	w := e.retryingWorker()
	names := []string{"s0", "s1", "s2", "s3", "s4"}
	big := func(name string) json.RawMessage {
		return json.RawMessage(`"` + name + strings.Repeat("x", 600<<10) + `"`)
	}
	w.Handle("flow", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		for _, name := range names {
			r, err := job.Step(ctx, name, func(context.Context) (json.RawMessage, error) {
				effects.inc(name)
				return big(name), nil
			})
			if err != nil {
				return nil, err
			}
			if string(r) != string(big(name)) {
				return nil, Permanent(fmt.Errorf("step %s answered %.20s…, not its recorded result", name, r))
			}
		}
		if runs.Add(1) == 1 {
			return nil, errors.New("fail after the steps, once")
		}
		return json.RawMessage(`"done"`), nil
	})
	e.wantSecondAttemptRanStepsOnce(w, &effects, names...)
}
