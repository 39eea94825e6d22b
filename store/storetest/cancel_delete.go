package storetest

import (
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testCancel covers Store.Cancel in every state.
func testCancel(t *testing.T, ns NewStore) {
	t.Run("QueuedIsCancelledAtOnce", func(t *testing.T) {
		e := start(t, ns)
		x := e.submit(acme, base, job("echo"))
		now := at(time.Second)
		got, err := e.cancel(acme, x.ID, now)
		e.must(err, "Cancel")
		wantFinished(t, "Cancel answer", got, store.StatusCancelled, now)
		sameExecution(t, "Get after Cancel", e.get(x.ID), got)
		e.claimNone(acme, now)
		e.claimNone(acme, at(time.Hour))
		e.wantInflight(acme, 0)
	})

	t.Run("ScheduledIsCancelledAtOnce", func(t *testing.T) {
		e := start(t, ns)
		sub := job("echo")
		sub.RunAt = at(time.Hour)
		x := e.submit(acme, base, sub)
		got, err := e.cancel(acme, x.ID, at(time.Second))
		e.must(err, "Cancel")
		wantFinished(t, "Cancel answer", got, store.StatusCancelled, at(time.Second))
		if n := e.promote(at(2*time.Hour), 0); n != 0 {
			t.Errorf("Promote moved %d executions, want 0", n)
		}
		e.claimNone(acme, at(2*time.Hour))
		e.wantStatus(x.ID, store.StatusCancelled)
		e.wantInflight(acme, 0)
	})

	t.Run("RunningRecordsRequest", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("echo"))
		got, err := e.cancel(acme, l.ExecutionID, at(time.Second))
		e.must(err, "Cancel")
		if got.Status != store.StatusRunning || !got.CancelRequested {
			t.Errorf("Cancel of a running execution answered status %s cancel_requested %v, want running true",
				got.Status, got.CancelRequested)
		}
		// A fresh read shows it: the request is durable, not a process flag.
		fresh := e.get(l.ExecutionID)
		if fresh.Status != store.StatusRunning || !fresh.CancelRequested {
			t.Errorf("Get after Cancel: status %s cancel_requested %v, want running true", fresh.Status, fresh.CancelRequested)
		}
		hb, err := e.heartbeat(l, at(2*time.Second), leaseFor)
		e.must(err, "Heartbeat")
		if !hb.CancelRequested {
			t.Error("Heartbeat does not report the cancel request")
		}
		e.claimNone(acme, at(3*time.Second))
		e.wantInflight(acme, 1)
	})

	// Every way a running attempt ends turns a requested cancel into cancelled.
	ends := []struct {
		name string
		end  func(e *env, l store.Lease, now time.Time) (*store.Execution, error)
	}{
		{"FailWithRetry", func(e *env, l store.Lease, now time.Time) (*store.Execution, error) {
			return e.fail(l, now, "stopped", true, 0)
		}},
		{"Fail", func(e *env, l store.Lease, now time.Time) (*store.Execution, error) {
			return e.fail(l, now, "stopped", false, 0)
		}},
		{"Complete", func(e *env, l store.Lease, now time.Time) (*store.Execution, error) {
			return e.complete(l, now, nil)
		}},
		{"Release", func(e *env, l store.Lease, now time.Time) (*store.Execution, error) {
			return e.release(l, now)
		}},
	}
	for _, end := range ends {
		t.Run("RunningThen"+end.name+"EndsCancelled", func(t *testing.T) {
			e := start(t, ns)
			l := e.run(acme, base, job("echo"))
			_, err := e.cancel(acme, l.ExecutionID, at(time.Second))
			e.must(err, "Cancel")
			now := at(2 * time.Second)
			x, err := end.end(e, l, now)
			e.must(err, end.name)
			wantFinished(t, end.name+" after a cancel request", x, store.StatusCancelled, now)
			sameExecution(t, "Get", e.get(l.ExecutionID), x)
			e.claimNone(acme, at(time.Hour))
			e.wantInflight(acme, 0)
		})
	}

	t.Run("RunningThenLeaseExpiryEndsCancelled", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("echo"))
		_, err := e.cancel(acme, l.ExecutionID, at(time.Second))
		e.must(err, "Cancel")
		now := at(leaseFor + time.Second)
		if r := e.rescue(now, 0); r != (store.RescueResult{Cancelled: 1}) {
			t.Errorf("Rescue: %+v, want Cancelled 1", r)
		}
		wantFinished(t, "after Rescue", e.get(l.ExecutionID), store.StatusCancelled, now)
		e.checkFenced(l, acme, at(leaseFor+2*time.Second), store.ErrLeaseLost)
		e.claimNone(acme, at(time.Hour))
		e.wantInflight(acme, 0)
	})

	t.Run("TerminalIsUnchanged", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("ok"))
		_, err := e.complete(l, at(time.Second), mustJSON(`{"r":1}`))
		e.must(err, "Complete")
		l = e.run(acme, at(2*time.Second), job("bad"))
		_, err = e.fail(l, at(3*time.Second), "boom", false, 0)
		e.must(err, "Fail")
		x := e.submit(acme, at(4*time.Second), job("gone"))
		_, err = e.cancel(acme, x.ID, at(5*time.Second))
		e.must(err, "Cancel")

		for _, x := range e.list(store.ListParams{Tenant: acme}) {
			got, err := e.cancel(acme, x.ID, at(time.Hour))
			e.must(err, "Cancel of a terminal execution")
			sameExecution(t, "Cancel answer for a terminal execution", got, x)
			sameExecution(t, "terminal execution after Cancel", e.get(x.ID), x)
		}
		e.wantInflight(acme, 0)
	})

	t.Run("IsIdempotent", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("running"))
		q := e.submit(acme, at(time.Second), job("queued"))
		for i := range 2 {
			now := at(time.Duration(10+i) * time.Second)
			_, err := e.cancel(acme, l.ExecutionID, now)
			e.must(err, "Cancel running")
			_, err = e.cancel(acme, q.ID, now)
			e.must(err, "Cancel queued")
		}
		x := e.wantStatus(l.ExecutionID, store.StatusRunning)
		if !x.CancelRequested {
			t.Error("CancelRequested lost by a second Cancel")
		}
		wantFinished(t, "queued cancelled twice", e.get(q.ID), store.StatusCancelled, at(10*time.Second))
		e.wantInflight(acme, 1)
	})

	t.Run("EmptyTenantCancelsAnyTenants", func(t *testing.T) {
		e := start(t, ns)
		x := e.submit(acme, base, job("echo"))
		got, err := e.cancel("", x.ID, at(time.Second))
		e.must(err, `Cancel with Tenant ""`)
		if got.Status != store.StatusCancelled {
			t.Errorf("status %s, want cancelled", got.Status)
		}
		e.wantInflight(acme, 0)
	})

	t.Run("OtherTenantIsNotFound", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		l := e.run(acme, base, job("running"))
		queued := e.submit(acme, at(time.Second), job("queued"))
		for _, id := range []string{queued.ID, l.ExecutionID} {
			before := e.get(id)
			_, err := e.cancel(globex, id, at(2*time.Second))
			wantErr(t, "Cancel of another tenant's execution", err, store.ErrNotFound)
			sameExecution(t, "after a refused Cancel", e.get(id), before)
		}
		e.wantInflight(acme, 2)
	})

	t.Run("UnknownIsNotFound", func(t *testing.T) {
		e := start(t, ns)
		_, err := e.cancel(acme, "01890a5d-ac96-774b-bcce-b302099a8057", base)
		wantErr(t, "Cancel of an unknown execution", err, store.ErrNotFound)
	})
}

