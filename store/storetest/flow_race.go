package storetest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testFlowRace runs I10 and I11 under real concurrency: the races a flow
// meets when several servers share a store. Run it under -race.
func testFlowRace(t *testing.T, ns NewStore) {
	t.Run("ConcurrentRecordsOfOneStepOneWins", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		const n = 16
		answers := make([]*store.RecordStepResult, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				answers[i], errs[i] = e.s.RecordStep(e.ctx, &store.RecordStepParams{
					ExecutionID: l.ExecutionID, Tenant: acme, Token: l.Token, Name: "charge",
					Result: mustJSON(fmt.Sprint(i)), Now: at(time.Second),
				})
			})
		}
		wg.Wait()
		recorded := 0
		journal := e.steps(l.ExecutionID)
		if len(journal) != 1 || journal[0].Name != "charge" {
			t.Fatalf("journal after %d concurrent records of one step: %d steps, want 1", n, len(journal))
		}
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("RecordStep %d: %v", i, errs[i])
			}
			if answers[i].Recorded {
				recorded++
			}
			wantJSON(t, fmt.Sprintf("answer %d", i), answers[i].Step.Result, journal[0].Result)
		}
		if recorded != 1 {
			t.Errorf("%d concurrent records of one step reported Recorded, want exactly 1", recorded)
		}
	})

	t.Run("SignalVsTimeoutEndsEachWaitOnce", func(t *testing.T) {
		e := start(t, ns)
		const n = 24
		ids := make([]string, n)
		for i := range n {
			l := e.run(acme, at(time.Duration(i)*time.Millisecond), job("flow"))
			_, err := e.wait(l, at(time.Second), "approval", "approve", time.Minute)
			e.must(err, "Suspend (wait)")
			ids[i] = l.ExecutionID
		}
		due := at(time.Minute + time.Second)
		delivered := make([]bool, n)
		errs := make(chan error, 2*n)
		var woken sync.Map
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				res, err := e.s.Signal(e.ctx, &store.SignalParams{
					Tenant: acme, ExecutionID: ids[i], Name: "approve", Data: mustJSON(fmt.Sprint(i)), Now: due,
				})
				if err != nil {
					errs <- fmt.Errorf("signal %d: %w", i, err)
					return
				}
				delivered[i] = res.Delivered
			})
		}
		// Three servers run their wake loop at the same moment.
		for w := range 3 {
			wg.Go(func() {
				for range 4 {
					res, err := e.s.Wake(e.ctx, &store.WakeParams{Now: due, Limit: 5})
					if err != nil {
						errs <- fmt.Errorf("wake %d: %w", w, err)
						return
					}
					woken.Store(fmt.Sprint(w, "-", time.Now().UnixNano()), res.Woken)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		// Waits the wake loops did not reach yet are ended by a last Wake.
		total := e.wake(due, 0)
		woken.Range(func(_, v any) bool { total += v.(int); return true })
		sent := 0
		for i, id := range ids {
			e.wantResumed(id)
			want := string(store.TimedOut)
			if delivered[i] {
				sent++
				want = fmt.Sprint(i)
			}
			e.wantJournal(id, [2]string{"approval", want})
		}
		if sent+total != n {
			t.Errorf("I11: %d waits ended by a signal and %d by Wake, want %d in all (each wait ends once)", sent, total, n)
		}
		// A signal that lost to the timeout is buffered, not lost: the next
		// wait of its name consumes it at once.
		leases := map[string]store.Lease{}
		for _, l := range e.claim(store.ClaimParams{Tenant: acme, Now: due, Max: 2 * n}) {
			leases[l.ExecutionID] = l
		}
		if len(leases) != n {
			t.Fatalf("claimed %d resumed executions, want %d", len(leases), n)
		}
		for i, id := range ids {
			if leases[id].Attempt != 1 {
				t.Errorf("execution %d resumed at attempt %d, want 1", i, leases[id].Attempt)
			}
			if delivered[i] {
				continue
			}
			x, err := e.wait(leases[id], due, "again", "approve", 0)
			e.must(err, "second wait")
			if x.Status != store.StatusQueued {
				t.Errorf("I11: execution %s: the signal that came after the timeout is lost (second wait %s)", id, x.Status)
			}
		}
		e.wantInflight(acme, n)
	})

	t.Run("SignalVsSuspendNeverLosesTheSignal", func(t *testing.T) {
		e := start(t, ns)
		const n = 24
		leases := make([]store.Lease, n)
		for i := range n {
			leases[i] = e.run(acme, at(time.Duration(i)*time.Millisecond), job("flow"))
		}
		now := at(time.Second)
		suspendedTo := make([]store.Status, n)
		delivered := make([]bool, n)
		errs := make(chan error, 2*n)
		var wg sync.WaitGroup
		for i, l := range leases {
			wg.Go(func() {
				x, err := e.s.Suspend(e.ctx, &store.SuspendParams{
					ExecutionID: l.ExecutionID, Tenant: acme, Token: l.Token, Step: "approval",
					Signal: "approve", Timeout: time.Hour, Now: now,
				})
				if err != nil {
					errs <- fmt.Errorf("suspend %d: %w", i, err)
					return
				}
				suspendedTo[i] = x.Status
			})
			wg.Go(func() {
				res, err := e.s.Signal(e.ctx, &store.SignalParams{
					Tenant: acme, ExecutionID: l.ExecutionID, Name: "approve", Data: mustJSON(fmt.Sprint(i)), Now: now,
				})
				if err != nil {
					errs <- fmt.Errorf("signal %d: %w", i, err)
					return
				}
				delivered[i] = res.Delivered
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for i, l := range leases {
			// Signal first: buffered, and the wait consumes it at once.
			// Suspend first: suspended, and the signal ends the wait.
			switch {
			case delivered[i] && suspendedTo[i] == store.StatusSuspended:
			case !delivered[i] && suspendedTo[i] == store.StatusQueued:
			default:
				t.Errorf("I11: execution %d: Signal Delivered=%v and Suspend answered %s: the signal was lost or used twice",
					i, delivered[i], suspendedTo[i])
			}
			e.wantResumed(l.ExecutionID)
			e.wantJournal(l.ExecutionID, [2]string{"approval", fmt.Sprint(i)})
		}
		// No signal is left over to end a later wait.
		if n := e.wake(at(2*time.Hour), 0); n != 0 {
			t.Errorf("Wake found %d suspensions, want none", n)
		}
		e.wantInflight(acme, n)
	})

	t.Run("IdenticalSignalsResumeOnce", func(t *testing.T) {
		e := start(t, ns)
		keyed := e.run(acme, base, job("flow"))
		_, err := e.wait(keyed, at(time.Second), "approval", "approve", 0)
		e.must(err, "Suspend (wait)")
		const n = 32
		keyedDelivered := make([]bool, n)
		errs := make(chan error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				res, err := e.s.Signal(e.ctx, &store.SignalParams{
					Tenant: acme, ExecutionID: keyed.ExecutionID, Name: "approve",
					Data: mustJSON(`"ok"`), IdempotencyKey: "click-1", Now: at(3 * time.Second),
				})
				if err != nil {
					errs <- err
					return
				}
				keyedDelivered[i] = res.Delivered
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for i, d := range keyedDelivered {
			if !d {
				t.Errorf("keyed signal %d: Delivered false, want every repeat to answer the first answer (true)", i)
			}
		}
		e.wantJournal(keyed.ExecutionID, [2]string{"approval", `"ok"`})
		l := e.claimLeaseOf(keyed.ExecutionID, at(4*time.Second))
		x, err := e.wait(l, at(4*time.Second), "second", "approve", 0)
		e.must(err, "second wait")
		if x.Status != store.StatusSuspended {
			t.Errorf("after %d identical keyed signals a second wait is %s, want suspended (one signal only)", n, x.Status)
		}
	})

	t.Run("UnkeyedSignalsEachCountOnce", func(t *testing.T) {
		e := start(t, ns)
		plain := e.run(acme, base, job("flow"))
		_, err := e.wait(plain, at(2*time.Second), "approval", "approve", 0)
		e.must(err, "Suspend (wait)")
		const n = 32
		plainDelivered := make([]bool, n)
		errs := make(chan error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				res, err := e.s.Signal(e.ctx, &store.SignalParams{
					Tenant: acme, ExecutionID: plain.ExecutionID, Name: "approve",
					Data: mustJSON(fmt.Sprint(i)), Now: at(3 * time.Second),
				})
				if err != nil {
					errs <- err
					return
				}
				plainDelivered[i] = res.Delivered
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		// Without a key each signal counts: one resumes the wait, the others
		// are buffered, each consumed by one later wait.
		first := -1
		for i, d := range plainDelivered {
			if d {
				if first >= 0 {
					t.Fatalf("signals %d and %d both resumed one wait", first, i)
				}
				first = i
			}
		}
		if first < 0 {
			t.Fatal("none of the signals resumed the wait")
		}
		for i := 1; i < n; i++ {
			l := e.claimLeaseOf(plain.ExecutionID, at(5*time.Second))
			step := fmt.Sprint("more-", i)
			x, err := e.wait(l, at(5*time.Second), step, "approve", 0)
			e.must(err, "wait "+step)
			if x.Status != store.StatusQueued {
				t.Fatalf("wait %d of %d buffered signals: status %s, want queued", i, n-1, x.Status)
			}
		}
		got := map[int]bool{}
		for _, s := range e.steps(plain.ExecutionID) {
			var v int
			if err := json.Unmarshal(s.Result, &v); err != nil {
				t.Fatalf("step %s result %s: %v", s.Name, s.Result, err)
			}
			got[v] = true
		}
		if len(got) != n {
			t.Errorf("the waits consumed %d distinct signals, want all %d once each", len(got), n)
		}
		l := e.claimLeaseOf(plain.ExecutionID, at(6*time.Second))
		x, err := e.wait(l, at(6*time.Second), "last", "approve", 0)
		e.must(err, "last wait")
		if x.Status != store.StatusSuspended {
			t.Errorf("a wait after every signal was consumed is %s, want suspended", x.Status)
		}
	})
}

// claimLeaseOf claims at now and requires the lease to be id's: the test
// has made it the only ready execution of acme.
func (e *env) claimLeaseOf(id string, now time.Time) store.Lease {
	e.t.Helper()
	l := e.claimOne(acme, now)
	if l.ExecutionID != id {
		e.t.Fatalf("claimed %s, want %s", l.ExecutionID, id)
	}
	return l
}
