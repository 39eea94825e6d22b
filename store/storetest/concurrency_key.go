package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testConcurrencyKey covers invariant I4: running executions of one tenant
// with one concurrency_key never exceed its limit (keys are scoped per
// tenant), every way an attempt ends frees
// its slot, and work blocked on a key neither hides other work nor stays
// blocked once a slot is free.
func testConcurrencyKey(t *testing.T, ns NewStore) {
	limited := func(kind, key string, limit int) store.Submission {
		s := job(kind)
		s.ConcurrencyKey, s.ConcurrencyLimit = key, limit
		return s
	}

	t.Run("LimitOneRunsOneAtATime", func(t *testing.T) {
		e := start(t, ns)
		var ids []string
		for i := range 3 {
			ids = append(ids, e.submit(acme, at(time.Duration(i)*time.Second), limited("echo", "customer-1", 1)).ID)
		}
		for i, id := range ids {
			now := at(time.Minute + time.Duration(i)*time.Second)
			ls := e.claim(store.ClaimParams{Tenant: acme, Max: 10, Now: now})
			if len(ls) != 1 || ls[0].ExecutionID != id {
				t.Fatalf("I4: claim %d handed out %d leases, want only %s", i, len(ls), id)
			}
			e.claimNone(acme, now)
			_, err := e.complete(ls[0], now, nil)
			e.must(err, "Complete")
		}
		e.wantInflight(acme, 0)
	})

	t.Run("LimitAboveOne", func(t *testing.T) {
		e := start(t, ns)
		for range 5 {
			e.submit(acme, base, limited("echo", "customer-1", 2))
		}
		if ls := e.claim(store.ClaimParams{Tenant: acme, Max: 10, Now: base}); len(ls) != 2 {
			t.Errorf("I4: one claim handed out %d leases of a key with limit 2", len(ls))
		}
		e.claimNone(acme, at(time.Second))
		e.wantInflight(acme, 5)
	})

	t.Run("KeysAreIndependent", func(t *testing.T) {
		e := start(t, ns)
		for range 2 {
			e.submit(acme, base, limited("echo", "customer-1", 1))
			e.submit(acme, base, limited("echo", "customer-2", 1))
			e.submit(acme, base, job("echo"))
		}
		ls := e.claim(store.ClaimParams{Tenant: acme, Max: 10, Now: base})
		keys := map[string]int{}
		for _, l := range ls {
			keys[e.get(l.ExecutionID).ConcurrencyKey]++
		}
		if len(ls) != 4 || keys["customer-1"] != 1 || keys["customer-2"] != 1 || keys[""] != 2 {
			t.Errorf("I4: claimed %d leases by key %v, want one per key and both unkeyed", len(ls), keys)
		}
	})

	t.Run("TenantsDoNotShareKeys", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		e.run(acme, base, limited("echo", "k", 1))
		second := e.submit(acme, at(time.Second), limited("echo", "k", 1))
		theirs := e.submit(globex, at(time.Second), limited("echo", "k", 1))
		e.claimNone(acme, at(2*time.Second)) // acme's key is at its limit
		ls := e.claim(store.ClaimParams{Tenant: globex, Max: 10, Now: at(3 * time.Second)})
		if len(ls) != 1 || ls[0].ExecutionID != theirs.ID {
			t.Errorf("I4: globex claimed %d leases while acme ran its key \"k\", want only %s", len(ls), theirs.ID)
		}
		e.claimNone(acme, at(4*time.Second))
		e.wantStatus(second.ID, store.StatusQueued)
		e.wantInflight(acme, 2)
		e.wantInflight(globex, 1)
	})

	t.Run("BlockedWorkDoesNotHideOtherWork", func(t *testing.T) {
		e := start(t, ns)
		running := e.run(acme, base, limited("first", "customer-1", 1))
		for range 20 { // ahead of the free one in claim order, all blocked
			s := limited("blocked", "customer-1", 1)
			s.Priority = 9
			e.submit(acme, at(time.Second), s)
		}
		free := e.submit(acme, at(2*time.Second), job("free"))
		for range 3 { // a claim that finds only blocked work must not hide it later
			ls := e.claim(store.ClaimParams{Tenant: acme, Max: 1, Now: at(3 * time.Second)})
			if len(ls) == 1 {
				if ls[0].ExecutionID != free.ID {
					t.Fatalf("I4: claimed %s (%s) while its key is at its limit", ls[0].ExecutionID, ls[0].Kind)
				}
				break
			}
		}
		e.wantStatus(free.ID, store.StatusRunning)
		e.claimNone(acme, at(4*time.Second))

		// A slot frees: exactly one blocked execution may start.
		_, err := e.complete(running, at(5*time.Second), nil)
		e.must(err, "Complete")
		if ls := e.claim(store.ClaimParams{Tenant: acme, Max: 10, Now: at(6 * time.Second)}); len(ls) != 1 || ls[0].Kind != "blocked" {
			t.Errorf("I4: after a slot freed, claimed %d leases, want one blocked execution", len(ls))
		}
		e.wantInflight(acme, 21)
	})

	// A filtered claim sees every execution of a key it may start: one the
	// key held back is claimable by a worker of its own kind (or queue) once
	// the key has a free slot, even while an execution of the key of another
	// kind (queue), which that worker cannot take, is ready too.
	filtered := []struct {
		name        string
		ready, held func(store.Submission) store.Submission
		filter      func(p *store.ClaimParams)
	}{
		{"Kind",
			func(s store.Submission) store.Submission { s.Kind = "sleep"; return s },
			func(s store.Submission) store.Submission { s.Kind = "echo"; return s },
			func(p *store.ClaimParams) { p.Kinds = []string{"echo"} }},
		{"Queue",
			func(s store.Submission) store.Submission { s.Queue = "slow"; return s },
			func(s store.Submission) store.Submission { s.Queue = "fast"; return s },
			func(p *store.ClaimParams) { p.Queues = []string{"fast"} }},
	}
	for _, f := range filtered {
		for _, scope := range []string{acme, ""} {
			name := "HeldBackSeenByClaimFilteredBy" + f.name
			if scope == "" {
				name += "ForEveryTenant"
			}
			t.Run(name, func(t *testing.T) {
				e := start(t, ns)
				first := e.run(acme, base, f.ready(limited("echo", "customer-1", 1)))
				held := e.submit(acme, at(time.Second), f.held(limited("echo", "customer-1", 1)))
				e.claimNone(acme, at(2*time.Second)) // held is blocked (and may be set aside)
				_, err := e.release(first, at(3*time.Second))
				e.must(err, "Release")
				// Nothing of the key runs: held may start, and is the only
				// execution this claim may take.
				p := store.ClaimParams{Tenant: scope, Max: 10, Now: at(4 * time.Second)}
				f.filter(&p)
				if ls := e.claim(p); len(ls) != 1 || ls[0].ExecutionID != held.ID {
					t.Fatalf("I4: a claim filtered by %s claimed %d leases while its key runs nothing, want only %s",
						f.name, len(ls), held.ID)
				}
				e.claimNone(acme, at(5*time.Second)) // the key is at its limit again
				e.wantInflight(acme, 2)
			})
		}
	}

	// Limits are per execution: one held back under a higher limit may start
	// while one of the same key under a lower limit may not.
	t.Run("HeldBackSeenBesideALowerLimit", func(t *testing.T) {
		e := start(t, ns)
		a1 := e.run(acme, base, limited("echo", "customer-1", 2))
		e.run(acme, at(time.Second), limited("echo", "customer-1", 2))
		held := e.submit(acme, at(2*time.Second), limited("echo", "customer-1", 2))
		e.claimNone(acme, at(3*time.Second)) // held is blocked (and may be set aside)
		e.submit(acme, at(4*time.Second), limited("echo", "customer-1", 1))
		_, err := e.complete(a1, at(5*time.Second), nil)
		e.must(err, "Complete")
		// One runs: held (limit 2) may start, the last (limit 1) may not.
		if ls := e.claim(store.ClaimParams{Tenant: acme, Max: 10, Now: at(6 * time.Second)}); len(ls) != 1 || ls[0].ExecutionID != held.ID {
			t.Fatalf("I4: claimed %d leases with one of the key running, want only %s", len(ls), held.ID)
		}
		e.claimNone(acme, at(7*time.Second))
		e.wantInflight(acme, 3)
	})

	// The same for a rate limit: one held back without a rate key may start
	// while one of the same key whose bucket is empty may not.
	t.Run("HeldBackSeenBesideAnEmptyBucket", func(t *testing.T) {
		e := start(t, ns)
		e.putRateLimit(acme, "r", 1, time.Hour, 1, base)
		spend := job("echo")
		spend.RateKey = "r"
		e.run(acme, base, spend) // the bucket's one token
		first := e.run(acme, at(time.Second), limited("echo", "customer-1", 1))
		held := e.submit(acme, at(2*time.Second), limited("echo", "customer-1", 1))
		e.claimNone(acme, at(3*time.Second)) // held is blocked (and may be set aside)
		bucketed := limited("echo", "customer-1", 1)
		bucketed.RateKey = "r"
		e.submit(acme, at(4*time.Second), bucketed)
		_, err := e.complete(first, at(5*time.Second), nil)
		e.must(err, "Complete")
		if ls := e.claim(store.ClaimParams{Tenant: acme, Max: 10, Now: at(6 * time.Second)}); len(ls) != 1 || ls[0].ExecutionID != held.ID {
			t.Fatalf("I4: claimed %d leases with nothing of the key running, want only %s", len(ls), held.ID)
		}
		e.wantInflight(acme, 3)
	})

	// Every way an attempt ends frees its slot for the next execution.
	ends := []struct {
		name string
		end  func(e *env, l store.Lease, now time.Time) error
	}{
		{"Complete", func(e *env, l store.Lease, now time.Time) error { _, err := e.complete(l, now, nil); return err }},
		{"Fail", func(e *env, l store.Lease, now time.Time) error { _, err := e.fail(l, now, "x", false, 0); return err }},
		{"FailWithRetry", func(e *env, l store.Lease, now time.Time) error {
			_, err := e.fail(l, now, "x", true, time.Hour)
			return err
		}},
		{"Release", func(e *env, l store.Lease, now time.Time) error {
			// The released execution goes back to the queue ahead of the
			// waiting one; end it for good so that the waiting one is next.
			if _, err := e.release(l, now); err != nil {
				return err
			}
			return e.del(acme, l.ExecutionID, true, now)
		}},
		{"CancelThenFail", func(e *env, l store.Lease, now time.Time) error {
			if _, err := e.cancel(acme, l.ExecutionID, now); err != nil {
				return err
			}
			_, err := e.fail(l, now, "stopped", true, 0)
			return err
		}},
		{"ForceDelete", func(e *env, l store.Lease, now time.Time) error { return e.del(acme, l.ExecutionID, true, now) }},
		{"Rescue", func(e *env, l store.Lease, now time.Time) error {
			// Rescue queues it again ahead of the waiting one (older run_at
			// is not the point here): cancel it first so that it ends.
			if _, err := e.cancel(acme, l.ExecutionID, now); err != nil {
				return err
			}
			if r := e.rescue(now.Add(time.Hour), 0); r.Cancelled != 1 {
				return fmt.Errorf("rescue: %+v, want Cancelled 1", r)
			}
			return nil
		}},
	}
	for _, end := range ends {
		t.Run("SlotFreedBy"+end.name, func(t *testing.T) {
			e := start(t, ns)
			first := e.run(acme, base, limited("first", "customer-1", 1))
			next := e.submit(acme, at(time.Second), limited("next", "customer-1", 1))
			e.claimNone(acme, at(2*time.Second)) // next is blocked (and may be set aside)
			e.must(end.end(e, first, at(3*time.Second)), end.name)
			now := at(2 * time.Hour)
			ls := e.claim(store.ClaimParams{Tenant: acme, Max: 10, Now: now})
			if len(ls) != 1 || ls[0].ExecutionID != next.ID {
				t.Errorf("I4: after %s, claimed %d leases, want only %s", end.name, len(ls), next.ID)
			}
			CheckInflight(t, e.s, acme)
		})
	}

	t.Run("CancelledWaiterDoesNotBlockTheNext", func(t *testing.T) {
		e := start(t, ns)
		first := e.run(acme, base, limited("first", "customer-1", 1))
		a := e.submit(acme, at(time.Second), limited("a", "customer-1", 1))
		b := e.submit(acme, at(2*time.Second), limited("b", "customer-1", 1))
		e.claimNone(acme, at(3*time.Second))
		_, err := e.complete(first, at(4*time.Second), nil)
		e.must(err, "Complete")
		_, err = e.cancel(acme, a.ID, at(5*time.Second))
		e.must(err, "Cancel")
		if ls := e.claim(store.ClaimParams{Tenant: acme, Max: 10, Now: at(6 * time.Second)}); len(ls) != 1 || ls[0].ExecutionID != b.ID {
			t.Errorf("I4: claimed %d leases after the waiter ahead was cancelled, want only %s", len(ls), b.ID)
		}
		e.wantInflight(acme, 1)
	})

	t.Run("DeletedWaiterDoesNotBlockTheNext", func(t *testing.T) {
		e := start(t, ns)
		first := e.run(acme, base, limited("first", "customer-1", 1))
		a := e.submit(acme, at(time.Second), limited("a", "customer-1", 1))
		b := e.submit(acme, at(2*time.Second), limited("b", "customer-1", 1))
		e.claimNone(acme, at(3*time.Second))
		e.must(e.del(acme, a.ID, true, at(4*time.Second)), "Delete with Force")
		_, err := e.complete(first, at(5*time.Second), nil)
		e.must(err, "Complete")
		if ls := e.claim(store.ClaimParams{Tenant: acme, Max: 10, Now: at(6 * time.Second)}); len(ls) != 1 || ls[0].ExecutionID != b.ID {
			t.Errorf("I4: claimed %d leases after the waiter ahead was deleted, want only %s", len(ls), b.ID)
		}
		e.wantInflight(acme, 1)
	})

	t.Run("DueScheduledCountsAgainstTheKey", func(t *testing.T) {
		e := start(t, ns)
		e.run(acme, base, limited("first", "customer-1", 1))
		later := limited("later", "customer-1", 1)
		later.RunAt = at(time.Minute)
		x := e.submit(acme, base, later)
		e.claimNone(acme, at(2*time.Minute))
		e.promote(at(3*time.Minute), 0)
		e.claimNone(acme, at(4*time.Minute))
		x2 := e.get(x.ID)
		if x2.Status != store.StatusQueued && x2.Status != store.StatusScheduled {
			t.Errorf("blocked execution is %s, want queued (or scheduled)", x2.Status)
		}
		e.wantInflight(acme, 2)
	})

	t.Run("ClaimRaceHoldsTheLimit", func(t *testing.T) {
		e := start(t, ns)
		const n, limit = 40, 3
		subs := make([]store.Submission, n)
		for i := range subs {
			subs[i] = limited("echo", "customer-1", limit)
			if i%4 == 0 {
				subs[i] = job("free")
			}
		}
		e.admit(acme, base, subs...)
		for round := range 4 {
			now := at(time.Duration(round) * time.Minute)
			leases := e.claimRace(acme, now, 8)
			keyed := 0
			for _, l := range leases {
				if l.Kind == "echo" {
					keyed++
				}
			}
			if keyed != limit {
				t.Errorf("I4: round %d: %d executions of a key with limit %d started at once", round, keyed, limit)
			}
			for _, l := range leases {
				_, err := e.complete(l, now.Add(time.Second), nil)
				e.must(err, "Complete")
			}
		}
		e.wantInflight(acme, n-n/4-4*limit)
	})
}