// testDelete covers Store.Delete with and without Force.
func testDelete(t *testing.T, ns NewStore) {
	t.Run("NonTerminalNeedsForce", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("running"))
		queued := e.submit(acme, at(time.Second), job("queued"))
		sub := job("scheduled")
		sub.RunAt = at(time.Hour)
		scheduled := e.submit(acme, at(time.Second), sub)
		for _, id := range []string{l.ExecutionID, queued.ID, scheduled.ID} {
			before := e.get(id)
			err := e.del(acme, id, false, at(2*time.Second))
			wantErr(t, "Delete of a "+string(before.Status)+" execution", err, store.ErrNotTerminal)
			sameExecution(t, "after a refused Delete", e.get(id), before)
		}
		_, err := e.heartbeat(l, at(3*time.Second), leaseFor)
		e.must(err, "Heartbeat after a refused Delete")
		e.wantInflight(acme, 3)
	})

	t.Run("TerminalIsRemovedWithItsKey", func(t *testing.T) {
		e := start(t, ns)
		sub := keyed("echo", "k", `{}`)
		l := e.run(acme, base, sub)
		_, err := e.complete(l, at(time.Second), nil)
		e.must(err, "Complete")
		e.must(e.del(acme, l.ExecutionID, false, at(2*time.Second)), "Delete")
		e.gone(l.ExecutionID)
		if xs := e.list(store.ListParams{Tenant: acme}); len(xs) != 0 {
			t.Errorf("List shows %d executions after Delete, want 0", len(xs))
		}
		e.wantInflight(acme, 0)
		// The key is free at once, well within its TTL.
		fresh := e.submit(acme, at(3*time.Second), sub)
		if fresh.ID == l.ExecutionID {
			t.Error("the deleted execution's id came back")
		}
		e.wantInflight(acme, 1)
	})

	t.Run("ForceRemovesQueued", func(t *testing.T) {
		e := start(t, ns)
		sub := keyed("echo", "k", `{}`)
		x := e.submit(acme, base, sub)
		e.must(e.del(acme, x.ID, true, at(time.Second)), "Delete with Force")
		e.gone(x.ID)
		e.wantInflight(acme, 0)
		fresh := e.submit(acme, at(2*time.Second), sub)
		if fresh.ID == x.ID {
			t.Fatal("the key admitted the deleted execution's id again")
		}
		l := e.claimOne(acme, at(3*time.Second))
		if l.ExecutionID != fresh.ID {
			t.Errorf("claimed %s, want only the new execution %s", l.ExecutionID, fresh.ID)
		}
		e.claimNone(acme, at(3*time.Second))
		e.wantInflight(acme, 1)
	})

	t.Run("ForceRemovesScheduled", func(t *testing.T) {
		e := start(t, ns)
		sub := job("echo")
		sub.RunAt = at(time.Hour)
		x := e.submit(acme, base, sub)
		e.must(e.del(acme, x.ID, true, at(time.Second)), "Delete with Force")
		e.gone(x.ID)
		e.claimNone(acme, at(2*time.Hour))
		if n := e.promote(at(2*time.Hour), 0); n != 0 {
			t.Errorf("Promote moved %d executions, want 0", n)
		}
		e.wantInflight(acme, 0)
	})

	t.Run("ForceRemovesRunningAndFencesWorker", func(t *testing.T) {
		e := start(t, ns)
		sub := keyed("echo", "k", `{}`)
		l := e.run(acme, base, sub)
		e.must(e.del(acme, l.ExecutionID, true, at(time.Second)), "Delete with Force")
		e.gone(l.ExecutionID)
		e.wantInflight(acme, 0)
		// store.Store.Delete: the worker gets ErrLeaseLost from then on.
		e.checkFenced(l, acme, at(2*time.Second), store.ErrLeaseLost)
		e.checkFenced(l, "", at(2*time.Second), store.ErrLeaseLost)
		// Its lease expiring brings nothing back.
		if r := e.rescue(at(time.Hour), 0); r != (store.RescueResult{}) {
			t.Errorf("Rescue after the force delete: %+v, want nothing", r)
		}
		e.gone(l.ExecutionID)
		fresh := e.submit(acme, at(time.Hour), sub)
		if fresh.ID == l.ExecutionID {
			t.Error("the key admitted the deleted execution's id again")
		}
		e.wantInflight(acme, 1)
	})

	t.Run("ForceRemovesTerminal", func(t *testing.T) {
		e := start(t, ns)
		x := e.submit(acme, base, job("echo"))
		_, err := e.cancel(acme, x.ID, at(time.Second))
		e.must(err, "Cancel")
		e.must(e.del(acme, x.ID, true, at(2*time.Second)), "Delete with Force")
		e.gone(x.ID)
		e.wantInflight(acme, 0)
	})

	t.Run("EmptyTenantDeletesAnyTenants", func(t *testing.T) {
		e := start(t, ns)
		x := e.submit(acme, base, job("echo"))
		e.must(e.del("", x.ID, true, at(time.Second)), `Delete with Tenant ""`)
		e.gone(x.ID)
		e.wantInflight(acme, 0)
	})

	t.Run("OtherTenantIsNotFound", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		x := e.submit(acme, base, keyed("echo", "k", `{}`))
		for _, force := range []bool{false, true} {
			err := e.del(globex, x.ID, force, at(time.Second))
			wantErr(t, "Delete of another tenant's execution", err, store.ErrNotFound)
		}
		sameExecution(t, "after refused Deletes", e.get(x.ID), x)
		e.dedup(acme, at(2*time.Second), keyed("echo", "k", `{}`), x.ID)
		e.wantInflight(acme, 1)
		e.wantInflight(globex, 0)
	})

	t.Run("UnknownOrAlreadyDeletedIsNotFound", func(t *testing.T) {
		e := start(t, ns)
		wantErr(t, "Delete of an unknown execution", e.del(acme, "01890a5d-ac96-774b-bcce-b302099a8057", true, base), store.ErrNotFound)
		x := e.submit(acme, base, job("echo"))
		e.must(e.del(acme, x.ID, true, at(time.Second)), "Delete")
		wantErr(t, "second Delete", e.del(acme, x.ID, true, at(2*time.Second)), store.ErrNotFound)
		e.wantInflight(acme, 0)
	})
}
