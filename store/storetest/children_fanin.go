package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testChildrenFanIn covers fan-in waits (Suspend with Children) one call
// at a time: the wait's condition, its timeout, and every operation that
// ends a child waking the parent.
func testChildrenFanIn(t *testing.T, ns NewStore) {
	t.Run("FanInWaitsForAll", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		ids := e.wantSpawn(l, at(time.Second), "ship", "", children(3)...)
		cs := e.claimChildren(at(2*time.Second), ids...)
		e.wantFanIn(l, at(3*time.Second), "join", "ship", 0, 0, store.StatusSuspended)
		e.wantSuspended(l.ExecutionID, "join", store.ChildrenWaitFor("ship"), time.Time{})
		_, err := e.complete(cs[0], at(4*time.Second), mustJSON(`{"parcel":0}`))
		e.must(err, "Complete child 0")
		_, err = e.fail(cs[1], at(5*time.Second), "boom", false, 0)
		e.must(err, "Fail child 1")
		_, err = e.cancel(acme, ids[2], at(6*time.Second))
		e.must(err, "Cancel child 2")
		e.wantSuspended(l.ExecutionID, "join", store.ChildrenWaitFor("ship"), time.Time{})
		_, err = e.release(cs[2], at(7*time.Second))
		e.must(err, "Release of the cancel-requested child 2")
		e.wantResumed(l.ExecutionID)
		r := e.wantFanInStep(l.ExecutionID, "join", ids,
			[]store.Status{store.StatusSucceeded, store.StatusFailed, store.StatusCancelled}, false)
		wantJSON(t, "child 0 result in the fan-in step", r.Children[0].Result, mustJSON(`{"parcel":0}`))
		if r.Children[1].Error != "boom" {
			t.Errorf("child 1 error in the fan-in step %q, want \"boom\"", r.Children[1].Error)
		}
		resumed := e.claimLeaseOf(l.ExecutionID, at(8*time.Second))
		if resumed.Attempt != 1 {
			t.Errorf("resumed parent at attempt %d, want 1 (a resume)", resumed.Attempt)
		}
		if _, ok := resumed.Steps["join"]; !ok {
			t.Error("the resumed parent's lease does not carry the fan-in step")
		}
		if n := e.wake(at(24*time.Hour), 0); n != 0 {
			t.Errorf("Wake after the wait ended woke %d, want 0", n)
		}
		e.wantInflight(acme, 1)
	})

	t.Run("FanInCount", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		ids := e.wantSpawn(l, at(time.Second), "ship", "", children(3)...)
		cs := e.claimChildren(at(2*time.Second), ids...)
		e.wantFanIn(l, at(3*time.Second), "first two", "ship", 2, 0, store.StatusSuspended)
		_, err := e.complete(cs[0], at(4*time.Second), mustJSON(`0`))
		e.must(err, "Complete child 0")
		e.wantSuspended(l.ExecutionID, "first two", store.ChildrenWaitFor("ship"), time.Time{})
		_, err = e.complete(cs[2], at(5*time.Second), mustJSON(`2`))
		e.must(err, "Complete child 2")
		e.wantResumed(l.ExecutionID)
		e.wantFanInStep(l.ExecutionID, "first two", ids,
			[]store.Status{store.StatusSucceeded, store.StatusRunning, store.StatusSucceeded}, false)
		// The last child's end finds no wait: the step stays as recorded.
		before := e.steps(l.ExecutionID)
		_, err = e.complete(cs[1], at(6*time.Second), mustJSON(`1`))
		e.must(err, "Complete child 1")
		e.wantResumed(l.ExecutionID)
		after := e.steps(l.ExecutionID)
		if len(after) != len(before) || !sameJSON(after[len(after)-1].Result, before[len(before)-1].Result) {
			t.Errorf("a child's end after the wait ended changed the parent's journal")
		}
		e.wantInflight(acme, 1)
	})

	t.Run("FanInAlreadyHolds", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		ids := e.wantSpawn(l, at(time.Second), "ship", "", children(2)...)
		cs := e.claimChildren(at(2*time.Second), ids...)
		_, err := e.complete(cs[0], at(3*time.Second), mustJSON(`0`))
		e.must(err, "Complete child 0")
		e.wantFanIn(l, at(4*time.Second), "one", "ship", 1, time.Hour, store.StatusQueued)
		e.wantResumed(l.ExecutionID)
		e.wantFanInStep(l.ExecutionID, "one", ids, []store.Status{store.StatusSucceeded, store.StatusRunning}, false)
		l = e.claimLeaseOf(l.ExecutionID, at(5*time.Second))
		_, err = e.complete(cs[1], at(6*time.Second), mustJSON(`1`))
		e.must(err, "Complete child 1")
		e.wantStatus(l.ExecutionID, store.StatusRunning)
		e.wantFanIn(l, at(7*time.Second), "all", "ship", 0, 0, store.StatusQueued)
		e.wantFanInStep(l.ExecutionID, "all", ids, statuses(2, store.StatusSucceeded), false)
		// A repeat of a recorded wait resumes at once, the step unchanged.
		l = e.claimLeaseOf(l.ExecutionID, at(8*time.Second))
		e.wantFanIn(l, at(9*time.Second), "one", "ship", 1, 0, store.StatusQueued)
		e.wantFanInStep(l.ExecutionID, "one", ids, []store.Status{store.StatusSucceeded, store.StatusRunning}, false)
		if n := e.wake(at(24*time.Hour), 0); n != 0 {
			t.Errorf("Wake woke %d, want 0 (no wait was left suspended)", n)
		}
		e.wantInflight(acme, 1)
	})

	t.Run("FanInTimesOut", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		ids := e.wantSpawn(l, at(time.Second), "ship", "", children(2)...)
		cs := e.claimChildren(at(2*time.Second), ids...)
		_, err := e.heartbeat(cs[1], at(3*time.Second), time.Hour)
		e.must(err, "heartbeat of child 1")
		e.wantFanIn(l, at(3*time.Second), "join", "ship", 0, time.Minute, store.StatusSuspended)
		e.wantSuspended(l.ExecutionID, "join", store.ChildrenWaitFor("ship"), at(time.Minute+3*time.Second))
		_, err = e.complete(cs[0], at(4*time.Second), mustJSON(`0`))
		e.must(err, "Complete child 0")
		if n := e.wake(at(time.Minute+2*time.Second), 0); n != 0 {
			t.Errorf("Wake before the timeout woke %d, want 0", n)
		}
		if n := e.wake(at(time.Minute+3*time.Second), 0); n != 1 {
			t.Errorf("Wake at the timeout woke %d, want 1", n)
		}
		e.wantResumed(l.ExecutionID)
		e.wantFanInStep(l.ExecutionID, "join", ids, []store.Status{store.StatusSucceeded, store.StatusRunning}, true)
		_, err = e.complete(cs[1], at(2*time.Minute), mustJSON(`1`))
		e.must(err, "Complete child 1 after the timeout")
		e.wantResumed(l.ExecutionID)
		e.wantFanInStep(l.ExecutionID, "join", ids, []store.Status{store.StatusSucceeded, store.StatusRunning}, true)
		if n := e.wake(at(24*time.Hour), 0); n != 0 {
			t.Errorf("Wake after the timeout ended the wait woke %d, want 0", n)
		}
		e.wantInflight(acme, 1)
	})

	t.Run("FanInInvalid", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		e.wantSpawn(l, at(time.Second), "ship", "", children(2)...)
		_, err := e.recordStep(l, at(time.Second), "plain", `{"children":"no"}`)
		e.must(err, "RecordStep")
		for _, c := range []struct {
			what, children string
			count          int
		}{
			{"an unknown spawn step", "nope", 0},
			{"a step that is not a spawn", "plain", 0},
			{"a count above the spawn's children", "ship", 3},
			{"a negative count", "ship", -1},
		} {
			_, err := e.fanIn(l, at(2*time.Second), "join", c.children, c.count, 0)
			wantErr(t, "fan-in on "+c.what, err, store.ErrInvalid)
		}
		e.wantStatus(l.ExecutionID, store.StatusRunning)
		if _, err := e.heartbeat(l, at(3*time.Second), leaseFor); err != nil {
			t.Errorf("heartbeat after refused fan-ins: %v, want the lease kept", err)
		}
		if len(e.steps(l.ExecutionID)) != 2 {
			t.Error("a refused fan-in recorded a step")
		}
		e.wantInflight(acme, 3)
	})

	t.Run("SignalOfTheSameNameDoesNotEndIt", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		ids := e.wantSpawn(l, at(time.Second), "ship", "", child(0))
		e.wantFanIn(l, at(2*time.Second), "join", "ship", 0, 0, store.StatusSuspended)
		e.wantSignal(l.ExecutionID, store.ChildrenWaitFor("ship"), `"fake"`, at(3*time.Second), false)
		e.wantSuspended(l.ExecutionID, "join", store.ChildrenWaitFor("ship"), time.Time{})
		// And a signal wait of that name is not a fan-in wait.
		other := e.submit(acme, at(4*time.Second), job("other")).ID
		m := e.claimKind("other", at(4*time.Second), 1)[other]
		e.wantSpawn(m, at(4*time.Second), "ship", "", job("idle"))
		_, err := e.wait(m, at(5*time.Second), "signal", store.ChildrenWaitFor("ship"), 0)
		e.must(err, "Suspend (signal wait)")
		_, err = e.cancel(acme, e.listChildren(store.ListParams{ParentID: m.ExecutionID})[0].ID, at(6*time.Second))
		e.must(err, "Cancel of the signal waiter's child")
		e.wantSuspended(m.ExecutionID, "signal", store.ChildrenWaitFor("ship"), time.Time{})
		e.claimLeaseOf(ids[0], at(7*time.Second))
		e.wantInflight(acme, 3)
	})

	t.Run("RetriedChildIsInFlightAgain", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		ids := e.wantSpawn(l, at(time.Second), "ship", store.ParentEndAbandon, children(2)...)
		cs := e.claimChildren(at(2*time.Second), ids...)
		_, err := e.fail(cs[0], at(3*time.Second), "boom", false, 0)
		e.must(err, "Fail child 0")
		_, err = e.s.Retry(e.ctx, &store.RetryParams{Tenant: acme, ID: ids[0], Now: at(4 * time.Second)})
		e.must(err, "Retry child 0")
		e.wantFanIn(l, at(5*time.Second), "join", "ship", 0, 0, store.StatusSuspended)
		_, err = e.complete(cs[1], at(6*time.Second), mustJSON(`1`))
		e.must(err, "Complete child 1")
		e.wantSuspended(l.ExecutionID, "join", store.ChildrenWaitFor("ship"), time.Time{})
		again := e.claimChildren(at(7*time.Second), ids[0])[0]
		_, err = e.complete(again, at(8*time.Second), mustJSON(`0`))
		e.must(err, "Complete the retried child 0")
		e.wantResumed(l.ExecutionID)
		e.wantFanInStep(l.ExecutionID, "join", ids, statuses(2, store.StatusSucceeded), false)
		e.wantInflight(acme, 1)
	})

	t.Run("DeletedChildShowsDeleted", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		ids := e.wantSpawn(l, at(time.Second), "ship", "", children(3)...)
		cs := e.claimChildren(at(2*time.Second), ids...)
		_, err := e.complete(cs[0], at(3*time.Second), mustJSON(`0`))
		e.must(err, "Complete child 0")
		e.must(e.del(acme, ids[0], false, at(4*time.Second)), "Delete child 0")
		e.wantFanIn(l, at(5*time.Second), "join", "ship", 0, 0, store.StatusSuspended)
		e.must(e.del(acme, ids[1], true, at(6*time.Second)), "force Delete of the running child 1")
		e.wantSuspended(l.ExecutionID, "join", store.ChildrenWaitFor("ship"), time.Time{})
		_, err = e.complete(cs[2], at(7*time.Second), mustJSON(`2`))
		e.must(err, "Complete child 2")
		e.wantResumed(l.ExecutionID)
		e.wantFanInStep(l.ExecutionID, "join", ids,
			[]store.Status{store.StatusDeleted, store.StatusDeleted, store.StatusSucceeded}, false)
		e.wantInflight(acme, 1)
	})

	t.Run("ResultsBeyondTheJournalBoundAreOmitted", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		ids := e.wantSpawn(l, at(time.Second), "ship", "", children(3)...)
		cs := e.claimChildren(at(2*time.Second), ids...)
		for i, c := range cs {
			_, err := e.complete(c, at(3*time.Second), mustJSON(fmt.Sprintf(`{"pad":%q}`, fmt.Sprintf("%0400d", i))))
			e.must(err, "Complete child")
		}
		// Room for the spawn step, the bare fan-in step and one result.
		x, err := e.s.Suspend(e.ctx, &store.SuspendParams{
			ExecutionID: l.ExecutionID, Tenant: acme, Token: l.Token, Step: "join", Children: "ship",
			MaxJournalBytes: 1000, Now: at(4 * time.Second),
		})
		e.must(err, "fan-in within a small journal")
		if x.Status != store.StatusQueued {
			t.Fatalf("fan-in that holds: %s, want queued", x.Status)
		}
		r := e.fanInOf(l.ExecutionID, "join")
		if !r.ResultsOmitted || len(r.Children) != 3 {
			t.Fatalf("fan-in step: %d children, results_omitted %v; want 3 and true", len(r.Children), r.ResultsOmitted)
		}
		if r.Children[0].Result == nil || r.Children[2].Result != nil {
			t.Errorf("fan-in step keeps results %v %v %v, want the first only (spawn order, while they fit)",
				r.Children[0].Result != nil, r.Children[1].Result != nil, r.Children[2].Result != nil)
		}
		e.wantInflight(acme, 1)
	})

	testChildEnds(t, ns)
}

