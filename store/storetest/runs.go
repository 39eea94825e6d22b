package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testRuns covers the attempt history: each lease is recorded as a run by
// the claim that makes it and ended by the operation that ends it.
func testRuns(t *testing.T, ns NewStore) {
	t.Run("EachLeaseIsARunEndedByItsOutcome", func(t *testing.T) {
		e := start(t, ns)
		first := e.run(acme, base, job("echo"))
		running := e.wantRuns(first.ExecutionID, runWant{1, "worker-1", base, nil, "", ""})
		if running[0].Ended() {
			t.Error("a running run reports Ended")
		}
		_, err := e.fail(first, at(time.Second), "boom", true, 0)
		e.must(err, "Fail")
		second := e.claim(store.ClaimParams{Tenant: acme, WorkerID: "worker-2", Now: at(2 * time.Second)})[0]
		_, err = e.complete(second, at(3*time.Second), nil)
		e.must(err, "Complete")
		e.wantRuns(first.ExecutionID,
			runWant{1, "worker-1", base, ptr(at(time.Second)), store.RunFailed, "boom"},
			runWant{2, "worker-2", at(2 * time.Second), ptr(at(3 * time.Second)), store.RunSucceeded, ""})
	})

	// store.MaxErrorBytes is the store's rule: however long the message a
	// worker reports (in-process or over HTTP), the execution and its run
	// keep the same cut, on a rune boundary, retried or final.
	t.Run("AFailuresMessageIsCutByTheStore", func(t *testing.T) {
		e := start(t, ns)
		long := "x" + strings.Repeat("é", store.MaxErrorBytes) // a 2-byte rune across the bound
		want := long[:store.MaxErrorBytes-1]
		for _, retry := range []bool{true, false} {
			l := e.run(acme, base, job("echo"))
			x, err := e.fail(l, at(time.Second), long, retry, 0)
			e.must(err, "Fail")
			if x.Error != want {
				t.Errorf("retry %v: Fail answered an error of %d bytes, want %d", retry, len(x.Error), len(want))
			}
			if got := e.get(l.ExecutionID); got.Error != want {
				t.Errorf("retry %v: stored error of %d bytes, want %d", retry, len(got.Error), len(want))
			}
			if runs := e.runs(l.ExecutionID); len(runs) != 1 || runs[0].Error != want {
				t.Errorf("retry %v: the run's error is not the stored cut", retry)
			}
		}
	})

	t.Run("ReleaseRescueAndCancel", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("echo"))
		_, err := e.release(l, at(time.Second))
		e.must(err, "Release")
		e.claimOne(acme, at(2*time.Second))
		e.rescue(at(2*time.Second+leaseFor+time.Second), 0) // the lease expired
		l = e.claimOne(acme, at(time.Hour))
		_, err = e.cancel(acme, l.ExecutionID, at(time.Hour+time.Second))
		e.must(err, "Cancel")
		_, err = e.complete(l, at(time.Hour+2*time.Second), nil)
		e.must(err, "Complete after a cancel request")
		e.wantRuns(l.ExecutionID,
			runWant{1, "worker-1", base, ptr(at(time.Second)), store.RunReleased, ""},
			runWant{2, "worker-1", at(2 * time.Second), ptr(at(2*time.Second + leaseFor + time.Second)), store.RunExpired, ""},
			runWant{3, "worker-1", at(time.Hour), ptr(at(time.Hour + 2*time.Second)), store.RunCancelled, ""})
	})

	t.Run("AResumeIsANewRunOfTheSameAttempt", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		_, err := e.sleep(l, at(time.Second), "nap", at(time.Minute))
		e.must(err, "Suspend")
		e.wake(at(time.Minute), 0)
		resumed := e.claimOne(acme, at(time.Minute+time.Second))
		e.wantRuns(l.ExecutionID,
			runWant{1, "worker-1", base, ptr(at(time.Second)), store.RunSuspended, ""},
			runWant{1, "worker-1", at(time.Minute + time.Second), nil, "", ""})
		_, err = e.complete(resumed, at(time.Minute+2*time.Second), nil)
		e.must(err, "Complete")
	})

	t.Run("HistoryIsBoundedAndGoesWithItsExecution", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		x := e.submit(acme, base, job("echo"))
		now := base
		for range store.MaxRunsKept + 5 {
			l := e.claimOne(acme, now)
			now = now.Add(time.Second)
			_, err := e.release(l, now)
			e.must(err, "Release")
		}
		runs := e.runs(x.ID)
		if len(runs) != store.MaxRunsKept {
			t.Fatalf("%d runs kept, want the latest %d", len(runs), store.MaxRunsKept)
		}
		if runs[0].Attempt != 6 || runs[len(runs)-1].Attempt != store.MaxRunsKept+5 {
			t.Errorf("kept attempts %d..%d, want 6..%d (the oldest go first)",
				runs[0].Attempt, runs[len(runs)-1].Attempt, store.MaxRunsKept+5)
		}
		_, err := e.s.Runs(e.ctx, &store.RunsParams{Tenant: globex, ID: x.ID})
		wantErr(t, "Runs as another tenant", err, store.ErrNotFound)
		e.must(e.del(acme, x.ID, true, now), "Delete")
		_, err = e.s.Runs(e.ctx, &store.RunsParams{ID: x.ID})
		wantErr(t, "Runs of a deleted execution", err, store.ErrNotFound)
		if fresh := e.submit(acme, now, job("echo")); len(e.runs(fresh.ID)) != 0 {
			t.Error("an execution never claimed has runs")
		}
	})
}

// runWant is one expected run: attempt, worker, claimed, ended, outcome, error.
type runWant struct {
	attempt int
	worker  string
	claimed time.Time
	ended   *time.Time
	outcome store.RunOutcome
	err     string
}

func ptr(t time.Time) *time.Time { return &t }

func (e *env) runs(id string) []*store.Run {
	e.t.Helper()
	runs, err := e.s.Runs(e.ctx, &store.RunsParams{ID: id})
	e.must(err, "Runs "+id)
	return runs
}

// wantRuns asserts an execution's history, oldest run first.
func (e *env) wantRuns(id string, want ...runWant) []*store.Run {
	e.t.Helper()
	got := e.runs(id)
	if len(got) != len(want) {
		e.t.Fatalf("execution %s has %d runs, want %d", id, len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Attempt != w.attempt || g.WorkerID != w.worker || g.Outcome != w.outcome || g.Error != w.err {
			e.t.Errorf("run %d: attempt %d worker %q outcome %q error %q, want %d %q %q %q",
				i, g.Attempt, g.WorkerID, g.Outcome, g.Error, w.attempt, w.worker, w.outcome, w.err)
		}
		wantTime(e.t, "ClaimedAt", g.ClaimedAt, w.claimed)
		if w.ended == nil {
			if g.EndedAt != nil {
				e.t.Errorf("run %d: EndedAt %s, want none (it runs)", i, fmtTime(*g.EndedAt))
			}
		} else {
			wantTimePtr(e.t, "EndedAt", g.EndedAt, *w.ended)
		}
	}
	return got
}
