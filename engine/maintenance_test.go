package engine

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

func TestRescuerRecoversExpiredLeaseAtStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// A worker claims and dies.
	retry := e.submit("work", `{}`, maxAttempts(2))
	spent := e.submit("work", `{}`, maxAttempts(1))
	res, err := e.st.Claim(e.ctx, &store.ClaimParams{WorkerID: "dead", Max: 2,
		LeaseDuration: time.Second, Now: e.clock.Now()})
	if err != nil || len(res.Leases) != 2 {
		t.Fatalf("claim = %+v, %v", res, err)
	}
	// And a retry is due later.
	later := e.submit("work", `{}`, func(s *store.Submission) { s.RunAt = e.clock.Now().Add(time.Minute) })

	e.clock.Advance(2 * time.Minute)
	r := NewRescuer(RescuerConfig{Store: e.st, Interval: time.Hour, Logger: e.log, Now: e.clock.Now})
	if err := r.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Stop(context.Background()) })
	// The pass at start does it; Interval is an hour.
	got := e.waitStatus(retry.ID, store.StatusQueued)
	if got.Attempt != 1 {
		t.Errorf("rescued attempt %d, want 1", got.Attempt)
	}
	e.waitStatus(spent.ID, store.StatusFailed)
	e.waitStatus(later.ID, store.StatusQueued)
	e.checkInflight(2)
}

func TestRescuerRunOnceRepeatsFullBatches(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for range 5 {
		e.submit("work", `{}`)
	}
	if _, err := e.st.Claim(e.ctx, &store.ClaimParams{WorkerID: "dead", Max: 5,
		LeaseDuration: time.Second, Now: e.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	var reported []store.RescueResult
	r := NewRescuer(RescuerConfig{Store: e.st, Limit: 2, Logger: e.log,
		Now:      func() time.Time { return e.clock.Now().Add(time.Minute) },
		OnRescue: func(res store.RescueResult) { reported = append(reported, res) }})
	rescued, _, err := r.RunOnce(e.ctx)
	if err != nil || rescued.Requeued != 5 {
		t.Errorf("RunOnce = %+v, %v; want 5 requeued in batches of 2", rescued, err)
	}
	// OnRescue hears the pass's totals once; a pass with nothing to do is
	// not reported.
	if _, _, err := r.RunOnce(e.ctx); err != nil {
		t.Fatal(err)
	}
	if want := []store.RescueResult{{Requeued: 5}}; !slices.Equal(reported, want) {
		t.Errorf("OnRescue heard %+v, want %+v", reported, want)
	}
}

func TestPrunerRemovesExpiredExecutions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := NewWorker(e.config())
	w.Handle("echo", func(ctx context.Context, job *Job) (json.RawMessage, error) { return job.Payload, nil })
	e.start(w)
	ex := e.submit("echo", `{}`, func(s *store.Submission) { s.DedupKey = "k" })
	e.waitStatus(ex.ID, store.StatusSucceeded)

	p := NewPruner(PrunerConfig{Store: e.st, Interval: 5 * time.Millisecond, Logger: e.log,
		Now: func() time.Time { return e.clock.Now().Add(store.DefaultRetention + time.Hour) }})
	if err := p.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(context.Background()) })
	deadline := time.After(waitLimit)
	for {
		changed := e.st.Changed() // a prune that deletes wakes us
		_, err := e.st.Get(e.ctx, &store.GetParams{ID: ex.ID})
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("execution not pruned: %v", err)
		}
	}
	// The dedup key went with it: the same key admits a new execution.
	again := e.submit("echo", `{}`, func(s *store.Submission) { s.DedupKey = "k" })
	if again.ID == ex.ID {
		t.Error("dedup key survived pruning")
	}
}

func TestPrunerRunOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ex := e.submit("work", `{}`)
	if _, err := e.st.Cancel(e.ctx, &store.CancelParams{ID: ex.ID, Now: e.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	p := NewPruner(PrunerConfig{Store: e.st, Limit: 1, Logger: e.log, Now: e.clock.Now})
	if res, err := p.RunOnce(e.ctx); err != nil || res.Executions != 0 {
		t.Errorf("before retention: %+v, %v", res, err)
	}
	p.cfg.Now = func() time.Time { return e.clock.Now().Add(store.DefaultRetention + time.Second) }
	if res, err := p.RunOnce(e.ctx); err != nil || res.Executions != 1 {
		t.Errorf("after retention: %+v, %v", res, err)
	}
}

func TestLoopsNeedAStore(t *testing.T) {
	t.Parallel()
	if err := NewRescuer(RescuerConfig{}).Start(t.Context()); err == nil {
		t.Error("rescuer started without a store")
	}
	if err := NewPruner(PrunerConfig{}).Start(t.Context()); err == nil {
		t.Error("pruner started without a store")
	}
}
