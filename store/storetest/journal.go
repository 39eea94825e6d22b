package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testJournal covers the bytes of a journal: its bound
// (store.MaxJournalBytes, lowered through the params' test-only
// overrides) in every operation that records a step, the pages of Steps
// (a count and a bound of bytes, with a cursor), and the bounded journal a
// lease carries (store.ClaimJournalBytes).
func testJournal(t *testing.T, ns NewStore) {
	// big is a JSON string whose step, under a one-letter name, has size n.
	big := func(n int) string { return `"` + strings.Repeat("x", n-3) + `"` }

	t.Run("BytesBoundExact", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		const bound = 100
		rec := func(name, result string) (*store.RecordStepResult, error) {
			return e.s.RecordStep(e.ctx, &store.RecordStepParams{ExecutionID: l.ExecutionID, Tenant: acme,
				Token: l.Token, Name: name, Result: mustJSON(result), MaxJournalBytes: bound, Now: at(time.Second)})
		}
		_, err := rec("a", big(60))
		e.must(err, "RecordStep a (60 bytes)")
		_, err = rec("b", big(41))
		wantErr(t, "RecordStep b that passes the bound by one byte", err, store.ErrJournalTooLarge)
		res, err := rec("b", big(40))
		e.must(err, "RecordStep b that reaches the bound exactly")
		if !res.Recorded {
			t.Error("RecordStep b at the bound: Recorded false")
		}
		_, err = rec("c", "1")
		wantErr(t, "RecordStep c with a full journal", err, store.ErrJournalTooLarge)
		res, err = rec("a", `"again"`)
		e.must(err, "RecordStep of a recorded name with a full journal")
		if res.Recorded {
			t.Error("RecordStep of a recorded name: Recorded true")
		}
		e.wantJournal(l.ExecutionID, [2]string{"a", big(60)}, [2]string{"b", big(40)})
		// A suspension whose outcome could not fit is refused; the lease is
		// kept.
		_, err = e.s.Suspend(e.ctx, &store.SuspendParams{ExecutionID: l.ExecutionID, Tenant: acme, Token: l.Token,
			Step: "nap", Until: at(time.Hour), MaxJournalBytes: bound, Now: at(2 * time.Second)})
		wantErr(t, "Suspend (sleep) with a full journal", err, store.ErrJournalTooLarge)
		_, err = e.heartbeat(l, at(3*time.Second), leaseFor)
		e.must(err, "Heartbeat after the refusals: the lease is kept")
		e.wantStatus(l.ExecutionID, store.StatusRunning)
	})

	t.Run("SignalEndingAWaitIsRefusedWhenItsDataPassesTheBound", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		const bound = 100
		_, err := e.s.RecordStep(e.ctx, &store.RecordStepParams{ExecutionID: l.ExecutionID, Tenant: acme,
			Token: l.Token, Name: "a", Result: mustJSON(big(50)), MaxJournalBytes: bound, Now: at(time.Second)})
		e.must(err, "RecordStep a")
		_, err = e.s.Suspend(e.ctx, &store.SuspendParams{ExecutionID: l.ExecutionID, Tenant: acme, Token: l.Token,
			Step: "w", Signal: "go", MaxJournalBytes: bound, Now: at(2 * time.Second)})
		e.must(err, "Suspend (wait) with room for a timed-out outcome")
		signal := func(data, key string) (*store.SignalResult, error) {
			return e.s.Signal(e.ctx, &store.SignalParams{Tenant: acme, ExecutionID: l.ExecutionID, Name: "go",
				Data: mustJSON(data), IdempotencyKey: key, MaxJournalBytes: bound, Now: at(3 * time.Second)})
		}
		_, err = signal(big(51), "k1") // 50 + 51 passes 100
		wantErr(t, "a signal whose step passes the bound", err, store.ErrJournalTooLarge)
		e.wantSuspended(l.ExecutionID, "w", "go", time.Time{})
		res, err := signal(big(50), "k1") // the refused key was not kept
		e.must(err, "a signal whose step reaches the bound")
		if !res.Delivered {
			t.Error("the signal that fits: Delivered false")
		}
		e.wantJournal(l.ExecutionID, [2]string{"a", big(50)}, [2]string{"w", big(50)})
	})

	t.Run("WaitConsumingAKeptSignalTooLargeIsRefused", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		const bound = 100
		e.wantSignal(l.ExecutionID, "go", big(98), at(time.Second), false) // kept: no bound of bytes applies
		_, err := e.s.Suspend(e.ctx, &store.SuspendParams{ExecutionID: l.ExecutionID, Tenant: acme, Token: l.Token,
			Step: "wait", Signal: "go", MaxJournalBytes: bound, Now: at(2 * time.Second)})
		wantErr(t, "a wait that would consume a signal passing the bound", err, store.ErrJournalTooLarge)
		e.wantStatus(l.ExecutionID, store.StatusRunning)
		x, err := e.s.Suspend(e.ctx, &store.SuspendParams{ExecutionID: l.ExecutionID, Tenant: acme, Token: l.Token,
			Step: "w", Signal: "go", MaxJournalBytes: bound, Now: at(3 * time.Second)})
		e.must(err, "a wait whose step, with the kept signal, reaches the bound")
		if x.Status != store.StatusQueued {
			t.Errorf("the wait that consumed the kept signal: %s, want queued", x.Status)
		}
		e.wantJournal(l.ExecutionID, [2]string{"w", big(98)})
	})

	t.Run("ConcurrentRecordsHoldTheBytesBound", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		const n, fits = 32, 5
		errs := make([]error, n)
		together(n, func(i int) {
			// Each step's size is 20 (a 2-letter name): 5 fit in 100 bytes.
			_, errs[i] = e.s.RecordStep(e.ctx, &store.RecordStepParams{ExecutionID: l.ExecutionID, Tenant: acme,
				Token: l.Token, Name: fmt.Sprintf("%02d", i), Result: mustJSON(big(19)), MaxJournalBytes: fits * 20,
				Now: at(time.Second)})
		})
		ok := 0
		for i, err := range errs {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, store.ErrJournalTooLarge):
				t.Errorf("RecordStep %d: %v, want nil or ErrJournalTooLarge", i, err)
			}
		}
		if got := len(e.steps(l.ExecutionID)); ok != fits || got != fits {
			t.Errorf("%d concurrent records of 20 bytes with a bound of %d: %d accepted, journal %d; want %d",
				n, fits*20, ok, got, fits)
		}
	})

	t.Run("StepsPages", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		l := e.run(acme, base, job("flow"))
		var names []string
		for i := range 7 {
			name := fmt.Sprintf("s%d", i)
			names = append(names, name)
			_, err := e.recordStep(l, at(time.Second), name, big(100)) // size 101
			e.must(err, "RecordStep "+name)
		}
		page := func(after int64, limit, maxBytes int) *store.StepsPage {
			t.Helper()
			p, err := e.s.Steps(e.ctx, &store.StepsParams{Tenant: acme, ID: l.ExecutionID, After: after,
				Limit: limit, MaxBytes: maxBytes})
			e.must(err, "Steps page")
			return p
		}
		// By count: 3, 3, 1.
		var got []string
		var after int64
		for i := 0; ; i++ {
			p := page(after, 3, 0)
			for _, st := range p.Items {
				got = append(got, st.Name)
				wantJSON(t, "result of "+st.Name, st.Result, mustJSON(big(100)))
			}
			if p.Next == 0 {
				if len(p.Items) != 1 {
					t.Errorf("last page by count: %d steps, want 1", len(p.Items))
				}
				break
			}
			if len(p.Items) != 3 || i > 3 {
				t.Fatalf("page %d by count: %d steps, want 3", i, len(p.Items))
			}
			after = p.Next
		}
		if strings.Join(got, ",") != strings.Join(names, ",") {
			t.Errorf("pages by count: %v, want %v", got, names)
		}
		// By bytes: a page ends after the step that reaches the bound, so
		// 250 bytes give 3 steps (101+101 < 250, the 3rd reaches it), a
		// bound below one step gives one, and every step comes once.
		p := page(0, 0, 250)
		if len(p.Items) != 3 || p.Next == 0 {
			t.Errorf("page of 250 bytes: %d steps, next %d; want 3 and a next", len(p.Items), p.Next)
		}
		got, after = nil, 0
		for i := 0; i < 10; i++ {
			p := page(after, 0, 1)
			if len(p.Items) != 1 {
				t.Fatalf("page of 1 byte: %d steps, want 1", len(p.Items))
			}
			got = append(got, p.Items[0].Name)
			if after = p.Next; after == 0 {
				break
			}
		}
		if strings.Join(got, ",") != strings.Join(names, ",") {
			t.Errorf("pages of 1 byte: %v, want %v", got, names)
		}
		// A page at the end is empty, not an error.
		last := page(0, 6, 0)
		if p := page(last.Next, 0, 0); len(p.Items) != 1 || p.Next != 0 {
			t.Errorf("the page after 6 steps: %d steps, next %d; want 1, none", len(p.Items), p.Next)
		}
		_, err := e.s.Steps(e.ctx, &store.StepsParams{Tenant: acme, ID: l.ExecutionID, Limit: store.MaxSteps + 1})
		wantErr(t, "Steps with a limit over the maximum", err, store.ErrInvalid)
		_, err = e.s.Steps(e.ctx, &store.StepsParams{Tenant: globex, ID: l.ExecutionID, Limit: 1})
		wantErr(t, "a page as another tenant", err, store.ErrNotFound)
	})

	t.Run("LeaseCarriesABoundedJournal", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		// Three steps of half the lease's bound: the lease carries the first
		// two (the second reaches the bound) and says it is partial.
		half := big(store.ClaimJournalBytes/2 + 1)
		for _, name := range []string{"a", "b", "c"} {
			_, err := e.recordStep(l, at(time.Second), name, half)
			e.must(err, "RecordStep "+name)
		}
		_, err := e.s.Release(e.ctx, &store.ReleaseParams{ExecutionID: l.ExecutionID, Tenant: acme,
			Token: l.Token, Now: at(2 * time.Second)})
		e.must(err, "Release")
		again := e.claimOne(acme, at(3*time.Second))
		if len(again.Steps) != 2 || again.Steps["a"] == nil || again.Steps["b"] == nil || !again.StepsPartial {
			t.Errorf("lease of a journal of 1.5 times its bound: steps %d (partial %v), want a and b, partial",
				len(again.Steps), again.StepsPartial)
		}
		// A journal within the bound comes whole.
		small := e.run(acme, at(4*time.Second), job("small"))
		_, err = e.recordStep(small, at(5*time.Second), "only", `1`)
		e.must(err, "RecordStep only")
		_, err = e.sleep(small, at(5*time.Second), "nap", at(5*time.Second))
		e.must(err, "Suspend (a sleep that is due)")
		l2 := e.claimOne(acme, at(6*time.Second))
		if l2.StepsPartial || len(l2.Steps) != 2 {
			t.Errorf("lease of a small journal: %d steps, partial %v; want 2, whole", len(l2.Steps), l2.StepsPartial)
		}
	})

	t.Run("ClaimOfManyLeasesSharesTheBound", func(t *testing.T) {
		e := start(t, ns)
		// Three flows with a step of half the bound each: one claim of all
		// three carries two of them (the second step reaches the bound) and
		// the third lease nothing, partial.
		half := big(store.ClaimJournalBytes/2 + 1)
		for i := range 3 {
			e.submit(acme, at(time.Duration(i)*time.Second), job("flow"))
		}
		for _, l := range e.claim(store.ClaimParams{Tenant: acme, Max: 3, Now: at(5 * time.Second)}) {
			_, err := e.recordStep(l, at(5*time.Second), "s", half)
			e.must(err, "RecordStep")
			_, err = e.s.Release(e.ctx, &store.ReleaseParams{ExecutionID: l.ExecutionID, Tenant: acme,
				Token: l.Token, Now: at(5 * time.Second)})
			e.must(err, "Release")
		}
		ls := e.claim(store.ClaimParams{Tenant: acme, Max: 3, Now: at(time.Minute)})
		carried, partial := 0, 0
		for _, l := range ls {
			carried += len(l.Steps)
			if l.StepsPartial {
				partial++
				if len(l.Steps) != 0 {
					t.Errorf("a partial lease of a one-step journal carries %d steps", len(l.Steps))
				}
			}
		}
		if len(ls) != 3 || carried != 2 || partial != 1 {
			t.Errorf("a claim of 3 leases with a step of half the bound each: %d leases, %d steps carried, %d partial; "+
				"want 3, 2, 1", len(ls), carried, partial)
		}
	})

	t.Run("ClaimAcrossTenantsSharesTheBound", func(t *testing.T) {
		e := start(t, ns)
		// As above, the three flows of two tenants and the claim for every
		// tenant: the bound is the claim's, not each tenant's.
		e.createTenant(store.CreateTenantParams{Name: globex})
		half := big(store.ClaimJournalBytes/2 + 1)
		for i, tenant := range []string{acme, globex, acme} {
			e.submit(tenant, at(time.Duration(i)*time.Second), job("flow"))
		}
		for _, l := range e.claim(store.ClaimParams{Max: 3, Now: at(5 * time.Second)}) {
			_, err := e.recordStep(l, at(5*time.Second), "s", half)
			e.must(err, "RecordStep")
			_, err = e.s.Release(e.ctx, &store.ReleaseParams{ExecutionID: l.ExecutionID, Token: l.Token, Now: at(5 * time.Second)})
			e.must(err, "Release")
		}
		ls := e.claim(store.ClaimParams{Max: 3, Now: at(time.Minute)})
		carried, partial := 0, 0
		for _, l := range ls {
			carried += len(l.Steps)
			if l.StepsPartial {
				partial++
			}
		}
		if len(ls) != 3 || carried != 2 || partial != 1 {
			t.Errorf("a claim of 3 leases of 2 tenants with a step of half the bound each: %d leases, %d steps carried, "+
				"%d partial; want 3, 2, 1", len(ls), carried, partial)
		}
	})
}
