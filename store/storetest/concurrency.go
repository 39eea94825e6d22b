package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testConcurrency races real goroutines against one store: the check-then-act
// races the one-operation rule exists to end. Run it with -race.
func testConcurrency(t *testing.T, ns NewStore) {
	testConcurrentAdmission(t, ns)
	testConcurrentLeases(t, ns)
}

// testConcurrentAdmission races submitters, deleters and tenant setup (I1, I3).
func testConcurrentAdmission(t *testing.T, ns NewStore) {
	t.Run("AdmitSameKey64", func(t *testing.T) {
		e := start(t, ns)
		const n = 64
		sub := keyed("echo", "order-42", `{"order":42}`)
		answers := make([]answer, n)
		together(n, func(i int) {
			res, err := e.s.Admit(e.ctx, &store.AdmitParams{
				Tenant: acme, Items: []store.Submission{sub}, Now: at(time.Duration(i) * time.Millisecond)})
			answers[i] = answerOf(res, err)
		})
		id, fresh := "", 0
		for i, a := range answers {
			if a.err != nil {
				t.Errorf("I1: submitter %d: %v", i, a.err)
				continue
			}
			if id == "" {
				id = a.id
			}
			if a.id == "" || a.id != id {
				t.Errorf("I1: submitter %d got execution %q, another got %q", i, a.id, id)
			}
			if !a.dedup {
				fresh++
			}
		}
		if fresh != 1 {
			t.Errorf("I1: %d submitters were told they created the execution, want exactly 1", fresh)
		}
		if xs := e.list(store.ListParams{Tenant: acme, DedupKey: "order-42"}); len(xs) != 1 {
			t.Errorf("I1: %d executions exist for the key, want 1", len(xs))
		}
		e.wantInflight(acme, 1)
		if got := e.claimRace(acme, at(time.Second), 8); len(got) != 1 || got[0].ExecutionID != id {
			t.Errorf("I2: claimers were handed %d leases, want exactly one of %s", len(got), id)
		}
		e.wantInflight(acme, 1)
	})

	t.Run("AdmitSameKeyWithDyingSubmitters", func(t *testing.T) {
		e := start(t, ns)
		seed := time.Now().UnixNano()
		t.Logf("seed %d", seed)
		for round := range 3 {
			key := fmt.Sprintf("order-%d", round)
			sub := keyed("echo", key, `{"round":true}`)
			const n = 64
			answers := make([]answer, n)
			var cancels sync.WaitGroup
			together(n, func(i int) {
				// Every fourth submitter lives; the others die before, during
				// or after their call, at moments the seed decides.
				ctx, cancel := dyingContext(e.ctx, i%4, rand.New(rand.NewPCG(uint64(seed), uint64(round*n+i))), &cancels)
				defer cancel()
				res, err := e.s.Admit(ctx, &store.AdmitParams{Tenant: acme, Items: []store.Submission{sub}, Now: at(time.Duration(round) * time.Second)})
				answers[i] = answerOf(res, err)
				answers[i].died = i%4 != 0
			})
			cancels.Wait()
			t.Logf("round %d: %d of %d submitters got an error", round, countErrs(answers), n)

			xs := e.list(store.ListParams{Tenant: acme, DedupKey: key})
			if len(xs) != 1 {
				t.Fatalf("I1: round %d: %d executions exist for the key, want exactly 1", round, len(xs))
			}
			for i, a := range answers {
				switch {
				case a.err == nil && a.id != xs[0].ID:
					t.Errorf("I1: round %d: submitter %d got %s, but the key's execution is %s", round, i, a.id, xs[0].ID)
				case a.err != nil && !a.died:
					t.Errorf("round %d: submitter %d, whose context was never cancelled: %v", round, i, a.err)
				case a.itemErr:
					t.Errorf("round %d: submitter %d got an item error, which may only be quota, reuse or invalid: %v", round, i, a.err)
				}
			}
			// A retry finds the execution: nothing half-written blocks it.
			e.dedup(acme, at(time.Duration(round)*time.Second+time.Millisecond), sub, xs[0].ID)
			e.wantInflight(acme, round+1)
		}
		if got := e.claimRace(acme, at(time.Minute), 4); len(got) != 3 {
			t.Errorf("I2: claimers were handed %d leases, want 3", len(got))
		}
		e.wantInflight(acme, 3)
	})

	t.Run("AdmitSameKeyAllSubmittersDie", func(t *testing.T) {
		e := start(t, ns)
		seed := time.Now().UnixNano()
		t.Logf("seed %d", seed)
		for round := range 4 {
			key := fmt.Sprintf("order-%d", round)
			sub := keyed("echo", key, `{}`)
			const n = 32
			answers := make([]answer, n)
			var cancels sync.WaitGroup
			together(n, func(i int) {
				ctx, cancel := dyingContext(e.ctx, 1+i%3, rand.New(rand.NewPCG(uint64(seed), uint64(round*n+i))), &cancels)
				defer cancel()
				res, err := e.s.Admit(ctx, &store.AdmitParams{Tenant: acme, Items: []store.Submission{sub}, Now: at(time.Duration(round) * time.Second)})
				answers[i] = answerOf(res, err)
			})
			cancels.Wait()
			t.Logf("round %d: %d of %d submitters got an error", round, countErrs(answers), n)

			xs := e.list(store.ListParams{Tenant: acme, DedupKey: key})
			if len(xs) > 1 {
				t.Fatalf("I1: round %d: %d executions exist for the key", round, len(xs))
			}
			for i, a := range answers {
				if a.err == nil && (len(xs) == 0 || a.id != xs[0].ID) {
					t.Errorf("I1: round %d: submitter %d was answered %s, which does not exist as the key's execution", round, i, a.id)
				}
			}
			// I9: whatever the dead submitters left, a retry succeeds.
			it := e.admitOne(acme, at(time.Duration(round)*time.Second+time.Millisecond), sub)
			if it.Err != nil {
				t.Fatalf("I9: round %d: retry after dead submitters: %v", round, it.Err)
			}
			if len(xs) == 1 && (!it.Deduplicated || it.Execution.ID != xs[0].ID) {
				t.Errorf("I1: round %d: retry got %s (Deduplicated=%v), want %s", round, it.Execution.ID, it.Deduplicated, xs[0].ID)
			}
			if len(xs) == 0 && it.Deduplicated {
				t.Errorf("I1: round %d: retry deduplicated onto %s, which List did not show", round, it.Execution.ID)
			}
			if n := len(e.list(store.ListParams{Tenant: acme, DedupKey: key})); n != 1 {
				t.Errorf("round %d: %d executions for the key after the retry, want 1", round, n)
			}
			e.wantInflight(acme, round+1)
		}
	})

	t.Run("AdmitOverlappingBatches", func(t *testing.T) {
		// Batches naming the same keys in different orders must neither
		// deadlock nor split a key over two executions.
		e := start(t, ns)
		keys := []string{"a", "b", "c", "d"}
		const n = 16
		results := make([][]store.Admitted, n)
		errs := make([]error, n)
		together(n, func(i int) {
			var items []store.Submission
			for j := range keys {
				items = append(items, keyed("echo", keys[(i+j)%len(keys)], `{}`))
			}
			res, err := e.s.Admit(e.ctx, &store.AdmitParams{Tenant: acme, Items: items, Now: base})
			if err != nil {
				errs[i] = err
				return
			}
			results[i] = res.Items
		})
		byKey := map[string]string{}
		for i := range n {
			if errs[i] != nil {
				t.Errorf("batch %d: %v", i, errs[i])
				continue
			}
			for j, it := range results[i] {
				key := keys[(i+j)%len(keys)]
				if it.Err != nil {
					t.Errorf("batch %d item %d: %v", i, j, it.Err)
					continue
				}
				if prev, ok := byKey[key]; ok && prev != it.Execution.ID {
					t.Errorf("I1: key %s answered with %s and %s", key, prev, it.Execution.ID)
				}
				byKey[key] = it.Execution.ID
			}
		}
		if n := len(e.list(store.ListParams{Tenant: acme})); n != len(keys) {
			t.Errorf("I1: %d executions, want %d", n, len(keys))
		}
		e.wantInflight(acme, len(keys))
	})

	t.Run("QuotaRaceAtLimit", func(t *testing.T) {
		e := startEmpty(t, ns)
		const limit = 8
		e.createTenant(store.CreateTenantParams{Name: acme, MaxInflight: limit})
		watch := e.watchInflight(acme)

		race := func(round string) (admitted int) {
			const n = 48
			items := make([][]store.Admitted, n)
			errs := make([]error, n)
			together(n, func(i int) {
				subs := []store.Submission{keyed("echo", fmt.Sprintf("%s-%d", round, i), `{}`)}
				if i%4 == 0 { // some submit two at once
					subs = append(subs, keyed("echo", fmt.Sprintf("%s-%d-b", round, i), `{}`))
				}
				res, err := e.s.Admit(e.ctx, &store.AdmitParams{Tenant: acme, Items: subs, Now: base})
				if err != nil {
					errs[i] = err
					return
				}
				items[i] = res.Items
			})
			for i := range n {
				if errs[i] != nil {
					t.Errorf("%s: submitter %d: %v", round, i, errs[i])
				}
				for _, it := range items[i] {
					switch {
					case it.Err == nil && !it.Deduplicated:
						admitted++
					case !errors.Is(it.Err, store.ErrQuotaExceeded):
						t.Errorf("%s: submitter %d: item Err %v Deduplicated %v, want admitted or ErrQuotaExceeded", round, i, it.Err, it.Deduplicated)
					}
				}
			}
			return admitted
		}

		if got := race("first"); got != limit {
			t.Errorf("I3: %d admitted racing for %d slots", got, limit)
		}
		e.wantInflight(acme, limit)

		// Finish three; exactly three more get in.
		ls := e.claim(store.ClaimParams{Tenant: acme, Max: 3, Now: at(time.Second)})
		for _, l := range ls {
			_, err := e.complete(l, at(2*time.Second), nil)
			e.must(err, "Complete")
		}
		e.wantInflight(acme, limit-3)
		if got := race("second"); got != 3 {
			t.Errorf("I3: %d admitted racing for 3 freed slots", got)
		}
		if high := watch(); high > limit {
			t.Errorf("I3: Inflight reached %d, above max_inflight %d", high, limit)
		}
		e.wantInflight(acme, limit)
	})

	t.Run("ForceDeleteVsResubmit", func(t *testing.T) {
		e := start(t, ns)
		sub := keyed("echo", "k", `{}`)
		for round := range 4 {
			now := at(time.Duration(round) * time.Minute)
			first := e.admitOne(acme, now, sub) // new, or the previous round's survivor
			if first.Err != nil {
				t.Fatalf("round %d: Admit: %v", round, first.Err)
			}
			old := first.Execution
			const n = 16
			answers := make([]answer, n)
			var delErr error
			together(n+1, func(i int) {
				if i == n {
					delErr = e.s.Delete(e.ctx, &store.DeleteParams{Tenant: acme, ID: old.ID, Force: true, Now: now})
					return
				}
				res, err := e.s.Admit(e.ctx, &store.AdmitParams{Tenant: acme, Items: []store.Submission{sub}, Now: now})
				answers[i] = answerOf(res, err)
			})
			e.must(delErr, "Delete with Force")
			e.gone(old.ID)
			xs := e.list(store.ListParams{Tenant: acme, DedupKey: "k"})
			if len(xs) > 1 {
				t.Fatalf("I1: round %d: %d executions for one key", round, len(xs))
			}
			creators := 0
			for i, a := range answers {
				switch {
				case a.err != nil:
					t.Errorf("round %d: submitter %d: %v", round, i, a.err)
				case a.id == old.ID:
					if !a.dedup {
						t.Errorf("round %d: submitter %d was told it created the old execution", round, i)
					}
				case len(xs) == 0 || a.id != xs[0].ID:
					t.Errorf("I1: round %d: submitter %d got %s, which is not the key's execution", round, i, a.id)
				case !a.dedup:
					creators++
				}
			}
			if len(xs) == 1 && xs[0].ID != old.ID && creators != 1 {
				t.Errorf("I1: round %d: %d submitters were told they created %s, want 1", round, creators, xs[0].ID)
			}
			e.wantInflight(acme, len(xs))
		}
	})

	t.Run("CreateTenantRace", func(t *testing.T) {
		e := startEmpty(t, ns)
		const n = 16
		errs := make([]error, n)
		together(n, func(i int) {
			_, errs[i] = e.s.CreateTenant(e.ctx, &store.CreateTenantParams{
				Name: acme, MaxInflight: 100 + i, KeyHash: fmt.Sprintf("hash-%d", i), Now: base})
		})
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Errorf("both %d and %d created tenant acme", winner, i)
			case err == nil:
				winner = i
			default:
				wantErr(t, "losing CreateTenant", err, store.ErrTenantExists)
			}
		}
		if winner < 0 {
			t.Fatal("no CreateTenant succeeded")
		}
		if tn := e.tenant(acme); tn.MaxInflight != 100+winner {
			t.Errorf("max_inflight %d, want the winner's %d", tn.MaxInflight, 100+winner)
		}
		for i := range n {
			k, err := e.s.LookupAPIKey(e.ctx, &store.LookupAPIKeyParams{KeyHash: fmt.Sprintf("hash-%d", i)})
			if i == winner {
				if err != nil || k.Tenant != acme {
					t.Errorf("the winner's key: %+v, %v", k, err)
				}
			} else {
				wantErr(t, "a loser's key", err, store.ErrNotFound)
			}
		}
	})

	t.Run("EnsureAdminKeyRace", func(t *testing.T) {
		e := startEmpty(t, ns)
		const n = 16
		created := make([]bool, n)
		errs := make([]error, n)
		together(n, func(i int) {
			res, err := e.s.EnsureAdminKey(e.ctx, &store.EnsureAdminKeyParams{KeyHash: fmt.Sprintf("hash-admin-%d", i), Now: base})
			errs[i] = err
			if err == nil {
				created[i] = res.Created
			}
		})
		winner := -1
		for i := range n {
			e.must(errs[i], "EnsureAdminKey")
			if created[i] {
				if winner >= 0 {
					t.Errorf("both %d and %d created the admin key", winner, i)
				}
				winner = i
			}
		}
		if winner < 0 {
			t.Fatal("no EnsureAdminKey reported Created")
		}
		for i := range n {
			k, err := e.s.LookupAPIKey(e.ctx, &store.LookupAPIKeyParams{KeyHash: fmt.Sprintf("hash-admin-%d", i)})
			if i == winner {
				if err != nil || !k.Admin {
					t.Errorf("the stored admin key: %+v, %v", k, err)
				}
			} else {
				wantErr(t, "a key that lost the race", err, store.ErrNotFound)
			}
		}
	})
}

