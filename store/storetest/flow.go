package storetest

import (
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testFlow covers the journal and suspensions of docs/flows.md: I10
// (RecordStep, the journal in each lease) and the quota, lease and
// concurrency rules of a suspended execution. Signals are in
// flow_signal.go, the races in flow_race.go.
func testFlow(t *testing.T, ns NewStore) {
	t.Run("RecordStepFirstRecordWins", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		res, err := e.recordStep(l, at(time.Second), "charge", `{"charge":"ch_1"}`)
		e.must(err, "RecordStep")
		if !res.Recorded || res.Step.Name != "charge" || res.Step.Attempt != 1 {
			t.Errorf("first record: %+v, want Recorded, name charge, attempt 1", res)
		}
		wantJSON(t, "first record's result", res.Step.Result, mustJSON(`{"charge":"ch_1"}`))
		wantTime(t, "RecordedAt", res.Step.RecordedAt, at(time.Second))

		res, err = e.recordStep(l, at(2*time.Second), "charge", `{"charge":"ch_2"}`)
		e.must(err, "RecordStep again")
		if res.Recorded {
			t.Error("a second record of one name reports Recorded")
		}
		wantJSON(t, "second record's answer", res.Step.Result, mustJSON(`{"charge":"ch_1"}`))
		wantTime(t, "second record's RecordedAt", res.Step.RecordedAt, at(time.Second))

		_, err = e.recordStep(l, at(3*time.Second), "ship", "")
		e.must(err, "RecordStep with no result")
		e.wantJournal(l.ExecutionID, [2]string{"charge", `{"charge":"ch_1"}`}, [2]string{"ship", `null`})
		e.wantStatus(l.ExecutionID, store.StatusRunning)
	})

	t.Run("RecordStepKeepsStartedAt", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		_, err := e.s.RecordStep(e.ctx, &store.RecordStepParams{
			ExecutionID: l.ExecutionID, Tenant: acme, Token: l.Token, Name: "a",
			Result: mustJSON(`1`), StartedAt: at(time.Second), Now: at(3 * time.Second),
		})
		e.must(err, "RecordStep")
		st := e.steps(l.ExecutionID)
		if len(st) != 1 {
			t.Fatalf("journal has %d steps, want 1", len(st))
		}
		wantTime(t, "StartedAt", st[0].StartedAt, at(time.Second))
		wantTime(t, "RecordedAt", st[0].RecordedAt, at(3*time.Second))
	})

	t.Run("RecordStepIsFenced", func(t *testing.T) {
		e := start(t, ns)
		old := e.run(acme, base, job("flow"))
		// The lease expires and is rescued; a new attempt holds it.
		e.rescue(at(leaseFor+time.Second), 0)
		cur := e.claimOne(acme, at(leaseFor+2*time.Second))
		_, err := e.recordStep(old, at(leaseFor+3*time.Second), "a", `1`)
		wantErr(t, "RecordStep with the old token", err, store.ErrLeaseLost)
		other := cur
		other.Tenant = globex
		_, err = e.recordStep(other, at(leaseFor+3*time.Second), "a", `1`)
		wantErr(t, "RecordStep as another tenant", err, store.ErrLeaseLost)
		expired := cur
		_, err = e.recordStep(expired, at(2*leaseFor+3*time.Second), "a", `1`)
		wantErr(t, "RecordStep after the lease expired", err, store.ErrLeaseLost)
		e.wantJournal(cur.ExecutionID)

		_, err = e.recordStep(store.Lease{ExecutionID: "0190a7e0-0000-7000-8000-000000000000", Token: "x"}, base, "a", `1`)
		wantErr(t, "RecordStep on a missing execution", err, store.ErrLeaseLost)
	})

	t.Run("RecordStepRefusesBadName", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		_, err := e.recordStep(l, base, "", `1`)
		wantErr(t, "RecordStep with an empty name", err, store.ErrInvalid)
		e.wantJournal(l.ExecutionID)
	})

	t.Run("JournalTravelsWithEveryLease", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		wantLeaseJournal(e, l, nil)
		_, err := e.recordStep(l, at(time.Second), "a", `{"n":1}`)
		e.must(err, "RecordStep a")
		_, err = e.recordStep(l, at(time.Second), "b", `"two"`)
		e.must(err, "RecordStep b")
		_, err = e.fail(l, at(2*time.Second), "step c broke", true, 0)
		e.must(err, "Fail")
		again := e.claimOne(acme, at(3*time.Second))
		if again.Attempt != 2 {
			t.Errorf("retry after a failure: attempt %d, want 2", again.Attempt)
		}
		wantLeaseJournal(e, again, map[string]string{"a": `{"n":1}`, "b": `"two"`})
		// A crash: the lease expires and the rescued run sees the journal too.
		e.rescue(at(time.Hour), 0)
		third := e.claimOne(acme, at(time.Hour+time.Second))
		wantLeaseJournal(e, third, map[string]string{"a": `{"n":1}`, "b": `"two"`})
		// Another execution's lease carries nothing of it.
		fresh := e.run(acme, at(2*time.Hour), job("other"))
		wantLeaseJournal(e, fresh, nil)
	})

	t.Run("SleepSuspendsThenWakeResumes", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		_, err := e.recordStep(l, at(time.Second), "charge", `"ch_1"`)
		e.must(err, "RecordStep")
		x, err := e.sleep(l, at(2*time.Second), "nap", at(time.Minute))
		e.must(err, "Suspend (sleep)")
		if x == nil || x.Status != store.StatusSuspended {
			t.Fatalf("Suspend answered %v, want the execution suspended", x)
		}
		e.wantSuspended(l.ExecutionID, "nap", "", at(time.Minute))
		e.wantInflight(acme, 1)

		// The lease is over: the old token changes nothing.
		_, err = e.heartbeat(l, at(3*time.Second), leaseFor)
		wantErr(t, "Heartbeat after Suspend", err, store.ErrLeaseLost)
		_, err = e.complete(l, at(3*time.Second), nil)
		wantErr(t, "Complete after Suspend", err, store.ErrLeaseLost)
		// Nothing claims, promotes or rescues it before its time.
		e.claimNone(acme, at(59*time.Second))
		if n := e.promote(at(59*time.Second), 0); n != 0 {
			t.Errorf("Promote moved %d executions, want 0", n)
		}
		if r := e.rescue(at(59*time.Second), 0); r != (store.RescueResult{}) {
			t.Errorf("Rescue of a suspended execution: %+v, want nothing", r)
		}
		if n := e.wake(at(59*time.Second), 0); n != 0 {
			t.Errorf("Wake before WakeAt woke %d, want 0", n)
		}
		e.wantSuspended(l.ExecutionID, "nap", "", at(time.Minute))

		if n := e.wake(at(time.Minute), 0); n != 1 {
			t.Errorf("Wake at WakeAt woke %d, want 1", n)
		}
		e.wantResumed(l.ExecutionID)
		if n := e.wake(at(2*time.Minute), 0); n != 0 {
			t.Errorf("a second Wake woke %d, want 0", n)
		}
		e.wantJournal(l.ExecutionID, [2]string{"charge", `"ch_1"`}, [2]string{"nap", `null`})
		resumed := e.claimOne(acme, at(time.Minute+time.Second))
		if resumed.Attempt != 1 {
			t.Errorf("resumed run: attempt %d, want 1 (a resume does not count a start)", resumed.Attempt)
		}
		wantLeaseJournal(e, resumed, map[string]string{"charge": `"ch_1"`, "nap": `null`})
		x, err = e.complete(resumed, at(time.Minute+2*time.Second), mustJSON(`"done"`))
		e.must(err, "Complete the resumed run")
		wantFinished(t, "Complete", x, store.StatusSucceeded, at(time.Minute+2*time.Second))
		e.wantInflight(acme, 0)
	})

	t.Run("SleepNotInTheFutureQueuesAtOnce", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		x, err := e.sleep(l, at(time.Second), "zero", at(time.Second))
		e.must(err, "Suspend (sleep until now)")
		if x.Status != store.StatusQueued {
			t.Errorf("sleep until now: status %s, want queued", x.Status)
		}
		e.wantResumed(l.ExecutionID)
		e.wantJournal(l.ExecutionID, [2]string{"zero", `null`})
		again := e.claimOne(acme, at(time.Second))
		if again.Attempt != 1 {
			t.Errorf("run after a zero sleep: attempt %d, want 1", again.Attempt)
		}
		_, err = e.heartbeat(l, at(time.Second), leaseFor)
		wantErr(t, "Heartbeat with the token of the run that slept", err, store.ErrLeaseLost)
	})

	t.Run("SuspendOnRecordedStepQueues", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		_, err := e.recordStep(l, at(time.Second), "nap", `"kept"`)
		e.must(err, "RecordStep")
		x, err := e.sleep(l, at(2*time.Second), "nap", at(time.Hour))
		e.must(err, "Suspend on a recorded step")
		if x.Status != store.StatusQueued {
			t.Errorf("Suspend on a recorded step: status %s, want queued", x.Status)
		}
		e.wantJournal(l.ExecutionID, [2]string{"nap", `"kept"`})
		if again := e.claimOne(acme, at(2*time.Second)); again.Attempt != 1 {
			t.Errorf("attempt %d, want 1", again.Attempt)
		}
	})

	t.Run("SuspendIsFencedAndChecked", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		stale := l
		stale.Token = "not-the-token"
		_, err := e.sleep(stale, at(time.Second), "nap", at(time.Hour))
		wantErr(t, "Suspend with a stale token", err, store.ErrLeaseLost)
		_, err = e.s.Suspend(e.ctx, &store.SuspendParams{
			ExecutionID: l.ExecutionID, Tenant: acme, Token: l.Token, Step: "both",
			Until: at(time.Hour), Signal: "go", Now: at(time.Second),
		})
		wantErr(t, "Suspend with both Until and Signal", err, store.ErrInvalid)
		_, err = e.s.Suspend(e.ctx, &store.SuspendParams{
			ExecutionID: l.ExecutionID, Tenant: acme, Token: l.Token, Step: "neither", Now: at(time.Second),
		})
		wantErr(t, "Suspend with neither Until nor Signal", err, store.ErrInvalid)
		_, err = e.wait(l, at(time.Second), "w", "bad signal name", 0)
		wantErr(t, "Suspend on a bad signal name", err, store.ErrInvalid)
		e.wantStatus(l.ExecutionID, store.StatusRunning)
		_, err = e.heartbeat(l, at(2*time.Second), leaseFor)
		e.must(err, "Heartbeat after refused suspensions")
	})

	t.Run("SuspendAfterCancelRequestCancels", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		_, err := e.cancel(acme, l.ExecutionID, at(time.Second))
		e.must(err, "Cancel")
		x, err := e.wait(l, at(2*time.Second), "approval", "approve", time.Hour)
		e.must(err, "Suspend after a cancel request")
		wantFinished(t, "Suspend after a cancel request", x, store.StatusCancelled, at(2*time.Second))
		e.wantInflight(acme, 0)
	})

	t.Run("SuspendedHoldsQuotaButNotConcurrencySlot", func(t *testing.T) {
		e := start(t, ns)
		sub := job("flow")
		sub.ConcurrencyKey, sub.ConcurrencyLimit = "site", 1
		first := e.run(acme, base, sub)
		second := e.submit(acme, base, sub)
		e.claimNone(acme, at(time.Second)) // the key's one slot is taken
		_, err := e.sleep(first, at(2*time.Second), "nap", at(10*time.Second))
		e.must(err, "Suspend")
		l := e.claimOne(acme, at(3*time.Second))
		if l.ExecutionID != second.ID {
			t.Errorf("claimed %s, want the second execution %s once the first suspended", l.ExecutionID, second.ID)
		}
		e.wantInflight(acme, 2)
		// The woken first waits for the slot like any queued execution.
		e.wake(at(10*time.Second), 0)
		e.claimNone(acme, at(10*time.Second))
		_, err = e.complete(l, at(11*time.Second), nil)
		e.must(err, "Complete the second")
		if got := e.claimOne(acme, at(12*time.Second)); got.ExecutionID != first.ExecutionID {
			t.Errorf("claimed %s, want the woken first %s", got.ExecutionID, first.ExecutionID)
		}
	})

	t.Run("OverlapSkipCountsASuspendedFlow", func(t *testing.T) {
		e := start(t, ns)
		e.putSchedule(sched("s", store.OverlapSkip), base)
		fired(t, "tick 1", e.fire(acme, "s", at(time.Minute), at(time.Minute)), store.StatusQueued)
		l := e.claimOne(acme, at(time.Minute))
		_, err := e.wait(l, at(time.Minute+time.Second), "approval", "approve", 0)
		e.must(err, "Suspend")
		fired(t, "tick 2 while tick 1 waits", e.fire(acme, "s", at(2*time.Minute), at(2*time.Minute)), store.StatusSkipped)
	})

	t.Run("CancelEndsSuspendedAtOnce", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		_, err := e.wait(l, at(time.Second), "approval", "approve", time.Hour)
		e.must(err, "Suspend")
		x, err := e.cancel(acme, l.ExecutionID, at(2*time.Second))
		e.must(err, "Cancel")
		wantFinished(t, "Cancel of a suspended execution", x, store.StatusCancelled, at(2*time.Second))
		e.wantInflight(acme, 0)
		if n := e.wake(at(2*time.Hour), 0); n != 0 {
			t.Errorf("Wake after Cancel woke %d, want 0", n)
		}
		_, err = e.signal(acme, l.ExecutionID, "approve", `{}`, "", at(3*time.Second))
		wantErr(t, "Signal to the cancelled execution", err, store.ErrNotActive)
		e.wantStatus(l.ExecutionID, store.StatusCancelled)
	})

	t.Run("DeleteSuspended", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		_, err := e.recordStep(l, at(time.Second), "a", `1`)
		e.must(err, "RecordStep")
		_, err = e.sleep(l, at(time.Second), "nap", at(time.Hour))
		e.must(err, "Suspend")
		wantErr(t, "Delete without force", e.del(acme, l.ExecutionID, false, at(2*time.Second)), store.ErrNotTerminal)
		wantErr(t, "DeleteTenant without force", e.s.DeleteTenant(e.ctx, &store.DeleteTenantParams{Name: acme, Now: at(2 * time.Second)}), store.ErrNotTerminal)
		e.must(e.del(acme, l.ExecutionID, true, at(2*time.Second)), "Delete with force")
		e.gone(l.ExecutionID)
		e.wantInflight(acme, 0)
		_, err = e.s.Steps(e.ctx, &store.StepsParams{ID: l.ExecutionID})
		wantErr(t, "Steps of a deleted execution", err, store.ErrNotFound)
		if n := e.wake(at(2*time.Hour), 0); n != 0 {
			t.Errorf("Wake after delete woke %d, want 0", n)
		}
	})

	t.Run("ListAndGetShowSuspended", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		e.submit(acme, base, job("other"))
		_, err := e.wait(l, at(time.Second), "approval", "approve", 0)
		e.must(err, "Suspend")
		got := e.list(store.ListParams{Tenant: acme, Status: store.StatusSuspended})
		if len(got) != 1 || got[0].ID != l.ExecutionID {
			t.Fatalf("List suspended: %d items, want only %s", len(got), l.ExecutionID)
		}
		sameExecution(t, "List item vs Get", got[0], e.get(l.ExecutionID))
		e.wantSuspended(l.ExecutionID, "approval", "approve", time.Time{})
	})

	t.Run("StepsOfOtherTenantOrMissing", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		l := e.run(acme, base, job("flow"))
		_, err := e.recordStep(l, at(time.Second), "a", `1`)
		e.must(err, "RecordStep")
		_, err = e.s.Steps(e.ctx, &store.StepsParams{Tenant: globex, ID: l.ExecutionID})
		wantErr(t, "Steps as another tenant", err, store.ErrNotFound)
		_, err = e.s.Steps(e.ctx, &store.StepsParams{Tenant: acme, ID: "0190a7e0-0000-7000-8000-000000000000"})
		wantErr(t, "Steps of a missing execution", err, store.ErrNotFound)
		st, err := e.s.Steps(e.ctx, &store.StepsParams{Tenant: acme, ID: l.ExecutionID})
		e.must(err, "Steps as its tenant")
		if len(st.Items) != 1 || st.Next != 0 {
			t.Errorf("Steps: %d, next %d, want 1 and no next", len(st.Items), st.Next)
		}
		// An execution without steps has an empty journal, not an error.
		x := e.submit(acme, at(time.Second), job("plain"))
		if st := e.steps(x.ID); len(st) != 0 {
			t.Errorf("journal of a plain execution: %d steps, want none", len(st))
		}
	})

	t.Run("PruneRemovesJournal", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		_, err := e.recordStep(l, at(time.Second), "a", `1`)
		e.must(err, "RecordStep")
		_, err = e.complete(l, at(2*time.Second), nil)
		e.must(err, "Complete")
		e.prune(at(2*time.Second+store.DefaultRetention+time.Second), 0)
		e.gone(l.ExecutionID)
		_, err = e.s.Steps(e.ctx, &store.StepsParams{ID: l.ExecutionID})
		wantErr(t, "Steps after Prune", err, store.ErrNotFound)
	})

	t.Run("RetryKeepsJournal", func(t *testing.T) {
		e := start(t, ns)
		sub := job("flow")
		sub.MaxAttempts = 1
		l := e.run(acme, base, sub)
		_, err := e.recordStep(l, at(time.Second), "charge", `"ch_1"`)
		e.must(err, "RecordStep")
		_, err = e.fail(l, at(2*time.Second), "the webhook broke", true, 0)
		e.must(err, "Fail")
		e.wantStatus(l.ExecutionID, store.StatusFailed)
		e.wantInflight(acme, 0)

		x, err := e.s.Retry(e.ctx, &store.RetryParams{Tenant: acme, ID: l.ExecutionID, Now: at(time.Minute)})
		e.must(err, "Retry")
		if x.Status != store.StatusQueued || x.Attempt != 0 || x.Error != "" || x.FinishedAt != nil || x.Result != nil {
			t.Errorf("after Retry: status %s attempt %d error %q finished %v result %s, want queued, 0, none, nil, nil",
				x.Status, x.Attempt, x.Error, x.FinishedAt, x.Result)
		}
		wantTime(t, "RunAt after Retry", x.RunAt, at(time.Minute))
		sameExecution(t, "Get after Retry", e.get(l.ExecutionID), x)
		e.wantInflight(acme, 1)
		again := e.claimOne(acme, at(time.Minute))
		if again.Attempt != 1 {
			t.Errorf("first run after Retry: attempt %d, want 1", again.Attempt)
		}
		wantLeaseJournal(e, again, map[string]string{"charge": `"ch_1"`})

		_, err = e.s.Retry(e.ctx, &store.RetryParams{Tenant: acme, ID: l.ExecutionID, Now: at(time.Minute)})
		wantErr(t, "Retry of a running execution", err, store.ErrNotFailed)
		_, err = e.complete(again, at(time.Minute+time.Second), nil)
		e.must(err, "Complete")
		_, err = e.s.Retry(e.ctx, &store.RetryParams{Tenant: acme, ID: l.ExecutionID, Now: at(3 * time.Minute)})
		wantErr(t, "Retry of a succeeded execution", err, store.ErrNotFailed)
		_, err = e.s.Retry(e.ctx, &store.RetryParams{Tenant: globex, ID: l.ExecutionID, Now: at(3 * time.Minute)})
		wantErr(t, "Retry as another tenant", err, store.ErrNotFound)
		e.wantStatus(l.ExecutionID, store.StatusSucceeded)
	})

	t.Run("RetryAtQuotaChangesNothing", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme, MaxInflight: 1})
		sub := job("flow")
		sub.MaxAttempts = 1
		l := e.run(acme, base, sub)
		_, err := e.fail(l, at(time.Second), "broke", false, 0)
		e.must(err, "Fail")
		e.submit(acme, at(2*time.Second), job("other")) // takes the one slot
		before := e.get(l.ExecutionID)
		_, err = e.s.Retry(e.ctx, &store.RetryParams{Tenant: acme, ID: l.ExecutionID, Now: at(3 * time.Second)})
		wantErr(t, "Retry at the quota", err, store.ErrQuotaExceeded)
		sameExecution(t, "after a refused Retry", e.get(l.ExecutionID), before)
		e.wantInflight(acme, 1)
	})

	t.Run("ReleaseUnstartedKeepsResume", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		_, err := e.sleep(l, at(time.Second), "zero", at(time.Second))
		e.must(err, "Suspend (zero sleep)")
		resumed := e.claimOne(acme, at(2*time.Second))
		_, err = e.s.Release(e.ctx, &store.ReleaseParams{
			ExecutionID: resumed.ExecutionID, Tenant: acme, Token: resumed.Token, Unstarted: true, Now: at(3 * time.Second),
		})
		e.must(err, "Release unstarted")
		if x := e.get(l.ExecutionID); x.Attempt != 1 {
			t.Errorf("after an unstarted release of a resume: attempt %d, want 1", x.Attempt)
		}
		if again := e.claimOne(acme, at(4*time.Second)); again.Attempt != 1 {
			t.Errorf("claim after an unstarted release of a resume: attempt %d, want 1", again.Attempt)
		}
	})

	t.Run("CrashAfterResumeCountsAStart", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		_, err := e.sleep(l, at(time.Second), "zero", at(time.Second))
		e.must(err, "Suspend (zero sleep)")
		resumed := e.claimOne(acme, at(2*time.Second))
		if resumed.Attempt != 1 {
			t.Fatalf("resume: attempt %d, want 1", resumed.Attempt)
		}
		// The resumed run's process dies: the next run is a new start.
		e.rescue(at(2*time.Second+leaseFor+time.Second), 0)
		if again := e.claimOne(acme, at(time.Hour)); again.Attempt != 2 {
			t.Errorf("run after a rescue: attempt %d, want 2", again.Attempt)
		}
	})
}
