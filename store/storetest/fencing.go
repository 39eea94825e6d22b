package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testFencing covers invariant I5: Heartbeat, Complete, Fail and Release
// change state only with the current lease token of a running execution;
// every other call is refused and changes nothing.
func testFencing(t *testing.T, ns NewStore) {
	t.Run("StaleTokenAfterRescue", func(t *testing.T) {
		e := start(t, ns)
		stale := e.run(acme, base, job("echo"))
		if r := e.rescue(at(leaseFor+time.Second), 0); r.Requeued != 1 {
			t.Fatalf("Rescue: %+v, want Requeued 1", r)
		}
		e.checkFenced(stale, acme, at(leaseFor+2*time.Second), store.ErrLeaseLost)
		e.wantStatus(stale.ExecutionID, store.StatusQueued)

		current := e.claimOne(acme, at(leaseFor+3*time.Second))
		if current.Attempt != 2 {
			t.Fatalf("attempt %d, want 2", current.Attempt)
		}
		e.checkFenced(stale, acme, at(leaseFor+4*time.Second), store.ErrLeaseLost)
		_, err := e.heartbeat(current, at(leaseFor+5*time.Second), leaseFor)
		e.must(err, "Heartbeat with the current token")
		_, err = e.complete(current, at(leaseFor+6*time.Second), nil)
		e.must(err, "Complete with the current token")
		e.wantInflight(acme, 0)
	})

	t.Run("Attempt1TokenUselessInAttempt2", func(t *testing.T) {
		e := start(t, ns)
		first := e.run(acme, base, job("echo"))
		_, err := e.fail(first, at(time.Second), "boom", true, 0)
		e.must(err, "Fail")
		second := e.claimOne(acme, at(2*time.Second))
		e.checkFenced(first, acme, at(3*time.Second), store.ErrLeaseLost)
		_, err = e.complete(second, at(4*time.Second), nil)
		e.must(err, "Complete attempt 2")
		e.wantInflight(acme, 0)
	})

	t.Run("TokenAfterReleaseIsLost", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("echo"))
		_, err := e.release(l, at(time.Second))
		e.must(err, "Release")
		e.checkFenced(l, acme, at(2*time.Second), store.ErrLeaseLost)
		e.wantStatus(l.ExecutionID, store.StatusQueued)
		e.wantInflight(acme, 1)
	})

	t.Run("TokenAfterCompleteIsLost", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("echo"))
		_, err := e.complete(l, at(time.Second), mustJSON(`{"first":true}`))
		e.must(err, "Complete")
		e.checkFenced(l, acme, at(2*time.Second), store.ErrLeaseLost)
		x := e.wantStatus(l.ExecutionID, store.StatusSucceeded)
		wantJSON(t, "Result", x.Result, mustJSON(`{"first":true}`))
		e.wantInflight(acme, 0)
	})

	t.Run("TokenAfterFinalFailIsLost", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("echo"))
		_, err := e.fail(l, at(time.Second), "boom", false, 0)
		e.must(err, "Fail")
		e.checkFenced(l, acme, at(2*time.Second), store.ErrLeaseLost)
		e.wantStatus(l.ExecutionID, store.StatusFailed)
		e.wantInflight(acme, 0)
	})

	t.Run("MadeUpTokenIsLost", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("echo"))
		forged := l
		forged.Token = "not-a-real-token"
		e.checkFenced(forged, acme, at(time.Second), store.ErrLeaseLost)
		forged.Token = ""
		e.checkFenced(forged, acme, at(time.Second), store.ErrLeaseLost)
		e.wantStatus(l.ExecutionID, store.StatusRunning)
		e.wantInflight(acme, 1)
	})

	t.Run("OtherExecutionsTokenIsLost", func(t *testing.T) {
		e := start(t, ns)
		x := e.run(acme, base, job("x"))
		y := e.run(acme, at(time.Second), job("y"))
		crossed := x
		crossed.Token = y.Token
		e.checkFenced(crossed, acme, at(2*time.Second), store.ErrLeaseLost)
		e.wantStatus(y.ExecutionID, store.StatusRunning)
		e.wantInflight(acme, 2)
	})

	t.Run("OtherTenantCannotUseLease", func(t *testing.T) {
		// Another tenant's execution looks exactly like a missing one: the
		// lease is lost to that caller.
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		l := e.run(acme, base, job("echo"))
		e.checkFenced(l, globex, at(time.Second), store.ErrLeaseLost)
		e.checkFenced(l, "nobody", at(time.Second), store.ErrLeaseLost)
		e.wantStatus(l.ExecutionID, store.StatusRunning)
		e.wantInflight(acme, 1)
		e.wantInflight(globex, 0)
	})

	t.Run("UnknownExecution", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("echo"))
		ghost := l
		ghost.ExecutionID = "01890a5d-ac96-774b-bcce-b302099a8057"
		e.checkFenced(ghost, acme, at(time.Second), store.ErrLeaseLost)
		e.wantInflight(acme, 1)
	})

	t.Run("ExpiredLeaseIsLostBeforeRescue", func(t *testing.T) {
		// The token stops working the moment its lease expires, whether or
		// not a rescuer has run: a late worker cannot revive or settle it.
		e := start(t, ns)
		l := e.run(acme, base, job("echo"))
		if _, err := e.heartbeat(l, at(leaseFor), leaseFor); err != nil {
			t.Fatalf("Heartbeat at the very end of the lease: %v, want it accepted", err)
		}
		e.checkFenced(l, acme, at(2*leaseFor+time.Millisecond), store.ErrLeaseLost)
		e.wantStatus(l.ExecutionID, store.StatusRunning)
		r, err := e.s.Rescue(e.ctx, &store.RescueParams{Now: at(2*leaseFor + time.Second)})
		e.must(err, "Rescue")
		if r.Requeued != 1 {
			t.Fatalf("Rescue after expiry: %+v, want 1 requeued", r)
		}
		e.wantInflight(acme, 1)
	})
}

