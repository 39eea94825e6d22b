package storetest

import (
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testLease covers what a worker does with a valid lease: Heartbeat,
// Complete, Fail and Release. Fencing (stale tokens) is in fencing.go.
func testLease(t *testing.T, ns NewStore) {
	t.Run("HeartbeatExtendsLease", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("echo"))
		res, err := e.heartbeat(l, at(20*time.Second), time.Minute)
		e.must(err, "Heartbeat")
		wantTime(t, "Heartbeat ExpiresAt", res.ExpiresAt, at(80*time.Second))
		if res.CancelRequested {
			t.Error("Heartbeat reports a cancel nobody requested")
		}
		x := e.wantStatus(l.ExecutionID, store.StatusRunning)
		wantTimePtr(t, "LeaseExpiresAt", x.LeaseExpiresAt, at(80*time.Second))
		if x.Attempt != 1 {
			t.Errorf("Attempt %d after a heartbeat, want 1", x.Attempt)
		}

		// The old deadline has passed, the new one has not: nothing to rescue.
		if r := e.rescue(at(60*time.Second), 0); r != (store.RescueResult{}) {
			t.Errorf("Rescue before the extended deadline: %+v, want nothing", r)
		}
		e.wantStatus(l.ExecutionID, store.StatusRunning)
		if r := e.rescue(at(81*time.Second), 0); r.Requeued != 1 {
			t.Errorf("Rescue after the extended deadline: %+v, want Requeued 1", r)
		}
		e.wantInflight(acme, 1)
	})

	t.Run("HeartbeatWithEmptyTenant", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("echo"))
		_, err := e.s.Heartbeat(e.ctx, &store.HeartbeatParams{
			ExecutionID: l.ExecutionID, Token: l.Token, LeaseDuration: leaseFor, Now: at(time.Second),
		})
		e.must(err, `Heartbeat with Tenant ""`)
	})

	t.Run("CompleteSucceeds", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("echo"))
		result := mustJSON(`{"ok":true,"n":[1,2]}`)
		now := at(5 * time.Second)
		x, err := e.complete(l, now, result)
		e.must(err, "Complete")
		wantFinished(t, "Complete answer", x, store.StatusSucceeded, now)
		wantJSON(t, "Result", x.Result, result)
		if x.Attempt != 1 || x.Error != "" {
			t.Errorf("attempt %d error %q, want 1 and none", x.Attempt, x.Error)
		}
		sameExecution(t, "Get after Complete", e.get(l.ExecutionID), x)
		e.claimNone(acme, at(time.Hour))
		e.wantInflight(acme, 0)
	})

	t.Run("SuccessClearsEarlierError", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("echo"))
		_, err := e.fail(l, at(time.Second), "boom", true, 0)
		e.must(err, "Fail")
		if x := e.get(l.ExecutionID); x.Error != "boom" {
			t.Errorf("between attempts error = %q, want the failure kept", x.Error)
		}
		again := e.claimOne(acme, at(2*time.Second))
		x, err := e.complete(again, at(3*time.Second), nil)
		e.must(err, "Complete")
		if x.Status != store.StatusSucceeded || x.Error != "" {
			t.Errorf("after success: status %s error %q, want succeeded with no error", x.Status, x.Error)
		}
	})

	t.Run("CompleteWithoutResult", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("echo"))
		x, err := e.complete(l, at(time.Second), nil)
		e.must(err, "Complete")
		wantFinished(t, "Complete answer", x, store.StatusSucceeded, at(time.Second))
		wantJSON(t, "Result (nil means null)", x.Result, nil)
		e.wantInflight(acme, 0)
	})

	t.Run("FailWithRetrySchedulesNextAttempt", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("echo")) // 3 attempts by default
		now := at(10 * time.Second)
		x, err := e.fail(l, now, "boom", true, 20*time.Second)
		e.must(err, "Fail")
		if x.Status != store.StatusScheduled {
			t.Errorf("status %s after a retryable failure with a delay, want scheduled", x.Status)
		}
		wantTime(t, "RunAt of the retry", x.RunAt, now.Add(20*time.Second))
		if x.Error != "boom" || x.Attempt != 1 || x.FinishedAt != nil {
			t.Errorf("error %q attempt %d finished_at %v, want boom, 1, nil", x.Error, x.Attempt, x.FinishedAt)
		}
		sameExecution(t, "Get after Fail", e.get(l.ExecutionID), x)
		e.wantInflight(acme, 1)

		e.claimNone(acme, now.Add(19*time.Second))
		next := e.claimOne(acme, now.Add(20*time.Second))
		if next.ExecutionID != l.ExecutionID || next.Attempt != 2 {
			t.Errorf("claimed %s attempt %d, want %s attempt 2", next.ExecutionID, next.Attempt, l.ExecutionID)
		}
		e.wantInflight(acme, 1)
	})

	t.Run("FailWithRetryAndNoDelayIsClaimableAtOnce", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("echo"))
		x, err := e.fail(l, at(time.Second), "boom", true, 0)
		e.must(err, "Fail")
		if x.Status != store.StatusQueued && x.Status != store.StatusScheduled {
			t.Errorf("status %s, want queued (or scheduled for now)", x.Status)
		}
		next := e.claimOne(acme, at(time.Second))
		if next.Attempt != 2 {
			t.Errorf("attempt %d, want 2", next.Attempt)
		}
		e.wantInflight(acme, 1)
	})

	t.Run("FailWithoutRetryFails", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("echo"))
		now := at(time.Second)
		x, err := e.fail(l, now, "bad input", false, time.Minute)
		e.must(err, "Fail")
		wantFinished(t, "Fail answer", x, store.StatusFailed, now)
		if x.Error != "bad input" {
			t.Errorf("Error %q, want %q", x.Error, "bad input")
		}
		sameExecution(t, "Get after Fail", e.get(l.ExecutionID), x)
		e.claimNone(acme, at(time.Hour))
		e.wantInflight(acme, 0)
	})

	t.Run("FailOnLastAttemptFails", func(t *testing.T) {
		e := start(t, ns)
		sub := job("echo")
		sub.MaxAttempts = 2
		l := e.run(acme, base, sub)
		_, err := e.fail(l, at(time.Second), "first", true, 0)
		e.must(err, "Fail attempt 1")
		l2 := e.claimOne(acme, at(2*time.Second))
		if l2.Attempt != 2 {
			t.Fatalf("attempt %d, want 2", l2.Attempt)
		}
		x, err := e.fail(l2, at(3*time.Second), "second", true, 0)
		e.must(err, "Fail attempt 2")
		wantFinished(t, "Fail on the last attempt", x, store.StatusFailed, at(3*time.Second))
		if x.Attempt != 2 || x.Error != "second" {
			t.Errorf("attempt %d error %q, want 2 and %q", x.Attempt, x.Error, "second")
		}
		e.claimNone(acme, at(time.Hour))
		e.wantInflight(acme, 0)
	})

	// A lease released unstarted (its handler never ran: claimed while the
	// worker was stopping) gives its start back: the attempt is as before
	// the claim, queued again or, with a cancel requested, cancelled.
	t.Run("ReleaseUnstartedGivesTheStartBack", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("echo"))
		x, err := e.s.Release(e.ctx, &store.ReleaseParams{ExecutionID: l.ExecutionID, Tenant: l.Tenant,
			Token: l.Token, Unstarted: true, Now: at(time.Second)})
		e.must(err, "Release unstarted")
		if x.Status != store.StatusQueued || x.Attempt != 0 {
			t.Errorf("after an unstarted Release: status %s attempt %d, want queued 0", x.Status, x.Attempt)
		}
		sameExecution(t, "Get after an unstarted Release", e.get(l.ExecutionID), x)
		again := e.claimOne(acme, at(time.Second))
		if again.Attempt != 1 {
			t.Errorf("re-claimed attempt %d, want 1", again.Attempt)
		}
		// A second attempt released unstarted after a cancel request ends
		// cancelled, with the one start it had.
		_, err = e.fail(again, at(2*time.Second), "boom", true, 0)
		e.must(err, "Fail")
		third := e.claimOne(acme, at(time.Hour))
		_, err = e.cancel(acme, l.ExecutionID, at(time.Hour))
		e.must(err, "Cancel")
		x, err = e.s.Release(e.ctx, &store.ReleaseParams{ExecutionID: third.ExecutionID, Tenant: third.Tenant,
			Token: third.Token, Unstarted: true, Now: at(time.Hour)})
		e.must(err, "Release unstarted after cancel")
		if x.Status != store.StatusCancelled || x.Attempt != 1 {
			t.Errorf("after cancel and an unstarted Release: status %s attempt %d, want cancelled 1", x.Status, x.Attempt)
		}
		e.wantInflight(acme, 0)
	})

	t.Run("ReleaseRequeuesAndStillRuns", func(t *testing.T) {
		e := start(t, ns)
		sub := job("echo")
		sub.MaxAttempts = 1
		l := e.run(acme, base, sub)
		x, err := e.release(l, at(time.Second))
		e.must(err, "Release")
		if x.Status != store.StatusQueued || x.Attempt != 1 {
			t.Errorf("after Release: status %s attempt %d, want queued 1 (attempt counts starts)", x.Status, x.Attempt)
		}
		sameExecution(t, "Get after Release", e.get(l.ExecutionID), x)
		e.wantInflight(acme, 1)

		// A released execution runs again even with its attempts spent.
		again := e.claimOne(acme, at(time.Second))
		if again.Attempt != 2 || again.Token == l.Token {
			t.Errorf("re-claimed attempt %d (same token: %v), want attempt 2 with a new token", again.Attempt, again.Token == l.Token)
		}
		_, err = e.complete(again, at(2*time.Second), nil)
		e.must(err, "Complete after Release")
		e.wantInflight(acme, 0)
	})
}
