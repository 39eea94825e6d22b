package storetest

import (
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testFlowSignal covers I11 one call at a time: waits, signals, timeouts
// and the signal buffer. The same rules under concurrency are in
// flow_race.go.
func testFlowSignal(t *testing.T, ns NewStore) {
	t.Run("SignalResumesWait", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		x, err := e.wait(l, at(time.Second), "approval", "approve", time.Hour)
		e.must(err, "Suspend (wait)")
		if x.Status != store.StatusSuspended {
			t.Fatalf("wait with no signal buffered: status %s, want suspended", x.Status)
		}
		e.wantSuspended(l.ExecutionID, "approval", "approve", at(time.Hour+time.Second))
		e.wantSignal(l.ExecutionID, "approve", `{"by":"ann"}`, at(time.Minute), true)
		e.wantResumed(l.ExecutionID)
		e.wantJournal(l.ExecutionID, [2]string{"approval", `{"by":"ann"}`})
		if n := e.wake(at(2*time.Hour), 0); n != 0 {
			t.Errorf("Wake after the signal ended the wait woke %d, want 0", n)
		}
		resumed := e.claimOne(acme, at(time.Minute))
		if resumed.Attempt != 1 {
			t.Errorf("resumed run: attempt %d, want 1", resumed.Attempt)
		}
		wantLeaseJournal(e, resumed, map[string]string{"approval": `{"by":"ann"}`})
		e.wantInflight(acme, 1)
	})

	t.Run("SignalWithoutDataRecordsNull", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		_, err := e.wait(l, at(time.Second), "approval", "approve", 0)
		e.must(err, "Suspend (wait)")
		e.wantSignal(l.ExecutionID, "approve", "", at(time.Minute), true)
		e.wantJournal(l.ExecutionID, [2]string{"approval", `null`})
	})

	t.Run("SignalBeforeWaitIsBuffered", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		e.wantSignal(l.ExecutionID, "approve", `"early"`, at(time.Second), false)
		e.wantStatus(l.ExecutionID, store.StatusRunning)
		x, err := e.wait(l, at(2*time.Second), "approval", "approve", time.Hour)
		e.must(err, "Suspend (wait)")
		if x.Status != store.StatusQueued {
			t.Errorf("wait for a buffered signal: status %s, want queued at once", x.Status)
		}
		e.wantResumed(l.ExecutionID)
		e.wantJournal(l.ExecutionID, [2]string{"approval", `"early"`})
		// The buffered signal was consumed: a second wait of that name waits.
		again := e.claimOne(acme, at(3*time.Second))
		if again.Attempt != 1 {
			t.Errorf("attempt %d, want 1", again.Attempt)
		}
		_, err = e.wait(again, at(4*time.Second), "second approval", "approve", 0)
		e.must(err, "second wait")
		e.wantSuspended(l.ExecutionID, "second approval", "approve", time.Time{})
	})

	t.Run("SignalsOfOneNameAreConsumedInOrder", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		e.wantSignal(l.ExecutionID, "item", `1`, at(time.Second), false)
		e.wantSignal(l.ExecutionID, "other", `"x"`, at(2*time.Second), false)
		e.wantSignal(l.ExecutionID, "item", `2`, at(3*time.Second), false)
		for i, want := range []string{`1`, `2`} {
			name := []string{"first", "second"}[i]
			x, err := e.wait(l, at(4*time.Second), name, "item", 0)
			e.must(err, "wait "+name)
			if x.Status != store.StatusQueued {
				t.Fatalf("wait %s: status %s, want queued (a signal is buffered)", name, x.Status)
			}
			l = e.claimOne(acme, at(5*time.Second))
			if got := l.Steps[name]; !sameJSON(got, mustJSON(want)) {
				t.Errorf("wait %s consumed %s, want %s (arrival order)", name, got, want)
			}
		}
		_, err := e.wait(l, at(6*time.Second), "third", "item", 0)
		e.must(err, "third wait")
		e.wantSuspended(l.ExecutionID, "third", "item", time.Time{})
		// The other name's signal is still buffered for its own wait.
		e.wantSignal(l.ExecutionID, "item", `3`, at(7*time.Second), true)
		l = e.claimOne(acme, at(8*time.Second))
		x, err := e.wait(l, at(9*time.Second), "fourth", "other", 0)
		e.must(err, "wait for the other name")
		if x.Status != store.StatusQueued {
			t.Errorf("wait for the other name: status %s, want queued", x.Status)
		}
		e.wantJournal(l.ExecutionID, [2]string{"first", `1`}, [2]string{"second", `2`},
			[2]string{"third", `3`}, [2]string{"fourth", `"x"`})
	})

	t.Run("SignalForAnotherNameIsBuffered", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		_, err := e.wait(l, at(time.Second), "approval", "approve", 0)
		e.must(err, "Suspend (wait)")
		e.wantSignal(l.ExecutionID, "reject", `{}`, at(2*time.Second), false)
		e.wantSuspended(l.ExecutionID, "approval", "approve", time.Time{})
		// A sleeping execution buffers every signal.
		m := e.run(acme, at(3*time.Second), job("flow"))
		_, err = e.sleep(m, at(3*time.Second), "nap", at(time.Hour))
		e.must(err, "Suspend (sleep)")
		e.wantSignal(m.ExecutionID, "approve", `{}`, at(4*time.Second), false)
		e.wantSuspended(m.ExecutionID, "nap", "", at(time.Hour))
	})

	t.Run("WaitTimesOut", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		_, err := e.wait(l, at(time.Second), "approval", "approve", time.Minute)
		e.must(err, "Suspend (wait)")
		if n := e.wake(at(time.Minute), 0); n != 0 {
			t.Errorf("Wake before the timeout woke %d, want 0", n)
		}
		if n := e.wake(at(time.Minute+time.Second), 0); n != 1 {
			t.Errorf("Wake at the timeout woke %d, want 1", n)
		}
		e.wantResumed(l.ExecutionID)
		e.wantJournal(l.ExecutionID, [2]string{"approval", string(store.TimedOut)})
		// A signal after the timeout is kept for a later wait, not lost.
		e.wantSignal(l.ExecutionID, "approve", `"late"`, at(2*time.Minute), false)
		again := e.claimOne(acme, at(2*time.Minute))
		x, err := e.wait(again, at(2*time.Minute), "approval again", "approve", 0)
		e.must(err, "second wait")
		if x.Status != store.StatusQueued {
			t.Errorf("wait after a late signal: status %s, want queued", x.Status)
		}
		e.wantJournal(l.ExecutionID, [2]string{"approval", string(store.TimedOut)}, [2]string{"approval again", `"late"`})
	})

	t.Run("WakeHonoursLimit", func(t *testing.T) {
		e := start(t, ns)
		for i := range 3 {
			l := e.run(acme, at(time.Duration(i)*time.Second), job("flow"))
			_, err := e.sleep(l, at(time.Duration(i)*time.Second), "nap", at(time.Minute))
			e.must(err, "Suspend")
		}
		if n := e.wake(at(time.Minute), 2); n != 2 {
			t.Errorf("Wake with Limit 2 woke %d, want 2", n)
		}
		if n := e.wake(at(time.Minute), 2); n != 1 {
			t.Errorf("the next Wake woke %d, want the last 1", n)
		}
		e.wantInflight(acme, 3)
	})

	t.Run("IdempotentSignalAnswersTheFirstAnswer", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		_, err := e.wait(l, at(time.Second), "approval", "approve", 0)
		e.must(err, "Suspend (wait)")
		res, err := e.signal(acme, l.ExecutionID, "approve", `"yes"`, "k1", at(2*time.Second))
		e.must(err, "Signal k1")
		if !res.Delivered {
			t.Error("first signal k1: Delivered false, want true")
		}
		// The repeat changes nothing: no second signal is buffered.
		res, err = e.signal(acme, l.ExecutionID, "approve", `"yes"`, "k1", at(3*time.Second))
		e.must(err, "Signal k1 again")
		if !res.Delivered {
			t.Error("repeat of k1: Delivered false, want the first answer (true)")
		}
		again := e.claimOne(acme, at(4*time.Second))
		_, err = e.wait(again, at(5*time.Second), "second", "approve", 0)
		e.must(err, "second wait")
		e.wantSuspended(l.ExecutionID, "second", "approve", time.Time{})

		// After the execution ended, a repeat still answers; a new key does not.
		_, err = e.cancel(acme, l.ExecutionID, at(6*time.Second))
		e.must(err, "Cancel")
		res, err = e.signal(acme, l.ExecutionID, "approve", `"yes"`, "k1", at(7*time.Second))
		e.must(err, "Signal k1 after the end")
		if !res.Delivered {
			t.Error("repeat of k1 after the end: Delivered false, want the first answer (true)")
		}
		_, err = e.signal(acme, l.ExecutionID, "approve", `"yes"`, "k2", at(7*time.Second))
		wantErr(t, "new signal after the end", err, store.ErrNotActive)
	})

	t.Run("IdempotencyKeysAreScopedToTheExecution", func(t *testing.T) {
		e := start(t, ns)
		a := e.run(acme, base, job("flow"))
		_, err := e.wait(a, base, "w", "go", 0)
		e.must(err, "wait a")
		b := e.run(acme, at(time.Second), job("flow"))
		_, err = e.wait(b, at(time.Second), "w", "go", 0)
		e.must(err, "wait b")
		for _, id := range []string{a.ExecutionID, b.ExecutionID} {
			res, err := e.signal(acme, id, "go", `1`, "same-key", at(2*time.Second))
			e.must(err, "Signal")
			if !res.Delivered {
				t.Errorf("signal to %s with a key used for another execution: not delivered", id)
			}
		}
		e.wantResumed(a.ExecutionID)
		e.wantResumed(b.ExecutionID)
	})

	t.Run("SignalRefusals", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		l := e.run(acme, base, job("flow"))
		_, err := e.signal(globex, l.ExecutionID, "go", "", "", at(time.Second))
		wantErr(t, "Signal as another tenant", err, store.ErrNotFound)
		_, err = e.signal(acme, "0190a7e0-0000-7000-8000-000000000000", "go", "", "", at(time.Second))
		wantErr(t, "Signal to a missing execution", err, store.ErrNotFound)
		_, err = e.signal(acme, l.ExecutionID, "", "", "", at(time.Second))
		wantErr(t, "Signal with an empty name", err, store.ErrInvalid)
		_, err = e.complete(l, at(2*time.Second), nil)
		e.must(err, "Complete")
		_, err = e.signal(acme, l.ExecutionID, "go", "", "", at(3*time.Second))
		wantErr(t, "Signal to a succeeded execution", err, store.ErrNotActive)
		// An admin signal (Tenant "") reaches any tenant's execution.
		m := e.run(acme, at(4*time.Second), job("flow"))
		_, err = e.wait(m, at(4*time.Second), "w", "go", 0)
		e.must(err, "wait")
		res, err := e.signal("", m.ExecutionID, "go", "", "", at(5*time.Second))
		e.must(err, `Signal with Tenant ""`)
		if !res.Delivered {
			t.Error(`Signal with Tenant "": not delivered`)
		}
	})

	t.Run("SignalToQueuedOrScheduledIsBuffered", func(t *testing.T) {
		e := start(t, ns)
		x := e.submit(acme, base, job("flow"))
		e.wantSignal(x.ID, "go", `"q"`, at(time.Second), false)
		l := e.claimOne(acme, at(2*time.Second))
		got, err := e.wait(l, at(3*time.Second), "w", "go", 0)
		e.must(err, "wait")
		if got.Status != store.StatusQueued {
			t.Errorf("wait after a signal sent while queued: status %s, want queued", got.Status)
		}
		e.wantJournal(x.ID, [2]string{"w", `"q"`})
	})
}
