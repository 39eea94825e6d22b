package storetest

import (
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testDedup covers the dedup contract of docs/api.md (invariant I1) one call at a
// time; Concurrency/AdmitSameKey* covers it under races.
func testDedup(t *testing.T, ns NewStore) {
	t.Run("SameKeyReturnsSameID", func(t *testing.T) {
		e := start(t, ns)
		sub := keyed("echo", "order-1", `{"order":1}`)
		first := e.submit(acme, base, sub)
		again := e.dedup(acme, at(time.Minute), sub, first.ID)
		hit := *first
		hit.DedupHits, hit.LastDedupHitAt = 1, ptr(at(time.Minute))
		sameExecution(t, "deduplicated answer", again, &hit)
		if n := len(e.list(store.ListParams{Tenant: acme, DedupKey: "order-1"})); n != 1 {
			t.Errorf("%d executions with the key, want 1", n)
		}
		e.claimOne(acme, at(2*time.Minute))
		e.claimNone(acme, at(2*time.Minute))
		e.wantInflight(acme, 1)
	})

	t.Run("PayloadComparedCanonically", func(t *testing.T) {
		e := start(t, ns)
		first := e.submit(acme, base, keyed("echo", "k", `{"a":1,"b":[1,2],"c":{"x":"y"}}`))
		e.dedup(acme, at(time.Second), keyed("echo", "k", ` { "c": {"x": "y"}, "b": [1, 2], "a": 1 } `), first.ID)
		e.wantInflight(acme, 1)
	})

	t.Run("DifferentPayloadIsReused", func(t *testing.T) {
		e := start(t, ns)
		first := e.submit(acme, base, keyed("echo", "k", `{"a":1}`))
		it := e.admitOne(acme, at(time.Second), keyed("echo", "k", `{"a":2}`))
		wantErr(t, "same key, other payload", it.Err, store.ErrDedupKeyReused)
		sameExecution(t, "existing execution", e.get(first.ID), first)
		e.wantInflight(acme, 1)
	})

	t.Run("DifferentKindIsReused", func(t *testing.T) {
		e := start(t, ns)
		first := e.submit(acme, base, keyed("echo", "k", `{"a":1}`))
		it := e.admitOne(acme, at(time.Second), keyed("http", "k", `{"a":1}`))
		wantErr(t, "same key, other kind", it.Err, store.ErrDedupKeyReused)
		sameExecution(t, "existing execution", e.get(first.ID), first)
		e.wantInflight(acme, 1)
	})

	t.Run("OnlyKindAndPayloadAreCompared", func(t *testing.T) {
		// store.ErrDedupKeyReused names kind and payload only: a resubmit
		// that differs in queue, priority or attempts is the same request.
		e := start(t, ns)
		first := e.submit(acme, base, keyed("echo", "k", `{"a":1}`))
		other := keyed("echo", "k", `{"a":1}`)
		other.Queue, other.Priority, other.MaxAttempts = "elsewhere", 9, 7
		again := e.dedup(acme, at(time.Second), other, first.ID)
		if again.Queue != store.DefaultQueue || again.Priority != 0 || again.MaxAttempts != store.DefaultMaxAttempts {
			t.Errorf("deduplicated answer shows queue %q priority %d max_attempts %d, want the original execution's",
				again.Queue, again.Priority, again.MaxAttempts)
		}
		e.wantInflight(acme, 1)
	})

	t.Run("DuplicateTakesNoQuota", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme, MaxInflight: 1})
		sub := keyed("echo", "k", `{}`)
		first := e.submit(acme, base, sub)
		e.dedup(acme, at(time.Second), sub, first.ID)
		e.dedup(acme, at(2*time.Second), sub, first.ID)
		e.wantInflight(acme, 1)
	})

	t.Run("ReturnsExecutionAsItIsNow", func(t *testing.T) {
		e := start(t, ns)
		sub := keyed("echo", "k", `{"v":1}`)
		first := e.submit(acme, base, sub)
		l := e.claimOne(acme, at(time.Second))
		x := e.dedup(acme, at(2*time.Second), sub, first.ID)
		if x.Status != store.StatusRunning || x.Attempt != 1 {
			t.Errorf("deduplicated answer while running: status %s attempt %d, want running 1", x.Status, x.Attempt)
		}
		_, err := e.complete(l, at(3*time.Second), mustJSON(`{"done":true}`))
		e.must(err, "Complete")
		x = e.dedup(acme, at(4*time.Second), sub, first.ID)
		wantFinished(t, "deduplicated answer after Complete", x, store.StatusSucceeded, at(3*time.Second))
		wantJSON(t, "Result", x.Result, mustJSON(`{"done":true}`))
		e.wantInflight(acme, 0)
	})

	t.Run("KeyMapsToTerminalExecutions", func(t *testing.T) {
		e := start(t, ns)
		cancelled := e.submit(acme, base, keyed("echo", "c", `{}`))
		_, err := e.cancel(acme, cancelled.ID, at(time.Second))
		e.must(err, "Cancel")
		failedSub := keyed("echo", "f", `{}`)
		failedSub.MaxAttempts = 1
		l := e.run(acme, at(2*time.Second), failedSub)
		_, err = e.fail(l, at(3*time.Second), "boom", true, 0)
		e.must(err, "Fail")

		x := e.dedup(acme, at(time.Hour), keyed("echo", "c", `{}`), cancelled.ID)
		if x.Status != store.StatusCancelled {
			t.Errorf("status %s, want cancelled", x.Status)
		}
		x = e.dedup(acme, at(time.Hour), failedSub, l.ExecutionID)
		if x.Status != store.StatusFailed {
			t.Errorf("status %s, want failed", x.Status)
		}
		e.claimNone(acme, at(time.Hour))
		e.wantInflight(acme, 0)
	})

	t.Run("KeyExpiresAfterTTL", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme, DedupTTL: time.Hour})
		sub := keyed("echo", "k", `{}`)
		old := e.submit(acme, base, sub)
		e.dedup(acme, at(time.Hour-time.Second), sub, old.ID)

		// The TTL has passed: the key admits a new execution although the
		// old one is still queued, and from then on maps to the new one.
		fresh := e.submit(acme, at(time.Hour+time.Second), sub)
		if fresh.ID == old.ID {
			t.Fatalf("the key admitted %s again after its TTL", old.ID)
		}
		e.dedup(acme, at(time.Hour+2*time.Second), sub, fresh.ID)
		e.wantStatus(old.ID, store.StatusQueued)
		if n := len(e.list(store.ListParams{Tenant: acme, DedupKey: "k"})); n != 2 {
			t.Errorf("%d executions with the key, want 2", n)
		}
		e.wantInflight(acme, 2)
	})

	t.Run("ExpiredKeyAcceptsAnotherPayload", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme, DedupTTL: time.Minute})
		e.submit(acme, base, keyed("echo", "k", `{"v":1}`))
		e.submit(acme, at(2*time.Minute), keyed("http", "k", `{"v":2}`))
		e.wantInflight(acme, 2)
	})

	t.Run("TenantsDoNotShareKeys", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		a := e.submit(acme, base, keyed("echo", "k", `{}`))
		g := e.submit(globex, base, keyed("echo", "k", `{}`))
		if a.ID == g.ID {
			t.Fatalf("two tenants share execution %s", a.ID)
		}
		if g.Tenant != globex {
			t.Errorf("globex's execution has tenant %q", g.Tenant)
		}
		// Another payload under the same key in a third tenant is no reuse either.
		e.createTenant(store.CreateTenantParams{Name: "initech"})
		e.submit("initech", base, keyed("http", "k", `{"other":1}`))
		e.dedup(acme, at(time.Second), keyed("echo", "k", `{}`), a.ID)
		e.dedup(globex, at(time.Second), keyed("echo", "k", `{}`), g.ID)
		e.wantInflight(acme, 1)
		e.wantInflight(globex, 1)
	})

	t.Run("EmptyKeyNeverDeduplicates", func(t *testing.T) {
		e := start(t, ns)
		a := e.submit(acme, base, job("echo"))
		b := e.submit(acme, base, job("echo"))
		if a.ID == b.ID {
			t.Errorf("two submits without a key got one execution %s", a.ID)
		}
		e.wantInflight(acme, 2)
	})

	// Compare-and-delete: deleting an execution frees its key only while the
	// key still maps to that execution.
	t.Run("DeletingOldExecutionKeepsReboundKey", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme, DedupTTL: time.Hour})
		sub := keyed("echo", "k", `{}`)
		old := e.run(acme, base, sub)
		_, err := e.complete(old, at(10*time.Second), nil)
		e.must(err, "Complete")
		fresh := e.submit(acme, at(2*time.Hour), sub) // TTL passed: the key now maps to fresh
		e.must(e.del(acme, old.ExecutionID, false, at(2*time.Hour+time.Second)), "Delete old")
		e.dedup(acme, at(2*time.Hour+2*time.Second), sub, fresh.ID)
		e.wantInflight(acme, 1)
	})

	t.Run("ForceDeletingOldExecutionKeepsReboundKey", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme, DedupTTL: time.Hour})
		sub := keyed("echo", "k", `{}`)
		old := e.submit(acme, base, sub) // still queued when the key is re-bound
		fresh := e.submit(acme, at(2*time.Hour), sub)
		e.wantInflight(acme, 2)
		e.must(e.del(acme, old.ID, true, at(2*time.Hour+time.Second)), "Delete old with Force")
		e.dedup(acme, at(2*time.Hour+2*time.Second), sub, fresh.ID)
		e.wantInflight(acme, 1)
	})

	t.Run("PruningOldExecutionKeepsReboundKey", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme, DedupTTL: time.Hour, Retention: time.Hour})
		sub := keyed("echo", "k", `{}`)
		old := e.run(acme, base, sub)
		_, err := e.complete(old, at(10*time.Second), nil)
		e.must(err, "Complete")
		fresh := e.submit(acme, at(time.Hour+time.Minute), sub)
		res := e.prune(at(time.Hour+2*time.Minute), 0)
		if res.Executions != 1 {
			t.Errorf("Prune removed %d executions, want 1 (the old one)", res.Executions)
		}
		e.gone(old.ExecutionID)
		e.dedup(acme, at(time.Hour+3*time.Minute), sub, fresh.ID)
		e.wantInflight(acme, 1)
	})
}
