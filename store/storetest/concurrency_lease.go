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

// testConcurrentLeases races claimers, workers, rescuers, cancellers and
// deleters over the same executions (I2, I3, I5).
func testConcurrentLeases(t *testing.T, ns NewStore) {
	t.Run("ClaimRaceHandsOutEachAttemptOnce", func(t *testing.T) {
		e := start(t, ns)
		const total = 80
		subs := make([]store.Submission, total)
		for i := range subs {
			subs[i] = job("echo")
		}
		e.admit(acme, base, subs...)

		for attempt := 1; attempt <= 2; attempt++ {
			now := at(time.Duration(attempt-1) * (leaseFor + time.Second))
			if attempt == 2 {
				if r := e.rescue(now, 0); r.Requeued != total {
					t.Fatalf("Rescue: %+v, want Requeued %d", r, total)
				}
			}
			leases := e.claimRace(acme, now, 8)
			if len(leases) != total {
				t.Errorf("I2: round %d: %d claims for %d executions", attempt, len(leases), total)
			}
			for _, l := range leases {
				if l.Attempt != attempt {
					t.Errorf("I2: %s handed out as attempt %d in round %d", l.ExecutionID, l.Attempt, attempt)
				}
			}
			e.wantInflight(acme, total)
		}
	})

	t.Run("WorkerVsRescue", func(t *testing.T) {
		// Each expired lease is raced by its worker's late Complete, Fail or
		// Heartbeat and by several rescuers: exactly one side wins.
		e := start(t, ns)
		const n, rescuers = 30, 4
		subs := make([]store.Submission, n)
		for i := range subs {
			subs[i] = job("echo")
		}
		e.admit(acme, base, subs...)
		leases := e.claim(store.ClaimParams{Tenant: acme, Max: n, Now: base})
		if len(leases) != n {
			t.Fatalf("claimed %d, want %d", len(leases), n)
		}
		// The worker still believes its lease is good (its clock says so);
		// the rescuers see it expired. Both may act; only one may win.
		workerNow, late := at(leaseFor-time.Second), at(leaseFor+time.Second)
		ops := []string{"Complete", "Fail", "Heartbeat"}
		workerErrs := make([]error, n)
		rescued := make([]store.RescueResult, rescuers)
		rescueErrs := make([]error, rescuers)
		together(n+rescuers, func(i int) {
			if i >= n {
				// One lease per call, so that rescues interleave with workers.
				for {
					res, err := e.s.Rescue(e.ctx, &store.RescueParams{Now: late, Limit: 1})
					if err != nil {
						rescueErrs[i-n] = err
						return
					}
					if *res == (store.RescueResult{}) {
						return
					}
					rescued[i-n].Requeued += res.Requeued
					rescued[i-n].Failed += res.Failed
					rescued[i-n].Cancelled += res.Cancelled
				}
			}
			l := leases[i]
			switch ops[i%3] {
			case "Complete":
				_, workerErrs[i] = e.s.Complete(e.ctx, &store.CompleteParams{ExecutionID: l.ExecutionID, Tenant: acme, Token: l.Token, Now: workerNow})
			case "Fail":
				_, workerErrs[i] = e.s.Fail(e.ctx, &store.FailParams{ExecutionID: l.ExecutionID, Tenant: acme, Token: l.Token, Error: "late", Now: workerNow})
			case "Heartbeat":
				_, workerErrs[i] = e.s.Heartbeat(e.ctx, &store.HeartbeatParams{ExecutionID: l.ExecutionID, Tenant: acme, Token: l.Token, LeaseDuration: leaseFor, Now: workerNow})
			}
		})
		var total store.RescueResult
		for i, r := range rescued {
			e.must(rescueErrs[i], "Rescue")
			total.Requeued += r.Requeued
			total.Failed += r.Failed
			total.Cancelled += r.Cancelled
		}
		lost := 0
		for i, l := range leases {
			x := e.get(l.ExecutionID)
			if errors.Is(workerErrs[i], store.ErrLeaseLost) {
				lost++
				if x.Status != store.StatusQueued || x.Attempt != 1 {
					t.Errorf("I5: %s lost its lease but is %s attempt %d, want queued 1 (rescued)", ops[i%3], x.Status, x.Attempt)
				}
				continue
			}
			if workerErrs[i] != nil {
				t.Errorf("%s: %v", ops[i%3], workerErrs[i])
				continue
			}
			want := map[string]store.Status{"Complete": store.StatusSucceeded, "Fail": store.StatusFailed, "Heartbeat": store.StatusRunning}[ops[i%3]]
			if x.Status != want {
				t.Errorf("I5: late %s succeeded but the execution is %s, want %s (a rescuer must not have touched it)", ops[i%3], x.Status, want)
			}
		}
		if total.Requeued != lost || total.Failed != 0 || total.Cancelled != 0 {
			t.Errorf("I5: rescuers report %+v, but %d workers lost their lease", total, lost)
		}
		t.Logf("%d of %d late workers lost to the rescuers", lost, n)
		e.wantInflight(acme, len(e.list(store.ListParams{Tenant: acme, Status: store.StatusQueued}))+
			len(e.list(store.ListParams{Tenant: acme, Status: store.StatusRunning})))
		// Heartbeats that won extended their leases: nothing left to rescue now.
		if r := e.rescue(late, 0); r != (store.RescueResult{}) {
			t.Errorf("Rescue after the race: %+v, want nothing", r)
		}
	})

	t.Run("CancelVsClaim", func(t *testing.T) {
		e := start(t, ns)
		const n, claimers = 32, 4
		subs := make([]store.Submission, n)
		for i := range subs {
			subs[i] = job("echo")
		}
		var ids []string
		for _, it := range e.admit(acme, base, subs...) {
			ids = append(ids, it.Execution.ID)
		}
		cancelled := make([]*store.Execution, n)
		cancelErrs := make([]error, n)
		claimed := make([][]store.Lease, claimers)
		claimErrs := make([]error, claimers)
		together(n+claimers, func(i int) {
			if i < n {
				cancelled[i], cancelErrs[i] = e.s.Cancel(e.ctx, &store.CancelParams{Tenant: acme, ID: ids[i], Now: base})
				return
			}
			claimed[i-n], claimErrs[i-n] = claimUntilEmpty(e.ctx, e.s, acme, fmt.Sprintf("worker-%d", i-n), base, 2)
		})
		leases := map[string]store.Lease{}
		for w := range claimers {
			e.must(claimErrs[w], "Claim")
			for _, l := range claimed[w] {
				if _, dup := leases[l.ExecutionID]; dup {
					t.Errorf("I2: %s handed out twice", l.ExecutionID)
				}
				leases[l.ExecutionID] = l
			}
		}
		for _, l := range e.claim(store.ClaimParams{Tenant: acme, Max: n, Now: base}) {
			t.Errorf("%s was still claimable after the race although it was cancelled", l.ExecutionID)
		}
		for i, id := range ids {
			e.must(cancelErrs[i], "Cancel")
			x := e.get(id)
			if _, ok := leases[id]; ok {
				if x.Status != store.StatusRunning || !x.CancelRequested || cancelled[i].Status != store.StatusRunning {
					t.Errorf("claimed then cancelled: status %s cancel_requested %v (Cancel answered %s), want running, true, running",
						x.Status, x.CancelRequested, cancelled[i].Status)
				}
			} else if x.Status != store.StatusCancelled || cancelled[i].Status != store.StatusCancelled {
				t.Errorf("never claimed: status %s (Cancel answered %s), want cancelled", x.Status, cancelled[i].Status)
			}
		}
		t.Logf("%d of %d were claimed before their cancel", len(leases), n)
		e.wantInflight(acme, len(leases))
		for _, l := range leases {
			x, err := e.fail(l, at(time.Second), "stopped", true, 0)
			e.must(err, "Fail")
			if x.Status != store.StatusCancelled {
				t.Errorf("Fail after a cancel request: %s, want cancelled", x.Status)
			}
		}
		e.wantInflight(acme, 0)
	})

	t.Run("ForceDeleteVsWorker", func(t *testing.T) {
		e := start(t, ns)
		const n = 24
		subs := make([]store.Submission, n)
		for i := range subs {
			subs[i] = keyed("echo", fmt.Sprintf("k%d", i), `{}`)
		}
		e.admit(acme, base, subs...)
		leases := e.claim(store.ClaimParams{Tenant: acme, Max: n, Now: base})
		if len(leases) != n {
			t.Fatalf("claimed %d, want %d", len(leases), n)
		}
		workerErrs := make([]error, n)
		deleteErrs := make([]error, n)
		together(2*n, func(i int) {
			l := leases[i%n]
			if i < n {
				_, workerErrs[i] = e.s.Complete(e.ctx, &store.CompleteParams{ExecutionID: l.ExecutionID, Tenant: acme, Token: l.Token, Now: at(time.Second)})
			} else {
				deleteErrs[i-n] = e.s.Delete(e.ctx, &store.DeleteParams{Tenant: acme, ID: l.ExecutionID, Force: true, Now: at(time.Second)})
			}
		})
		for i, l := range leases {
			e.must(deleteErrs[i], "Delete with Force")
			if workerErrs[i] != nil && !errors.Is(workerErrs[i], store.ErrLeaseLost) {
				t.Errorf("Complete racing a force delete: %v, want nil or ErrLeaseLost", workerErrs[i])
			}
			e.gone(l.ExecutionID)
		}
		e.wantInflight(acme, 0)
		for _, l := range leases {
			_, err := e.heartbeat(l, at(2*time.Second), leaseFor)
			wantErr(t, "Heartbeat after the force delete", err, store.ErrLeaseLost)
		}
		// Every key is free.
		for i, it := range e.admit(acme, at(3*time.Second), subs...) {
			if it.Err != nil || it.Deduplicated {
				t.Errorf("resubmit of key k%d: Err %v Deduplicated %v, want a new execution", i, it.Err, it.Deduplicated)
			}
		}
		e.wantInflight(acme, n)
	})

	t.Run("MixedWorkload", func(t *testing.T) {
		// Submitters, workers (completing, failing, releasing, abandoning),
		// a canceller, a deleter and a rescuer all at once on a tight quota,
		// on a fake clock that ticks with every operation. Afterwards I3
		// holds exactly and draining the queue hands out nothing twice.
		e := startEmpty(t, ns)
		const limit = 6
		e.createTenant(store.CreateTenantParams{Name: acme, MaxInflight: limit})
		watch := e.watchInflight(acme)
		seed := time.Now().UnixNano()
		t.Logf("seed %d", seed)

		var tick atomic.Int64
		now := func() time.Time { return at(time.Duration(tick.Add(1)) * time.Millisecond) }
		var mu sync.Mutex
		var problems []string
		problem := func(format string, args ...any) {
			mu.Lock()
			problems = append(problems, fmt.Sprintf(format, args...))
			mu.Unlock()
		}
		// handouts counts leases per (execution, attempt); releases counts
		// attempts given back, which may legitimately be handed out again.
		handouts := map[string]int{}
		releases := map[string]int{}
		record := func(m map[string]int, id string, attempt int) {
			mu.Lock()
			m[fmt.Sprintf("%s#%d", id, attempt)]++
			mu.Unlock()
		}
		okOr := func(what string, err error, allowed ...error) {
			if err != nil && !isAny(err, allowed...) {
				problem("%s: %v", what, err)
			}
		}

		const submitters, workers = 4, 3
		together(submitters+workers+3, func(g int) {
			r := rand.New(rand.NewPCG(uint64(seed), uint64(g)))
			switch {
			case g < submitters:
				for j := range 15 {
					sub := keyed("echo", fmt.Sprintf("k%d", r.IntN(30)), `{}`)
					sub.MaxAttempts = 2
					res, err := e.s.Admit(e.ctx, &store.AdmitParams{Tenant: acme, Items: []store.Submission{sub}, Now: now()})
					if err != nil {
						problem("Admit %d/%d: %v", g, j, err)
						continue
					}
					if a := answerOf(res, nil); a.err != nil && !(a.itemErr && errors.Is(a.err, store.ErrQuotaExceeded)) {
						problem("Admit %d/%d: %v", g, j, a.err)
					}
				}
			case g < submitters+workers:
				for range 25 {
					res, err := e.s.Claim(e.ctx, &store.ClaimParams{WorkerID: fmt.Sprintf("worker-%d", g), Tenant: acme, Max: 2, LeaseDuration: 20 * time.Millisecond, Now: now()})
					if err != nil {
						problem("Claim: %v", err)
						continue
					}
					for _, l := range res.Leases {
						record(handouts, l.ExecutionID, l.Attempt)
						switch r.IntN(5) {
						case 0:
							_, err = e.s.Complete(e.ctx, &store.CompleteParams{ExecutionID: l.ExecutionID, Tenant: acme, Token: l.Token, Now: now()})
							okOr("Complete", err, store.ErrLeaseLost)
						case 1:
							_, err = e.s.Fail(e.ctx, &store.FailParams{ExecutionID: l.ExecutionID, Tenant: acme, Token: l.Token, Error: "x", Retry: true, Now: now()})
							okOr("Fail", err, store.ErrLeaseLost)
						case 2:
							_, err = e.s.Release(e.ctx, &store.ReleaseParams{ExecutionID: l.ExecutionID, Tenant: acme, Token: l.Token, Now: now()})
							if err == nil {
								record(releases, l.ExecutionID, l.Attempt)
							}
							okOr("Release", err, store.ErrLeaseLost)
						case 3:
							_, err = e.s.Heartbeat(e.ctx, &store.HeartbeatParams{ExecutionID: l.ExecutionID, Tenant: acme, Token: l.Token, LeaseDuration: 20 * time.Millisecond, Now: now()})
							okOr("Heartbeat", err, store.ErrLeaseLost)
						case 4: // the worker dies; its lease runs out
						}
					}
				}
			case g == submitters+workers: // canceller
				for range 15 {
					res, err := e.s.List(e.ctx, &store.ListParams{Tenant: acme, Limit: 5})
					if err != nil {
						problem("List: %v", err)
						continue
					}
					for _, x := range res.Items {
						if r.IntN(3) == 0 {
							_, err := e.s.Cancel(e.ctx, &store.CancelParams{Tenant: acme, ID: x.ID, Now: now()})
							okOr("Cancel", err, store.ErrNotFound)
						}
					}
				}
			case g == submitters+workers+1: // force deleter
				for range 10 {
					res, err := e.s.List(e.ctx, &store.ListParams{Tenant: acme, Limit: 3})
					if err != nil {
						problem("List: %v", err)
						continue
					}
					if len(res.Items) > 0 {
						x := res.Items[r.IntN(len(res.Items))]
						okOr("Delete", e.s.Delete(e.ctx, &store.DeleteParams{Tenant: acme, ID: x.ID, Force: true, Now: now()}), store.ErrNotFound)
					}
				}
			default: // rescuer
				for range 20 {
					_, err := e.s.Rescue(e.ctx, &store.RescueParams{Now: now()})
					okOr("Rescue", err)
					runtime.Gosched()
				}
			}
		})
		for _, p := range problems {
			t.Error(p)
		}
		for k, n := range handouts {
			if n > releases[k]+1 {
				t.Errorf("I2: attempt %s handed out %d times with %d releases", k, n, releases[k])
			}
		}
		if high := watch(); high > limit {
			t.Errorf("I3: Inflight reached %d, above max_inflight %d", high, limit)
		}
		t.Logf("%d attempts handed out, tick %d", len(handouts), tick.Load())
		CheckInflight(t, e.s, acme)

		// Drain: expire every lease, then claim and complete what is left.
		later := at(time.Hour)
		e.rescue(later, 0)
		seen := map[string]bool{}
		for range 100 {
			ls := e.claim(store.ClaimParams{Tenant: acme, Max: 50, Now: later})
			if len(ls) == 0 {
				break
			}
			for _, l := range ls {
				if seen[l.ExecutionID] {
					t.Errorf("I2: %s handed out twice while draining", l.ExecutionID)
				}
				seen[l.ExecutionID] = true
				_, err := e.complete(l, later, nil)
				e.must(err, "Complete while draining")
			}
		}
		e.wantInflight(acme, 0)
	})
}

