package storetest

import (
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testRescue covers Store.Rescue and invariant I9: an execution whose worker
// died is claimable again once its lease has expired and Rescue has run.
func testRescue(t *testing.T, ns NewStore) {
	t.Run("ExpiredLeaseIsRequeuedAndClaimableAtOnce", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("echo")) // lease until base+30s
		if r := e.rescue(at(leaseFor-time.Second), 0); r != (store.RescueResult{}) {
			t.Errorf("Rescue before the lease expired: %+v, want nothing", r)
		}
		e.wantStatus(l.ExecutionID, store.StatusRunning)

		now := at(leaseFor + time.Second)
		if r := e.rescue(now, 0); r != (store.RescueResult{Requeued: 1}) {
			t.Errorf("Rescue: %+v, want Requeued 1", r)
		}
		x := e.wantStatus(l.ExecutionID, store.StatusQueued)
		if x.Attempt != 1 || x.FinishedAt != nil {
			t.Errorf("rescued: attempt %d finished_at %v, want 1 and nil", x.Attempt, x.FinishedAt)
		}
		e.wantInflight(acme, 1)
		next := e.claimOne(acme, now)
		if next.ExecutionID != l.ExecutionID || next.Attempt != 2 {
			t.Errorf("claimed %s attempt %d, want %s attempt 2", next.ExecutionID, next.Attempt, l.ExecutionID)
		}
		if r := e.rescue(now, 0); r != (store.RescueResult{}) {
			t.Errorf("second Rescue: %+v, want nothing", r)
		}
		e.wantInflight(acme, 1)
	})

	t.Run("SpentAttemptsFail", func(t *testing.T) {
		e := start(t, ns)
		sub := job("echo")
		sub.MaxAttempts = 1
		l := e.run(acme, base, sub)
		now := at(leaseFor + time.Second)
		if r := e.rescue(now, 0); r != (store.RescueResult{Failed: 1}) {
			t.Errorf("Rescue: %+v, want Failed 1", r)
		}
		wantFinished(t, "rescued on its last attempt", e.get(l.ExecutionID), store.StatusFailed, now)
		e.claimNone(acme, at(time.Hour))
		e.checkFenced(l, acme, at(time.Hour), store.ErrLeaseLost)
		e.wantInflight(acme, 0)
	})

	t.Run("CancelRequestedIsCancelled", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("echo"))
		_, err := e.cancel(acme, l.ExecutionID, at(time.Second))
		e.must(err, "Cancel")
		now := at(leaseFor + time.Second)
		if r := e.rescue(now, 0); r != (store.RescueResult{Cancelled: 1}) {
			t.Errorf("Rescue: %+v, want Cancelled 1", r)
		}
		wantFinished(t, "rescued after a cancel request", e.get(l.ExecutionID), store.StatusCancelled, now)
		e.wantInflight(acme, 0)
	})

	t.Run("CompletedBeforeRescueStaysSucceeded", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("echo"))
		done, err := e.complete(l, at(10*time.Second), mustJSON(`{"v":1}`))
		e.must(err, "Complete")
		if r := e.rescue(at(time.Hour), 0); r != (store.RescueResult{}) {
			t.Errorf("Rescue: %+v, want nothing", r)
		}
		sameExecution(t, "after Rescue", e.get(l.ExecutionID), done)
		e.wantInflight(acme, 0)
	})

	t.Run("OnlyExpiredLeases", func(t *testing.T) {
		e := start(t, ns)
		dead := e.run(acme, base, job("dead"))
		alive := e.run(acme, base, job("alive"))
		_, err := e.heartbeat(alive, at(20*time.Second), time.Minute)
		e.must(err, "Heartbeat")
		if r := e.rescue(at(leaseFor+time.Second), 0); r != (store.RescueResult{Requeued: 1}) {
			t.Errorf("Rescue: %+v, want Requeued 1", r)
		}
		e.wantStatus(dead.ExecutionID, store.StatusQueued)
		e.wantStatus(alive.ExecutionID, store.StatusRunning)
		_, err = e.complete(alive, at(leaseFor+2*time.Second), nil)
		e.must(err, "Complete of the live lease")
		e.wantInflight(acme, 1)
	})

	t.Run("CountsEachOutcome", func(t *testing.T) {
		e := start(t, ns)
		e.run(acme, base, job("retry"))
		last := job("last")
		last.MaxAttempts = 1
		e.run(acme, base, last)
		c := e.run(acme, base, job("cancel"))
		_, err := e.cancel(acme, c.ExecutionID, at(time.Second))
		e.must(err, "Cancel")
		if r := e.rescue(at(time.Hour), 0); r != (store.RescueResult{Requeued: 1, Failed: 1, Cancelled: 1}) {
			t.Errorf("Rescue: %+v, want one of each", r)
		}
		e.wantInflight(acme, 1)
	})

	t.Run("RespectsLimit", func(t *testing.T) {
		e := start(t, ns)
		for range 5 {
			e.submit(acme, base, job("echo"))
		}
		if n := len(e.claim(store.ClaimParams{Tenant: acme, Max: 5, Now: base})); n != 5 {
			t.Fatalf("claimed %d, want 5", n)
		}
		now := at(time.Hour)
		for _, want := range []int{2, 2, 1, 0} {
			if r := e.rescue(now, 2); r.Requeued != want || r.Failed != 0 || r.Cancelled != 0 {
				t.Errorf("Rescue Limit 2: %+v, want Requeued %d", r, want)
			}
		}
		e.wantInflight(acme, 5)
	})

	t.Run("WorkerDiesAnotherFinishes", func(t *testing.T) {
		e := start(t, ns)
		dead := e.run(acme, base, job("echo"))
		e.rescue(at(leaseFor+time.Second), 0)
		ls := e.claim(store.ClaimParams{WorkerID: "worker-2", Tenant: acme, Now: at(leaseFor + time.Second)})
		if len(ls) != 1 {
			t.Fatalf("I9: the dead worker's execution is not claimable after Rescue (%d leases)", len(ls))
		}
		second := ls[0]
		x, err := e.complete(second, at(leaseFor+5*time.Second), mustJSON(`{"by":"worker-2"}`))
		e.must(err, "Complete by worker-2")
		// The first worker wakes up and reports: too late.
		_, err = e.complete(dead, at(leaseFor+6*time.Second), mustJSON(`{"by":"worker-1"}`))
		wantErr(t, "late Complete by the dead worker", err, store.ErrLeaseLost)
		sameExecution(t, "after the late Complete", e.get(dead.ExecutionID), x)
		wantJSON(t, "Result", x.Result, mustJSON(`{"by":"worker-2"}`))
		if x.WorkerID != "" && x.WorkerID != "worker-2" {
			t.Errorf("WorkerID %q, want worker-2 (or cleared)", x.WorkerID)
		}
		e.wantInflight(acme, 0)
	})
}
