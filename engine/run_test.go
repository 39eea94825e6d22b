package engine

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// reporting is a worker configuration whose OnRun sends each Run on runs
// and whose OnClaim adds to claims.
func (e *env) reporting(claims *atomic.Int64) (WorkerConfig, chan Run) {
	runs := make(chan Run, 16)
	cfg := e.config()
	cfg.OnClaim = func(n int) { claims.Add(int64(n)) }
	cfg.OnRun = func(r *Run) { runs <- *r }
	return cfg, runs
}

// runsOf receives n Runs and returns them by execution id, in order.
func runsOf(t *testing.T, runs <-chan Run, n int) map[string][]Run {
	t.Helper()
	got := map[string][]Run{}
	for range n {
		r := recv(t, runs, "a run to be reported")
		got[r.ExecutionID] = append(got[r.ExecutionID], r)
	}
	select {
	case r := <-runs:
		t.Errorf("reported beyond the %d runs expected: %+v", n, r)
	default:
	}
	return got
}

// OnRun reports every attempt with the outcome the store made of it, and
// the handler's run time; OnClaim counts every lease.
func TestWorkerReportsEachRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var claims atomic.Int64
	cfg, runs := e.reporting(&claims)
	started := make(chan struct{}, 1)
	w := NewWorker(cfg)
	w.Handle("ok", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		time.Sleep(20 * time.Millisecond)
		return nil, nil
	})
	w.Handle("flaky", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		return nil, RetryAfter(errors.New("boom"), 0)
	})
	w.Handle("bad", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		return nil, Permanent(errors.New("bad payload"))
	})
	w.Handle("long", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	e.start(w)
	ok := e.submit("ok", `{}`)
	flaky := e.submit("flaky", `{}`, maxAttempts(2))
	bad := e.submit("bad", `{}`, maxAttempts(5))
	long := e.submit("long", `{}`)
	recv(t, started, "the handler to start")
	if _, err := e.st.Cancel(e.ctx, &store.CancelParams{ID: long.ID, Now: e.clock.Now()}); err != nil {
		t.Fatal(err)
	}

	got := runsOf(t, runs, 5)
	for _, c := range []struct {
		ex       *store.Execution
		kind     string
		outcomes []Outcome
	}{
		{ok, "ok", []Outcome{OutcomeSucceeded}},
		{flaky, "flaky", []Outcome{OutcomeRetried, OutcomeFailed}}, // the second attempt was the last
		{bad, "bad", []Outcome{OutcomeFailed}},
		{long, "long", []Outcome{OutcomeCancelled}},
	} {
		rs := got[c.ex.ID]
		if len(rs) != len(c.outcomes) {
			t.Errorf("%s: %d runs reported, want %d: %+v", c.kind, len(rs), len(c.outcomes), rs)
			continue
		}
		for i, r := range rs {
			if r.Outcome != c.outcomes[i] || r.Kind != c.kind || r.Attempt != i+1 || r.Tenant != e.tenant ||
				r.Queue != store.DefaultQueue {
				t.Errorf("%s run %d = %+v, want outcome %s, attempt %d, tenant %s, the default queue",
					c.kind, i+1, r, c.outcomes[i], i+1, e.tenant)
			}
		}
	}
	if rs := got[ok.ID]; len(rs) == 1 && (rs[0].Duration < 20*time.Millisecond || rs[0].Duration > waitLimit) {
		t.Errorf("ok ran %v, want the handler's 20ms or a little more", rs[0].Duration)
	}
	if n := claims.Load(); n != 5 {
		t.Errorf("OnClaim counted %d leases, want 5", n)
	}
}

// An attempt whose lease was lost reports lease_lost; one released by a
// hard stop reports released.
func TestWorkerReportsLostAndReleasedRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var claims atomic.Int64
	cfg, runs := e.reporting(&claims)
	started := make(chan string, 2)
	w := NewWorker(cfg)
	w.Handle("long", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		started <- job.ID
		<-ctx.Done()
		return nil, ctx.Err()
	})
	e.start(w)
	lost := e.submit("long", `{}`, maxAttempts(1))
	recv(t, started, "the first handler to start")
	// Another process's rescuer, its clock past the lease, takes it back.
	if _, err := e.st.Rescue(e.ctx, &store.RescueParams{Now: e.clock.Now().Add(cfg.LeaseDuration + time.Second)}); err != nil {
		t.Fatal(err)
	}
	if r := recv(t, runs, "the lost run to be reported"); r.ExecutionID != lost.ID || r.Outcome != OutcomeLeaseLost {
		t.Errorf("run = %+v, want %s lease_lost", r, lost.ID)
	}

	released := e.submit("long", `{}`)
	recv(t, started, "the second handler to start")
	// Counted before the stop: a claim in flight at the stop may take the
	// released execution back (and release it unstarted), a lease too.
	if n := claims.Load(); n != 2 {
		t.Errorf("OnClaim counted %d leases, want 2", n)
	}
	expired, cancel := context.WithCancel(context.Background())
	cancel() // no time for a soft stop
	if err := w.Stop(expired); err != nil {
		t.Fatal(err)
	}
	if r := recv(t, runs, "the released run to be reported"); r.ExecutionID != released.ID || r.Outcome != OutcomeReleased {
		t.Errorf("run = %+v, want %s released", r, released.ID)
	}
}
