package storetest

import (
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// family is a running parent with a child in every status, a grandchild
// and an abandoned child (newFamily).
type family struct {
	parent store.Lease
	// Spawned under "work" with on_parent_end cancel.
	queued, scheduled, running, suspended, done string
	runningLease                                store.Lease
	// Spawned by running under "sub", cancel.
	grandchild string
	// Spawned under "side" with on_parent_end abandon, queued.
	loose string
}

// familyEnd is when the tests of a parent's end end the parent: before its
// lease (leaseFor) expires, after the family was built.
var familyEnd = at(10 * time.Second)

// newFamily builds a family in acme whose parent has maxAttempts. The
// children of "work" are of kind "idle" (queued), "child" (the others);
// the grandchild "grandchild"; the abandoned child "loose": a test claims
// each kind on its own.
func newFamily(e *env, maxAttempts int) *family {
	e.t.Helper()
	f := &family{parent: e.run(acme, base, store.Submission{Kind: "flow", Payload: mustJSON(`{}`), MaxAttempts: maxAttempts})}
	idle := job("idle")
	later := child(1)
	later.RunAt = at(2 * time.Hour)
	ids := e.wantSpawn(f.parent, at(time.Second), "work", store.ParentEndCancel, idle, later, child(2), child(3), child(4))
	f.queued, f.scheduled, f.running, f.suspended, f.done = ids[0], ids[1], ids[2], ids[3], ids[4]
	f.loose = e.wantSpawn(f.parent, at(time.Second), "side", store.ParentEndAbandon, job("loose"))[0]
	leases := map[string]store.Lease{}
	for _, l := range e.claim(store.ClaimParams{Tenant: acme, Kinds: []string{"child"}, Max: 10, LeaseDuration: time.Hour, Now: at(2 * time.Second)}) {
		leases[l.ExecutionID] = l
	}
	if len(leases) != 3 {
		e.t.Fatalf("family: claimed %d children, want 3", len(leases))
	}
	f.runningLease = leases[f.running]
	_, err := e.complete(leases[f.done], at(3*time.Second), mustJSON(`"done"`))
	e.must(err, "Complete child")
	_, err = e.sleep(leases[f.suspended], at(3*time.Second), "nap", at(3*time.Hour))
	e.must(err, "Suspend child")
	f.grandchild = e.wantSpawn(f.runningLease, at(3*time.Second), "sub", "", job("grandchild"))[0]
	e.wantInflight(acme, 7)
	return f
}

// wantCascade asserts the family after its parent's end at now: every
// live child spawned with cancel, and theirs, cancelled or (running)
// cancel-requested; the rest as it was; none of them claimable.
func (e *env) wantCascade(f *family, now time.Time) {
	e.t.Helper()
	for _, id := range []string{f.queued, f.scheduled, f.suspended, f.grandchild} {
		e.wantCancelled(id, now)
	}
	e.wantCancelRequested(f.running)
	e.wantStatus(f.done, store.StatusSucceeded)
	x := e.wantStatus(f.loose, store.StatusQueued)
	if x.ParentID != f.parent.ExecutionID {
		e.t.Errorf("abandoned child: ParentID %q, want %q (its parent still exists)", x.ParentID, f.parent.ExecutionID)
	}
	for _, kind := range []string{"idle", "child", "grandchild"} {
		if got := e.claimKind(kind, at(4*time.Hour), 10); len(got) != 0 {
			e.t.Errorf("after the parent's end %d executions of kind %s were claimed, want none", len(got), kind)
		}
	}
	// The running child's worker learns the cancel and ends it cancelled.
	hb, err := e.heartbeat(f.runningLease, now.Add(time.Second), time.Hour)
	e.must(err, "heartbeat of the running child")
	if !hb.CancelRequested {
		e.t.Error("the running child's heartbeat does not report the cancel")
	}
}

// testChildrenEnd covers a parent's end: each operation that ends, cancels
// or deletes a parent, in a store of its own.
func testChildrenEnd(t *testing.T, ns NewStore) {
	ends := []struct {
		name        string
		maxAttempts int
		end         func(e *env, f *family) time.Time
		parent      store.Status
	}{
		{"Complete", 3, func(e *env, f *family) time.Time {
			_, err := e.complete(f.parent, familyEnd, mustJSON(`"ok"`))
			e.must(err, "Complete parent")
			return familyEnd
		}, store.StatusSucceeded},
		{"Fail", 3, func(e *env, f *family) time.Time {
			_, err := e.fail(f.parent, familyEnd, "boom", false, 0)
			e.must(err, "Fail parent")
			return familyEnd
		}, store.StatusFailed},
		{"FailWithoutAttemptsLeft", 1, func(e *env, f *family) time.Time {
			_, err := e.fail(f.parent, familyEnd, "boom", true, time.Second)
			e.must(err, "Fail parent")
			return familyEnd
		}, store.StatusFailed},
		{"CancelRunning", 3, func(e *env, f *family) time.Time {
			_, err := e.cancel(acme, f.parent.ExecutionID, familyEnd)
			e.must(err, "Cancel parent")
			return familyEnd
		}, store.StatusRunning},
		{"CancelSuspended", 3, func(e *env, f *family) time.Time {
			_, err := e.sleep(f.parent, familyEnd, "nap", at(time.Hour))
			e.must(err, "Suspend parent")
			_, err = e.cancel(acme, f.parent.ExecutionID, familyEnd)
			e.must(err, "Cancel parent")
			return familyEnd
		}, store.StatusCancelled},
		{"RescueWithoutAttemptsLeft", 1, func(e *env, f *family) time.Time {
			now := at(time.Minute)
			e.rescue(now, 0)
			return now
		}, store.StatusFailed},
	}
	for _, c := range ends {
		t.Run("ParentEnd/"+c.name, func(t *testing.T) {
			e := start(t, ns)
			f := newFamily(e, c.maxAttempts)
			now := c.end(e, f)
			e.wantStatus(f.parent.ExecutionID, c.parent)
			e.wantCascade(f, now)
			n := 2 // the running child and the abandoned one
			if !c.parent.Terminal() {
				n++
			}
			e.wantInflight(acme, n)
		})
	}

	t.Run("ParentEnd/CancelRequestedParentEndsWithoutMoreCascade", func(t *testing.T) {
		e := start(t, ns)
		f := newFamily(e, 3)
		_, err := e.cancel(acme, f.parent.ExecutionID, familyEnd)
		e.must(err, "Cancel parent")
		_, err = e.release(f.parent, familyEnd.Add(time.Second))
		e.must(err, "Release of the cancel-requested parent")
		e.wantStatus(f.parent.ExecutionID, store.StatusCancelled)
		e.wantCascade(f, familyEnd)
		e.wantInflight(acme, 2)
	})

	t.Run("ParentEnd/RetryIsNoEnd", func(t *testing.T) {
		e := start(t, ns)
		f := newFamily(e, 3)
		_, err := e.fail(f.parent, familyEnd, "again", true, time.Minute)
		e.must(err, "Fail parent with retry")
		e.wantStatus(f.parent.ExecutionID, store.StatusScheduled)
		e.wantStatus(f.queued, store.StatusQueued)
		e.wantStatus(f.scheduled, store.StatusScheduled)
		e.wantStatus(f.suspended, store.StatusSuspended)
		e.wantStatus(f.grandchild, store.StatusQueued)
		if x := e.wantStatus(f.running, store.StatusRunning); x.CancelRequested {
			t.Error("a parent's retry requested its running child's cancel")
		}
		e.wantInflight(acme, 7)
	})

	t.Run("ParentEnd/ForceDelete", func(t *testing.T) {
		e := start(t, ns)
		f := newFamily(e, 3)
		e.must(e.del(acme, f.parent.ExecutionID, true, familyEnd), "force Delete of the parent")
		for _, id := range []string{f.parent.ExecutionID, f.queued, f.scheduled, f.running, f.suspended, f.done, f.grandchild} {
			e.gone(id)
		}
		x := e.wantStatus(f.loose, store.StatusQueued)
		if x.ParentID != "" || x.ParentStep != "" {
			t.Errorf("abandoned child of a deleted parent: ParentID %q ParentStep %q, want both empty", x.ParentID, x.ParentStep)
		}
		_, err := e.complete(f.runningLease, familyEnd, nil)
		wantErr(t, "Complete of a child deleted with its parent", err, store.ErrLeaseLost)
		e.wantChildren(acme, f.parent.ExecutionID, 10)
		if got := e.claimKind("loose", familyEnd, 10); len(got) != 1 {
			t.Errorf("the abandoned child was not claimable after its parent's delete (%d claimed)", len(got))
		}
		e.wantInflight(acme, 1)
	})

	t.Run("ParentEnd/DeleteTerminalFamily", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		ids := e.wantSpawn(l, at(time.Second), "work", "", children(2)...)
		loose := e.wantSpawn(l, at(time.Second), "side", store.ParentEndAbandon, job("loose"), job("loose"))
		cs := e.claimChildren(at(2*time.Second), ids...)
		for _, c := range cs {
			_, err := e.complete(c, at(3*time.Second), nil)
			e.must(err, "Complete child")
		}
		ll := e.claimKind("loose", at(3*time.Second), 1)
		for _, c := range ll {
			_, err := e.complete(c, at(3*time.Second), nil)
			e.must(err, "Complete abandoned child")
		}
		_, err := e.complete(l, at(4*time.Second), nil)
		e.must(err, "Complete parent")
		e.must(e.del(acme, l.ExecutionID, false, at(5*time.Second)), "Delete parent")
		e.gone(l.ExecutionID)
		for _, id := range append(append([]string{}, ids...), loose...) {
			if _, ended := ll[id]; ended {
				e.gone(id)
				continue
			}
			if !contains(ids, id) {
				x := e.wantStatus(id, store.StatusQueued)
				if x.ParentID != "" {
					t.Errorf("abandoned child in flight: ParentID %q after its parent's delete, want empty", x.ParentID)
				}
				continue
			}
			e.gone(id)
		}
		e.wantInflight(acme, 1)
	})

	t.Run("ParentEnd/CancelOfAWaitingParent", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		ids := e.wantSpawn(l, at(time.Second), "work", "", children(3)...)
		e.wantFanIn(l, at(2*time.Second), "join", "work", 0, time.Hour, store.StatusSuspended)
		_, err := e.cancel(acme, l.ExecutionID, at(3*time.Second))
		e.must(err, "Cancel of the waiting parent")
		e.wantCancelled(l.ExecutionID, at(3*time.Second))
		for _, id := range ids {
			e.wantCancelled(id, at(3*time.Second))
		}
		e.wantJournal(l.ExecutionID, [2]string{"work", string(store.SpawnStep(ids))})
		if n := e.wake(at(2*time.Hour), 0); n != 0 {
			t.Errorf("Wake woke %d after the parent was cancelled, want 0", n)
		}
		e.claimNone(acme, at(2*time.Hour))
		e.wantInflight(acme, 0)
	})

	t.Run("ParentEnd/MiddleOfThreeGenerations", func(t *testing.T) {
		e := start(t, ns)
		top := e.run(acme, base, job("flow"))
		mid := e.wantSpawn(top, at(time.Second), "mid", "", job("mid"))
		ml := e.claimKind("mid", at(2*time.Second), 1)[mid[0]]
		low := e.wantSpawn(ml, at(3*time.Second), "low", "", children(2)...)
		e.wantFanIn(top, at(4*time.Second), "join", "mid", 0, 0, store.StatusSuspended)
		// The middle one's end wakes its parent and cancels its children.
		_, err := e.fail(ml, at(5*time.Second), "mid failed", false, 0)
		e.must(err, "Fail of the middle generation")
		for _, id := range low {
			e.wantCancelled(id, at(5*time.Second))
		}
		e.wantResumed(top.ExecutionID)
		e.wantFanInStep(top.ExecutionID, "join", mid, []store.Status{store.StatusFailed}, false)
		e.wantInflight(acme, 1)
	})
}

func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
