package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testFlowBounds covers the bounds of one execution's flow state
// (store.MaxSteps, store.MaxBufferedSignals, and the idempotency keys they
// bound together): each holds exactly, a refusal changes nothing, and
// concurrent calls do not pass it. The bounds are lowered through the
// params' test-only overrides, so that a few calls reach them.
func testFlowBounds(t *testing.T, ns NewStore) {
	t.Run("StepsBoundExact", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		rec := func(name, result string) (*store.RecordStepResult, error) {
			return e.s.RecordStep(e.ctx, &store.RecordStepParams{ExecutionID: l.ExecutionID, Tenant: acme,
				Token: l.Token, Name: name, Result: mustJSON(result), MaxSteps: 3, Now: at(time.Second)})
		}
		for i, name := range []string{"a", "b", "c"} {
			res, err := rec(name, fmt.Sprint(i))
			e.must(err, "RecordStep "+name)
			if !res.Recorded {
				t.Errorf("RecordStep %s under the bound: Recorded false", name)
			}
		}
		_, err := rec("d", `"over"`)
		wantErr(t, "RecordStep of a 4th name with MaxSteps 3", err, store.ErrTooManySteps)
		// A name recorded already is answered as recorded, full or not.
		res, err := rec("b", `"again"`)
		e.must(err, "RecordStep of a recorded name at the bound")
		if res.Recorded {
			t.Error("RecordStep of a recorded name at the bound: Recorded true")
		}
		wantJSON(t, "answer for b", res.Step.Result, mustJSON(`1`))
		// A suspension whose outcome would be a new step is refused too, and
		// the lease is kept.
		_, err = e.s.Suspend(e.ctx, &store.SuspendParams{ExecutionID: l.ExecutionID, Tenant: acme, Token: l.Token,
			Step: "nap", Until: at(time.Hour), MaxSteps: 3, Now: at(2 * time.Second)})
		wantErr(t, "Suspend (sleep) of a new step at the bound", err, store.ErrTooManySteps)
		_, err = e.s.Suspend(e.ctx, &store.SuspendParams{ExecutionID: l.ExecutionID, Tenant: acme, Token: l.Token,
			Step: "approval", Signal: "approve", MaxSteps: 3, Now: at(2 * time.Second)})
		wantErr(t, "Suspend (wait) of a new step at the bound", err, store.ErrTooManySteps)
		e.wantJournal(l.ExecutionID, [2]string{"a", "0"}, [2]string{"b", "1"}, [2]string{"c", "2"})
		e.wantStatus(l.ExecutionID, store.StatusRunning)
		_, err = e.heartbeat(l, at(3*time.Second), leaseFor)
		e.must(err, "Heartbeat after the refusals: the lease is kept")
		// A suspension under a recorded name records nothing: it goes on.
		x, err := e.s.Suspend(e.ctx, &store.SuspendParams{ExecutionID: l.ExecutionID, Tenant: acme, Token: l.Token,
			Step: "a", Until: at(time.Hour), MaxSteps: 3, Now: at(4 * time.Second)})
		e.must(err, "Suspend under a recorded name at the bound")
		if x.Status != store.StatusQueued {
			t.Errorf("Suspend under a recorded name: status %s, want queued", x.Status)
		}
		e.wantInflight(acme, 1)
	})

	t.Run("WaitCheckedAtItsStartEndsWithinTheBound", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		_, err := e.s.RecordStep(e.ctx, &store.RecordStepParams{ExecutionID: l.ExecutionID, Tenant: acme,
			Token: l.Token, Name: "a", MaxSteps: 2, Now: at(time.Second)})
		e.must(err, "RecordStep a")
		_, err = e.s.Suspend(e.ctx, &store.SuspendParams{ExecutionID: l.ExecutionID, Tenant: acme, Token: l.Token,
			Step: "approval", Signal: "approve", MaxSteps: 2, Now: at(2 * time.Second)})
		e.must(err, "Suspend (wait) with room for its step")
		e.wantSignal(l.ExecutionID, "approve", `"yes"`, at(3*time.Second), true)
		e.wantJournal(l.ExecutionID, [2]string{"a", "null"}, [2]string{"approval", `"yes"`})
		again := e.claimOne(acme, at(4*time.Second))
		_, err = e.s.Suspend(e.ctx, &store.SuspendParams{ExecutionID: again.ExecutionID, Tenant: acme,
			Token: again.Token, Step: "second", Signal: "approve", MaxSteps: 2, Now: at(5 * time.Second)})
		wantErr(t, "Suspend (wait) with a full journal", err, store.ErrTooManySteps)
		e.wantStatus(l.ExecutionID, store.StatusRunning)
	})

	t.Run("ConcurrentRecordsHoldTheBound", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		const n, limit = 32, 8
		errs := make([]error, n)
		together(n, func(i int) {
			_, errs[i] = e.s.RecordStep(e.ctx, &store.RecordStepParams{ExecutionID: l.ExecutionID, Tenant: acme,
				Token: l.Token, Name: fmt.Sprintf("step %d", i), MaxSteps: limit, Now: at(time.Second)})
		})
		ok := 0
		for i, err := range errs {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, store.ErrTooManySteps):
				t.Errorf("RecordStep %d: %v, want nil or ErrTooManySteps", i, err)
			}
		}
		if got := len(e.steps(l.ExecutionID)); ok != limit || got != limit {
			t.Errorf("%d concurrent records of new names with MaxSteps %d: %d accepted, journal %d; want %d and %d",
				n, limit, ok, got, limit, limit)
		}
	})

	t.Run("SignalBufferExact", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		send := func(data, key string, now time.Time) (*store.SignalResult, error) {
			return e.s.Signal(e.ctx, &store.SignalParams{Tenant: acme, ExecutionID: l.ExecutionID, Name: "item",
				Data: mustJSON(data), IdempotencyKey: key, MaxBuffered: 3, Now: now})
		}
		for i, key := range []string{"k1", "", "k3"} {
			res, err := send(fmt.Sprint(i+1), key, at(time.Duration(i+1)*time.Second))
			e.must(err, fmt.Sprintf("Signal %d under the bound", i+1))
			if res.Delivered {
				t.Errorf("Signal %d to a running execution: Delivered true", i+1)
			}
		}
		_, err := send(`"over"`, "", at(4*time.Second))
		wantErr(t, "a 4th kept signal with MaxBuffered 3", err, store.ErrSignalBufferFull)
		_, err = send(`"over"`, "k4", at(4*time.Second))
		wantErr(t, "a 4th kept signal with a key", err, store.ErrSignalBufferFull)
		// A repeat answers the first answer, full or not.
		res, err := send(`1`, "k1", at(5*time.Second))
		e.must(err, "repeat of k1 with a full buffer")
		if res.Delivered {
			t.Error("repeat of k1: Delivered true, want the first answer (false)")
		}
		// A wait consumes one: its place is free again; the refused key was
		// not kept, so it is a new signal now.
		x, err := e.wait(l, at(6*time.Second), "first", "item", 0)
		e.must(err, "wait first")
		if x.Status != store.StatusQueued {
			t.Fatalf("wait with signals kept: status %s, want queued", x.Status)
		}
		res, err = send(`4`, "k4", at(7*time.Second))
		e.must(err, "Signal k4 after a wait consumed one")
		if res.Delivered {
			t.Error("Signal k4: Delivered true")
		}
		_, err = send(`"over"`, "", at(8*time.Second))
		wantErr(t, "a kept signal with the buffer full again", err, store.ErrSignalBufferFull)
		// What the waits consume is exactly what was accepted, in order.
		l = e.claimOne(acme, at(9*time.Second))
		for i, want := range []string{"2", "3", "4"} {
			name := fmt.Sprintf("next %d", i)
			x, err := e.wait(l, at(10*time.Second), name, "item", 0)
			e.must(err, "wait "+name)
			if x.Status != store.StatusQueued {
				t.Fatalf("wait %s: status %s, want queued (a signal is kept)", name, x.Status)
			}
			l = e.claimOne(acme, at(10*time.Second))
			wantJSON(t, "signal consumed by "+name, l.Steps[name], mustJSON(want))
		}
		_, err = e.wait(l, at(11*time.Second), "empty", "item", 0)
		e.must(err, "wait with nothing kept")
		e.wantSuspended(l.ExecutionID, "empty", "item", time.Time{})
	})

	t.Run("SignalEndingAWaitIsAcceptedWithAFullBuffer", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		for i := range 2 {
			_, err := e.s.Signal(e.ctx, &store.SignalParams{Tenant: acme, ExecutionID: l.ExecutionID, Name: "other",
				MaxBuffered: 2, Now: at(time.Second)})
			e.must(err, fmt.Sprintf("Signal other %d", i))
		}
		_, err := e.wait(l, at(2*time.Second), "approval", "approve", 0)
		e.must(err, "wait")
		_, err = e.s.Signal(e.ctx, &store.SignalParams{Tenant: acme, ExecutionID: l.ExecutionID, Name: "other",
			MaxBuffered: 2, Now: at(3 * time.Second)})
		wantErr(t, "a kept signal to a suspended execution with a full buffer", err, store.ErrSignalBufferFull)
		e.wantSuspended(l.ExecutionID, "approval", "approve", time.Time{})
		res, err := e.s.Signal(e.ctx, &store.SignalParams{Tenant: acme, ExecutionID: l.ExecutionID, Name: "approve",
			Data: mustJSON(`"yes"`), IdempotencyKey: "approve-1", MaxBuffered: 2, Now: at(4 * time.Second)})
		e.must(err, "the awaited signal with a full buffer")
		if !res.Delivered {
			t.Error("the awaited signal: Delivered false, want true")
		}
		e.wantResumed(l.ExecutionID)
		e.wantJournal(l.ExecutionID, [2]string{"approval", `"yes"`})
	})

	t.Run("ConcurrentSignalsHoldTheBound", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		_, err := e.wait(l, at(time.Second), "approval", "approve", 0)
		e.must(err, "wait")
		const n, limit = 64, 5
		errs := make([]error, n)
		delivered := make([]bool, n)
		together(n, func(i int) {
			key := ""
			if i%2 == 0 {
				key = fmt.Sprintf("key-%d", i)
			}
			res, err := e.s.Signal(e.ctx, &store.SignalParams{Tenant: acme, ExecutionID: l.ExecutionID,
				Name: "spam", Data: mustJSON(fmt.Sprint(i)), IdempotencyKey: key, MaxBuffered: limit,
				Now: at(2 * time.Second)})
			errs[i], delivered[i] = err, res != nil && res.Delivered
		})
		ok := 0
		for i, err := range errs {
			switch {
			case err == nil:
				ok++
				if delivered[i] {
					t.Errorf("signal %d: Delivered true to a wait for another name", i)
				}
			case !errors.Is(err, store.ErrSignalBufferFull):
				t.Errorf("signal %d: %v, want nil or ErrSignalBufferFull", i, err)
			}
		}
		if ok != limit {
			t.Errorf("%d concurrent signals with MaxBuffered %d: %d accepted, want %d", n, limit, ok, limit)
		}
		e.wantSuspended(l.ExecutionID, "approval", "approve", time.Time{})
		// The buffer holds exactly those: the waits consume limit signals,
		// and the next one waits.
		e.wantSignal(l.ExecutionID, "approve", "", at(3*time.Second), true)
		l = e.claimOne(acme, at(4*time.Second))
		for i := range limit {
			x, err := e.wait(l, at(5*time.Second), fmt.Sprintf("spam %d", i), "spam", 0)
			e.must(err, "wait spam")
			if x.Status != store.StatusQueued {
				t.Fatalf("wait %d: status %s, want queued (%d accepted signals kept)", i, x.Status, limit)
			}
			l = e.claimOne(acme, at(5*time.Second))
		}
		_, err = e.wait(l, at(6*time.Second), "one more", "spam", 0)
		e.must(err, "wait after the kept signals")
		e.wantSuspended(l.ExecutionID, "one more", "spam", time.Time{})
		e.wantInflight(acme, 1)
	})

	t.Run("KeysBoundedByStepsAndBuffer", func(t *testing.T) {
		// Each key is kept with a signal that is kept (MaxBufferedSignals at
		// most) or was consumed by a wait, which recorded a step (MaxSteps
		// at most): MaxSteps + MaxBufferedSignals keys, here 2 + 2.
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		const maxSteps, maxBuf = 2, 2
		accepted := 0
		now := at(time.Second)
		for i := 1; i <= 20; i++ {
			now = now.Add(time.Second)
			_, err := e.s.Signal(e.ctx, &store.SignalParams{Tenant: acme, ExecutionID: l.ExecutionID, Name: "item",
				IdempotencyKey: fmt.Sprintf("key-%d", i), MaxBuffered: maxBuf, Now: now})
			if err == nil {
				accepted++
				continue
			}
			wantErr(t, "a signal with a new key", err, store.ErrSignalBufferFull)
			// Full: a wait consumes one, if the journal has room for its step.
			_, err = e.s.Suspend(e.ctx, &store.SuspendParams{ExecutionID: l.ExecutionID, Tenant: acme,
				Token: l.Token, Step: fmt.Sprintf("wait %d", i), Signal: "item", MaxSteps: maxSteps, Now: now})
			if errors.Is(err, store.ErrTooManySteps) {
				break
			}
			e.must(err, "wait")
			l = e.claimOne(acme, now)
		}
		if accepted != maxSteps+maxBuf {
			t.Errorf("signals with new keys accepted: %d, want MaxSteps+MaxBuffered = %d", accepted, maxSteps+maxBuf)
		}
		e.wantStatus(l.ExecutionID, store.StatusRunning)
		if n := len(e.steps(l.ExecutionID)); n != maxSteps {
			t.Errorf("journal: %d steps, want %d", n, maxSteps)
		}
	})
}
