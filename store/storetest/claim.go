package storetest

import (
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testClaim covers Store.Claim: what a lease carries, what is ready, order,
// filters and Max (invariant I2 one call at a time).
func testClaim(t *testing.T, ns NewStore) {
	t.Run("ZeroMaxAndLeaseTakeDefaults", func(t *testing.T) {
		e := start(t, ns)
		e.submit(acme, base, job("echo"))
		e.submit(acme, base, job("echo"))
		now := at(time.Minute)
		res, err := e.s.Claim(e.ctx, &store.ClaimParams{WorkerID: "worker-1", Tenant: acme, Now: now})
		e.must(err, "Claim with Max 0 and LeaseDuration 0")
		if len(res.Leases) != 1 {
			t.Fatalf("Claim with Max 0: %d leases, want 1", len(res.Leases))
		}
		wantTime(t, "lease expiry with LeaseDuration 0", res.Leases[0].ExpiresAt, now.Add(store.DefaultLease))
		later := now.Add(time.Second)
		hb, err := e.heartbeat(res.Leases[0], later, 0)
		e.must(err, "Heartbeat with LeaseDuration 0")
		wantTime(t, "heartbeat expiry with LeaseDuration 0", hb.ExpiresAt, later.Add(store.DefaultLease))
	})

	t.Run("LeasesQueuedExecution", func(t *testing.T) {
		e := start(t, ns)
		sub := keyed("http", "k", `{"url":"https://example.com"}`)
		sub.Queue, sub.MaxAttempts, sub.TimeoutSeconds = "mail", 4, 90
		x := e.submit(acme, base, sub)
		now := at(time.Minute)
		ls := e.claim(store.ClaimParams{WorkerID: "worker-7", Tenant: acme, Max: 5, LeaseDuration: 45 * time.Second, Now: now})
		if len(ls) != 1 {
			t.Fatalf("got %d leases, want 1", len(ls))
		}
		l := ls[0]
		if l.ExecutionID != x.ID || l.Tenant != acme || l.Kind != "http" || l.Queue != "mail" ||
			l.Attempt != 1 || l.MaxAttempts != 4 || l.TimeoutSeconds != 90 {
			t.Errorf("lease %+v does not describe attempt 1 of %s", l, x.ID)
		}
		if l.Token == "" {
			t.Error("lease has an empty token")
		}
		wantJSON(t, "lease Payload", l.Payload, sub.Payload)
		wantTime(t, "lease ExpiresAt", l.ExpiresAt, now.Add(45*time.Second))

		got := e.wantStatus(x.ID, store.StatusRunning)
		if got.Attempt != 1 || got.WorkerID != "worker-7" || got.CancelRequested || got.FinishedAt != nil {
			t.Errorf("running execution: attempt %d worker %q cancel_requested %v finished_at %v",
				got.Attempt, got.WorkerID, got.CancelRequested, got.FinishedAt)
		}
		wantTimePtr(t, "StartedAt", got.StartedAt, now)
		wantTimePtr(t, "LeaseExpiresAt", got.LeaseExpiresAt, now.Add(45*time.Second))
		wantTime(t, "CreatedAt", got.CreatedAt, base)
		e.wantInflight(acme, 1)
	})

	// ReadyAt is the execution's RunAt at the claim: when it became
	// claimable, whichever way it did.
	t.Run("LeaseReadyAt", func(t *testing.T) {
		e := start(t, ns)
		hour := store.ClaimParams{Tenant: acme, LeaseDuration: time.Hour}
		claimAt := func(now time.Time) store.Lease {
			t.Helper()
			p := hour
			p.Now = now
			ls := e.claim(p)
			if len(ls) != 1 {
				t.Fatalf("Claim at %s: got %d leases, want 1", now.Sub(base), len(ls))
			}
			return ls[0]
		}

		queued := e.submit(acme, base, job("echo"))
		first := claimAt(at(time.Minute))
		if first.ExecutionID != queued.ID {
			t.Fatalf("claimed %s, want the queued %s", first.ExecutionID, queued.ID)
		}
		wantTime(t, "ReadyAt of a queued execution (its submit)", first.ReadyAt, base)

		sub := job("echo")
		sub.RunAt = at(2 * time.Minute)
		scheduled := e.submit(acme, at(time.Minute), sub)
		e.claimNone(acme, at(90*time.Second))
		due := claimAt(at(3 * time.Minute))
		if due.ExecutionID != scheduled.ID {
			t.Fatalf("claimed %s, want the scheduled %s", due.ExecutionID, scheduled.ID)
		}
		wantTime(t, "ReadyAt of a due scheduled execution (its RunAt)", due.ReadyAt, at(2*time.Minute))

		_, err := e.fail(first, at(4*time.Minute), "boom", true, 30*time.Second)
		e.must(err, "Fail with a retry")
		retried := claimAt(at(5 * time.Minute))
		if retried.ExecutionID != queued.ID || retried.Attempt != 2 {
			t.Fatalf("claimed %s attempt %d, want %s attempt 2", retried.ExecutionID, retried.Attempt, queued.ID)
		}
		wantTime(t, "ReadyAt of a retried execution (its backoff end)", retried.ReadyAt, at(4*time.Minute+30*time.Second))

		_, err = e.release(retried, at(6*time.Minute))
		e.must(err, "Release")
		released := claimAt(at(7 * time.Minute))
		if released.ExecutionID != queued.ID {
			t.Fatalf("claimed %s, want the released %s", released.ExecutionID, queued.ID)
		}
		wantTime(t, "ReadyAt of a released execution (its release)", released.ReadyAt, at(6*time.Minute))
		_, err = e.complete(released, at(8*time.Minute), nil)
		e.must(err, "Complete")
		_, err = e.complete(due, at(8*time.Minute), nil)
		e.must(err, "Complete")

		sub = job("echo")
		sub.MaxAttempts = 5
		lost := e.submit(acme, at(8*time.Minute), sub)
		if l := claimAt(at(9 * time.Minute)); l.ExecutionID != lost.ID {
			t.Fatalf("claimed %s, want %s", l.ExecutionID, lost.ID)
		}
		if r := e.rescue(at(9*time.Minute+time.Hour+time.Second), 0); r.Requeued != 1 {
			t.Fatalf("Rescue after the lease expired: %+v, want 1 requeued", r)
		}
		rescued := claimAt(at(2 * time.Hour))
		if rescued.ExecutionID != lost.ID {
			t.Fatalf("claimed %s, want the rescued %s", rescued.ExecutionID, lost.ID)
		}
		wantTime(t, "ReadyAt of a rescued execution (its rescue)", rescued.ReadyAt, at(9*time.Minute+time.Hour+time.Second))
	})

	t.Run("NothingReady", func(t *testing.T) {
		e := start(t, ns)
		e.claimNone(acme, base)
		e.claimNone("", base)
	})

	t.Run("RespectsMax", func(t *testing.T) {
		e := start(t, ns)
		for range 5 {
			e.submit(acme, base, job("echo"))
		}
		seen := map[string]bool{}
		for _, want := range []int{3, 2, 0} {
			ls := e.claim(store.ClaimParams{Tenant: acme, Max: 3, Now: at(time.Second)})
			if len(ls) != want {
				t.Errorf("Claim Max 3: got %d leases, want %d", len(ls), want)
			}
			for _, l := range ls {
				if seen[l.ExecutionID] {
					t.Errorf("%s handed out twice", l.ExecutionID)
				}
				seen[l.ExecutionID] = true
			}
		}
		e.wantInflight(acme, 5)
	})

	t.Run("HighestPriorityFirstThenOldestRunAt", func(t *testing.T) {
		e := start(t, ns)
		prio := func(kind string, p int) store.Submission { s := job(kind); s.Priority = p; return s }
		low := e.submit(acme, at(0), prio("low", 0))
		highA := e.submit(acme, at(1*time.Second), prio("high-a", 5))
		highB := e.submit(acme, at(2*time.Second), prio("high-b", 5))
		mid := e.submit(acme, at(3*time.Second), prio("mid", 2))
		for _, want := range []*store.Execution{highA, highB, mid, low} {
			l := e.claimOne(acme, at(time.Minute))
			if l.ExecutionID != want.ID {
				t.Errorf("claimed %s (%s), want %s (%s)", l.Kind, l.ExecutionID, want.Kind, want.ID)
			}
		}
	})

	t.Run("OrdersByRunAtNotCreation", func(t *testing.T) {
		e := start(t, ns)
		late := job("late")
		late.RunAt = at(10 * time.Second) // created first, due later
		lateX := e.submit(acme, base, late)
		earlyX := e.submit(acme, at(5*time.Second), job("early")) // RunAt = its creation
		for _, want := range []*store.Execution{earlyX, lateX} {
			l := e.claimOne(acme, at(time.Minute))
			if l.ExecutionID != want.ID {
				t.Errorf("claimed %s, want %s", l.Kind, want.Kind)
			}
		}
	})

	t.Run("TakesDueScheduled", func(t *testing.T) {
		e := start(t, ns)
		sub := job("echo")
		sub.RunAt = at(10 * time.Second)
		x := e.submit(acme, base, sub)
		e.claimNone(acme, at(9*time.Second))
		l := e.claimOne(acme, at(10*time.Second))
		if l.ExecutionID != x.ID || l.Attempt != 1 {
			t.Errorf("claimed %s attempt %d, want %s attempt 1", l.ExecutionID, l.Attempt, x.ID)
		}
		e.wantStatus(x.ID, store.StatusRunning)
		e.wantInflight(acme, 1)
	})

	t.Run("FiltersByTenantQueueAndKind", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		sub := func(queue, kind string) store.Submission { s := job(kind); s.Queue = queue; return s }
		acmeAX := e.submit(acme, base, sub("a", "x"))
		acmeBY := e.submit(acme, base, sub("b", "y"))
		acmeCZ := e.submit(acme, base, sub("c", "z"))
		globexAX := e.submit(globex, base, sub("a", "x"))
		now := at(time.Second)

		only := func(p store.ClaimParams, want *store.Execution) {
			t.Helper()
			p.Max, p.Now = 10, now
			ls := e.claim(p)
			if len(ls) != 1 || ls[0].ExecutionID != want.ID {
				var got []string
				for _, l := range ls {
					got = append(got, l.Tenant+"/"+l.Queue+"/"+l.Kind)
				}
				t.Errorf("Claim %+v handed out %v, want only %s/%s/%s", p, got, want.Tenant, want.Queue, want.Kind)
			}
		}
		only(store.ClaimParams{Tenant: acme, Queues: []string{"b"}}, acmeBY)
		only(store.ClaimParams{Tenant: acme, Kinds: []string{"x", "nope"}}, acmeAX)
		only(store.ClaimParams{Queues: []string{"a"}}, globexAX) // every tenant
		only(store.ClaimParams{Queues: []string{"c", "q"}, Kinds: []string{"z"}}, acmeCZ)
		e.claimNone("", now)
		e.wantInflight(acme, 3)
		e.wantInflight(globex, 1)
	})

	t.Run("RunningIsNotClaimedAgain", func(t *testing.T) {
		e := start(t, ns)
		e.run(acme, base, job("echo"))
		e.claimNone(acme, at(leaseFor-time.Second))
		e.claimNone("", at(leaseFor-time.Second))
	})

	t.Run("TerminalAndCancelledAreNotClaimed", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("done"))
		_, err := e.complete(l, at(time.Second), nil)
		e.must(err, "Complete")
		x := e.submit(acme, at(2*time.Second), job("cancelled"))
		_, err = e.cancel(acme, x.ID, at(3*time.Second))
		e.must(err, "Cancel")
		e.claimNone(acme, at(time.Hour))
		e.wantInflight(acme, 0)
	})

	t.Run("EveryAttemptGetsAFreshToken", func(t *testing.T) {
		e := start(t, ns)
		first := e.run(acme, base, job("echo"))
		_, err := e.fail(first, at(time.Second), "boom", true, 0)
		e.must(err, "Fail")
		second := e.claimOne(acme, at(time.Second))
		if second.ExecutionID != first.ExecutionID || second.Attempt != 2 {
			t.Fatalf("claimed %s attempt %d, want %s attempt 2", second.ExecutionID, second.Attempt, first.ExecutionID)
		}
		if second.Token == first.Token {
			t.Error("attempt 2 reuses attempt 1's lease token")
		}
		e.wantInflight(acme, 1)
	})

	t.Run("TokensAreDistinctAcrossExecutions", func(t *testing.T) {
		e := start(t, ns)
		for range 10 {
			e.submit(acme, base, job("echo"))
		}
		tokens := map[string]bool{}
		for _, l := range e.claim(store.ClaimParams{Tenant: acme, Max: 10, Now: base}) {
			if tokens[l.Token] {
				t.Errorf("token %q handed out twice", l.Token)
			}
			tokens[l.Token] = true
		}
		if len(tokens) != 10 {
			t.Errorf("%d distinct tokens, want 10", len(tokens))
		}
	})
}