// claimUntilEmpty claims for one worker until a claim comes back empty.
func claimUntilEmpty(ctx context.Context, s store.Store, tenant, worker string, now time.Time, max int) ([]store.Lease, error) {
	var out []store.Lease
	for {
		res, err := s.Claim(ctx, &store.ClaimParams{WorkerID: worker, Tenant: tenant, Max: max, LeaseDuration: leaseFor, Now: now})
		if err != nil {
			return out, err
		}
		if len(res.Leases) == 0 {
			return out, nil
		}
		out = append(out, res.Leases...)
	}
}

// claimRace lets workers claim tenant's ready executions concurrently (each
// with a different Max) until none is left, sweeps up anything a worker gave
// up on too early, and returns every lease after checking that no execution
// was handed out twice.
func (e *env) claimRace(tenant string, now time.Time, workers int) []store.Lease {
	e.t.Helper()
	got := make([][]store.Lease, workers)
	errs := make([]error, workers)
	together(workers, func(w int) {
		got[w], errs[w] = claimUntilEmpty(e.ctx, e.s, tenant, fmt.Sprintf("worker-%d", w), now, 1+w%4)
	})
	var all []store.Lease
	for w := range workers {
		e.must(errs[w], "Claim")
		all = append(all, got[w]...)
	}
	all = append(all, e.claim(store.ClaimParams{Tenant: tenant, Max: 1000, Now: now})...)
	seen := map[string]bool{}
	tokens := map[string]bool{}
	for _, l := range all {
		if seen[l.ExecutionID] {
			e.t.Errorf("I2: %s (attempt %d) handed out twice", l.ExecutionID, l.Attempt)
		}
		if tokens[l.Token] {
			e.t.Errorf("I2: lease token %q handed out twice", l.Token)
		}
		seen[l.ExecutionID], tokens[l.Token] = true, true
	}
	return all
}