// checkFenced calls every fenced operation with l's execution and token, as
// tenant, and asserts that each is refused with one of want and leaves the
// execution exactly as it was (or missing, if it was missing).
func (e *env) checkFenced(l store.Lease, tenant string, now time.Time, want ...error) {
	e.t.Helper()
	snapshot := func() (*store.Execution, error) {
		return e.s.Get(e.ctx, &store.GetParams{ID: l.ExecutionID})
	}
	before, beforeErr := snapshot()
	if beforeErr != nil && !errors.Is(beforeErr, store.ErrNotFound) {
		e.t.Fatalf("Get %s: %v", l.ExecutionID, beforeErr)
	}
	ops := []struct {
		name string
		call func() error
	}{
		{"Heartbeat", func() error {
			_, err := e.s.Heartbeat(e.ctx, &store.HeartbeatParams{
				ExecutionID: l.ExecutionID, Tenant: tenant, Token: l.Token, LeaseDuration: time.Hour, Now: now})
			return err
		}},
		{"Complete", func() error {
			_, err := e.s.Complete(e.ctx, &store.CompleteParams{
				ExecutionID: l.ExecutionID, Tenant: tenant, Token: l.Token, Result: mustJSON(`{"stale":true}`), Now: now})
			return err
		}},
		{"Fail with retry", func() error {
			_, err := e.s.Fail(e.ctx, &store.FailParams{
				ExecutionID: l.ExecutionID, Tenant: tenant, Token: l.Token, Error: "stale", Retry: true, Now: now})
			return err
		}},
		{"Fail", func() error {
			_, err := e.s.Fail(e.ctx, &store.FailParams{
				ExecutionID: l.ExecutionID, Tenant: tenant, Token: l.Token, Error: "stale", Now: now})
			return err
		}},
		{"Release", func() error {
			_, err := e.s.Release(e.ctx, &store.ReleaseParams{
				ExecutionID: l.ExecutionID, Tenant: tenant, Token: l.Token, Now: now})
			return err
		}},
	}
	for _, op := range ops {
		err := op.call()
		if !isAny(err, want...) {
			e.t.Errorf("I5: %s of %s with a token that is not current (tenant %q): err = %v, want %v",
				op.name, l.ExecutionID, tenant, err, want)
		}
		after, afterErr := snapshot()
		switch {
		case beforeErr != nil:
			if !errors.Is(afterErr, store.ErrNotFound) {
				e.t.Errorf("I5: refused %s brought back missing execution %s (Get err %v)", op.name, l.ExecutionID, afterErr)
			}
		case afterErr != nil:
			e.t.Errorf("I5: refused %s removed execution %s: %v", op.name, l.ExecutionID, afterErr)
		default:
			sameExecution(e.t, "I5: after a refused "+op.name, after, before)
		}
	}
}