// testChildEnds checks that every operation ending a child wakes its
// parent's fan-in wait, each in a store of its own.
func testChildEnds(t *testing.T, ns NewStore) {
	type ender func(e *env, c store.Lease, id string, now time.Time)
	cancelThen := func(then ender) ender {
		return func(e *env, c store.Lease, id string, now time.Time) {
			_, err := e.cancel(acme, id, now)
			e.must(err, "Cancel of the running child")
			if x := e.get(id); x.Status != store.StatusRunning || !x.CancelRequested {
				e.t.Fatalf("cancelled running child: %s CancelRequested %v", x.Status, x.CancelRequested)
			}
			then(e, c, id, now)
		}
	}
	release := func(e *env, c store.Lease, _ string, now time.Time) {
		_, err := e.release(c, now)
		e.must(err, "Release")
	}
	sleep := func(e *env, c store.Lease, _ string, now time.Time) {
		_, err := e.sleep(c, now, "nap", now.Add(time.Hour))
		e.must(err, "Suspend")
	}
	complete := func(e *env, c store.Lease, _ string, now time.Time) {
		_, err := e.complete(c, now, mustJSON(`"ok"`))
		e.must(err, "Complete")
	}
	rescue := func(e *env, _ store.Lease, _ string, now time.Time) {
		e.rescue(now.Add(time.Hour), 0)
	}
	cancel := func(e *env, _ store.Lease, id string, now time.Time) {
		_, err := e.cancel(acme, id, now)
		e.must(err, "Cancel")
	}
	cases := []struct {
		name  string
		sub   func(*store.Submission)
		claim bool
		end   ender
		want  store.Status
	}{
		{name: "Complete", claim: true, end: complete, want: store.StatusSucceeded},
		{name: "Fail", claim: true, want: store.StatusFailed, end: func(e *env, c store.Lease, _ string, now time.Time) {
			_, err := e.fail(c, now, "boom", false, 0)
			e.must(err, "Fail")
		}},
		{name: "FailWithoutAttemptsLeft", claim: true, want: store.StatusFailed, end: func(e *env, c store.Lease, _ string, now time.Time) {
			_, err := e.fail(c, now, "boom", true, time.Second)
			e.must(err, "Fail with retry")
		}},
		{name: "CancelQueued", end: cancel, want: store.StatusCancelled},
		{name: "CancelScheduled", sub: func(s *store.Submission) { s.RunAt = at(time.Hour) }, end: cancel, want: store.StatusCancelled},
		{name: "CancelSuspended", claim: true, want: store.StatusCancelled, end: func(e *env, c store.Lease, id string, now time.Time) {
			sleep(e, c, id, now)
			cancel(e, c, id, now)
		}},
		{name: "CancelRequestedThenRelease", claim: true, end: cancelThen(release), want: store.StatusCancelled},
		{name: "CancelRequestedThenSuspend", claim: true, end: cancelThen(sleep), want: store.StatusCancelled},
		{name: "CancelRequestedThenComplete", claim: true, end: cancelThen(complete), want: store.StatusCancelled},
		{name: "CancelRequestedThenRescue", claim: true, end: cancelThen(rescue), want: store.StatusCancelled},
		{name: "RescueWithoutAttemptsLeft", claim: true, end: rescue, want: store.StatusFailed},
		{name: "ForceDelete", claim: true, want: store.StatusDeleted, end: func(e *env, _ store.Lease, id string, now time.Time) {
			e.must(e.del(acme, id, true, now), "force Delete")
		}},
	}
	for _, c := range cases {
		t.Run("ChildEnd/"+c.name, func(t *testing.T) {
			e := start(t, ns)
			l := e.run(acme, base, job("flow"))
			sub := child(0)
			sub.MaxAttempts = 1
			if c.sub != nil {
				c.sub(&sub)
			}
			ids := e.wantSpawn(l, at(time.Second), "ship", "", sub)
			var cl store.Lease
			if c.claim {
				cl = e.claimChildren(at(2*time.Second), ids...)[0]
			}
			e.wantFanIn(l, at(3*time.Second), "join", "ship", 0, 0, store.StatusSuspended)
			c.end(e, cl, ids[0], at(4*time.Second))
			e.wantResumed(l.ExecutionID)
			e.wantFanInStep(l.ExecutionID, "join", ids, []store.Status{c.want}, false)
			e.claimLeaseOf(l.ExecutionID, at(2*time.Hour))
			e.wantInflight(acme, 1)
		})
	}

	t.Run("ChildEnd/FailWithRetryIsNoEnd", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		ids := e.wantSpawn(l, at(time.Second), "ship", "", child(0))
		cl := e.claimChildren(at(2*time.Second), ids...)[0]
		e.wantFanIn(l, at(3*time.Second), "join", "ship", 0, 0, store.StatusSuspended)
		_, err := e.fail(cl, at(4*time.Second), "again", true, time.Minute)
		e.must(err, "Fail with retry")
		e.wantStatus(ids[0], store.StatusScheduled)
		e.wantSuspended(l.ExecutionID, "join", store.ChildrenWaitFor("ship"), time.Time{})
		_, err = e.release(e.claimChildren(at(2*time.Minute), ids...)[0], at(2*time.Minute))
		e.must(err, "Release")
		e.wantSuspended(l.ExecutionID, "join", store.ChildrenWaitFor("ship"), time.Time{})
		e.wantInflight(acme, 2)
	})
}