// answer is what one concurrent submitter was told.
type answer struct {
	id      string
	dedup   bool
	err     error
	itemErr bool // err came from the item, not the call
	died    bool // the submitter's context was cancelled at some point
}

func answerOf(res *store.AdmitResult, err error) answer {
	switch {
	case err != nil:
		return answer{err: err}
	case res == nil || len(res.Items) != 1:
		return answer{err: fmt.Errorf("admit answered %v for one submission", res)}
	case res.Items[0].Err != nil:
		return answer{err: res.Items[0].Err, itemErr: true}
	case res.Items[0].Execution == nil:
		return answer{err: errors.New("admit item has neither Execution nor Err")}
	}
	return answer{id: res.Items[0].Execution.ID, dedup: res.Items[0].Deduplicated}
}

func countErrs(answers []answer) (n int) {
	for _, a := range answers {
		if a.err != nil {
			n++
		}
	}
	return n
}

// dyingContext returns a context for a submitter that, by mode, lives (0),
// is dead before it starts (1), dies after a random number of scheduler
// yields (2), or dies after a random deadline of up to 3ms (3). The
// goroutine that cancels in mode 2 is counted in wg.
func dyingContext(parent context.Context, mode int, r *rand.Rand, wg *sync.WaitGroup) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	switch mode {
	case 1:
		cancel()
	case 2:
		spins := r.IntN(2000)
		wg.Go(func() {
			for range spins {
				runtime.Gosched()
			}
			cancel()
		})
	case 3:
		ctx, stop := context.WithTimeout(ctx, time.Duration(r.IntN(3000))*time.Microsecond)
		return ctx, func() { stop(); cancel() }
	}
	return ctx, cancel
}

// watchInflight polls the tenant's Inflight on another goroutine until the
// returned function is called, which reports the highest value seen.
func (e *env) watchInflight(tenant string) func() int {
	var high atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			if tn, err := e.s.GetTenant(e.ctx, &store.GetTenantParams{Name: tenant}); err == nil {
				for v := int64(tn.Inflight); ; {
					cur := high.Load()
					if v <= cur || high.CompareAndSwap(cur, v) {
						break
					}
				}
			}
			runtime.Gosched()
		}
	})
	stopped := false
	stop := func() int {
		if !stopped {
			close(done)
			wg.Wait()
			stopped = true
		}
		return int(high.Load())
	}
	e.t.Cleanup(func() { stop() })
	return stop
}
