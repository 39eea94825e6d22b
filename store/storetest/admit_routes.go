package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testAdmitRoutes covers the situations a backend may decide on different
// paths inside Admit: a dedup key whose execution expired or was deleted,
// a tenant whose quota is used up and then freed, batches with and without
// keys, and one-item submits that arrive together. Whatever path a backend
// takes, the answers are those of the store.Store contract (I1, I3).
func testAdmitRoutes(t *testing.T, ns NewStore) {
	t.Run("ExpiredKey", func(t *testing.T) { testAdmitExpiredKey(t, ns) })
	t.Run("Quota", func(t *testing.T) { testAdmitQuotaRoutes(t, ns) })
	t.Run("Batch", func(t *testing.T) { testAdmitBatchRoutes(t, ns) })
	t.Run("Concurrent", func(t *testing.T) { testAdmitConcurrentSingles(t, ns) })
}

func testAdmitExpiredKey(t *testing.T, ns NewStore) {
	t.Run("OneItemBindsTheKeyAgain", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme, DedupTTL: time.Hour})
		old := e.submit(acme, base, keyed("echo", "k", `{"v":1}`))
		// Past the TTL another payload is no reuse: a new execution, and
		// the key maps to it from then on.
		fresh := e.submit(acme, at(time.Hour+time.Second), keyed("http", "k", `{"v":2}`))
		if fresh.ID == old.ID {
			t.Fatalf("an expired key admitted %s again", old.ID)
		}
		e.dedup(acme, at(time.Hour+2*time.Second), keyed("http", "k", `{"v":2}`), fresh.ID)
		it := e.admitOne(acme, at(time.Hour+3*time.Second), keyed("echo", "k", `{"v":1}`))
		wantErr(t, "the old request after the key was bound again", it.Err, store.ErrDedupKeyReused)
		e.wantStatus(old.ID, store.StatusQueued)
		e.wantInflight(acme, 2)
	})

	t.Run("BatchBindsExpiredAndFreshKeys", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme, DedupTTL: time.Hour})
		oldA := e.submit(acme, base, keyed("echo", "a", `{}`))
		oldB := e.submit(acme, at(59*time.Minute), keyed("echo", "b", `{}`))
		now := at(time.Hour + time.Second) // a expired, b live
		items := e.admit(acme, now, keyed("echo", "a", `{}`), keyed("echo", "b", `{}`),
			keyed("echo", "c", `{}`), job("echo"), keyed("echo", "a", `{}`))
		for i, it := range items {
			if it.Err != nil {
				t.Fatalf("item %d: %v", i, it.Err)
			}
		}
		if items[0].Deduplicated || items[0].Execution.ID == oldA.ID {
			t.Errorf("item 0 (expired key) got %s deduplicated=%v, want a new execution", items[0].Execution.ID, items[0].Deduplicated)
		}
		if !items[1].Deduplicated || items[1].Execution.ID != oldB.ID {
			t.Errorf("item 1 (live key) got %s deduplicated=%v, want %s deduplicated", items[1].Execution.ID, items[1].Deduplicated, oldB.ID)
		}
		if items[2].Deduplicated || items[3].Deduplicated {
			t.Errorf("items 2 and 3 (fresh key, no key) deduplicated: %v, %v", items[2].Deduplicated, items[3].Deduplicated)
		}
		if !items[4].Deduplicated || items[4].Execution.ID != items[0].Execution.ID {
			t.Errorf("item 4 (item 0's key) got %s deduplicated=%v, want item 0's %s", items[4].Execution.ID, items[4].Deduplicated, items[0].Execution.ID)
		}
		e.dedup(acme, at(time.Hour+2*time.Second), keyed("echo", "a", `{}`), items[0].Execution.ID)
		e.wantInflight(acme, 5)
	})

	t.Run("DeletedExecutionFreesItsKey", func(t *testing.T) {
		e := start(t, ns)
		sub := keyed("echo", "k", `{"v":1}`)
		l := e.run(acme, base, sub)
		_, err := e.complete(l, at(time.Second), nil)
		e.must(err, "Complete")
		e.must(e.del(acme, l.ExecutionID, false, at(2*time.Second)), "Delete")
		// The key went with its execution: another request binds it.
		fresh := e.submit(acme, at(3*time.Second), keyed("http", "k", `{"v":2}`))
		queued := e.submit(acme, at(4*time.Second), keyed("echo", "q", `{}`))
		e.must(e.del(acme, queued.ID, true, at(5*time.Second)), "Delete with Force")
		items := e.admit(acme, at(6*time.Second), keyed("echo", "q", `{"v":3}`), keyed("http", "k", `{"v":2}`))
		if items[0].Err != nil || items[0].Deduplicated || items[0].Execution.ID == queued.ID {
			t.Errorf("key of a force-deleted execution: %+v, want a new execution", items[0])
		}
		if items[1].Err != nil || !items[1].Deduplicated || items[1].Execution.ID != fresh.ID {
			t.Errorf("key bound after its execution was deleted: %+v, want %s deduplicated", items[1], fresh.ID)
		}
		e.wantInflight(acme, 2)
	})
}

func testAdmitQuotaRoutes(t *testing.T, ns NewStore) {
	// One-item submits take the quota to its limit; the next is refused
	// until an execution ends, and then admitted.
	t.Run("OneItemUsedUpThenFreed", func(t *testing.T) {
		e := startEmpty(t, ns)
		const limit = 40 // more units than some backends have quota shards
		e.createTenant(store.CreateTenantParams{Name: acme, MaxInflight: limit})
		for i := range limit {
			e.submit(acme, base, keyed("echo", fmt.Sprint("k", i), `{}`))
		}
		it := e.admitOne(acme, base, keyed("echo", "over", `{}`))
		wantErr(t, "a submit beyond max_inflight", it.Err, store.ErrQuotaExceeded)
		it = e.admitOne(acme, base, job("echo"))
		wantErr(t, "a submit beyond max_inflight without a key", it.Err, store.ErrQuotaExceeded)
		// A duplicate needs no unit.
		e.dedup(acme, base, keyed("echo", "k7", `{}`), e.list(store.ListParams{Tenant: acme, DedupKey: "k7"})[0].ID)
		e.wantInflight(acme, limit)

		for range 2 {
			l := e.claimOne(acme, at(time.Second))
			_, err := e.complete(l, at(2*time.Second), nil)
			e.must(err, "Complete")
		}
		e.wantInflight(acme, limit-2)
		e.submit(acme, at(3*time.Second), keyed("echo", "over", `{}`)) // the refused key was left unbound
		e.submit(acme, at(3*time.Second), job("echo"))
		it = e.admitOne(acme, at(3*time.Second), job("echo"))
		wantErr(t, "a submit at max_inflight again", it.Err, store.ErrQuotaExceeded)
		e.wantInflight(acme, limit)
	})

	// Batches larger than any one share of the quota are admitted whole
	// while the tenant has room, and item by item once it has not.
	t.Run("BatchUsedUpThenFreed", func(t *testing.T) {
		e := startEmpty(t, ns)
		const limit = 64
		e.createTenant(store.CreateTenantParams{Name: acme, MaxInflight: limit})
		batch := func(now time.Time, n int, key string) []store.Admitted {
			subs := make([]store.Submission, n)
			for i := range subs {
				subs[i] = job("echo")
				if key != "" {
					subs[i] = keyed("echo", fmt.Sprint(key, i), `{}`)
				}
			}
			return e.admit(acme, now, subs...)
		}
		admitted := func(items []store.Admitted) int {
			n, refused := 0, false
			for i, it := range items {
				switch {
				case it.Err == nil && refused:
					t.Errorf("item %d admitted after an earlier item was refused for quota: items are decided in order", i)
				case it.Err == nil:
					n++
				case !isAny(it.Err, store.ErrQuotaExceeded):
					t.Errorf("item %d: %v, want admitted or ErrQuotaExceeded", i, it.Err)
				default:
					refused = true
				}
			}
			return n
		}
		if n := admitted(batch(base, 10, "")); n != 10 {
			t.Errorf("a batch of 10 without keys admitted %d, want 10", n)
		}
		if n := admitted(batch(base, 10, "a")); n != 10 {
			t.Errorf("a batch of 10 with keys admitted %d, want 10", n)
		}
		if n := admitted(batch(base, 50, "b")); n != limit-20 {
			t.Errorf("a batch of 50 with 44 units left admitted %d, want 44", n)
		}
		e.wantInflight(acme, limit)
		if n := admitted(batch(base, 3, "")); n != 0 {
			t.Errorf("a batch at max_inflight admitted %d, want 0", n)
		}
		for range 3 {
			l := e.claimOne(acme, at(time.Second))
			_, err := e.complete(l, at(2*time.Second), nil)
			e.must(err, "Complete")
		}
		if n := admitted(batch(at(3*time.Second), 5, "")); n != 3 {
			t.Errorf("a batch of 5 with 3 units freed admitted %d, want 3", n)
		}
		// The keys of refused items were left unbound.
		l := e.claimOne(acme, at(4*time.Second))
		_, err := e.complete(l, at(5*time.Second), nil)
		e.must(err, "Complete")
		items := e.admit(acme, at(6*time.Second), keyed("other", "b49", `{"v":2}`))
		if items[0].Err != nil || items[0].Deduplicated {
			t.Errorf("the key of an item refused for quota: %+v, want a new execution", items[0])
		}
		e.wantInflight(acme, limit)
	})
}

func testAdmitBatchRoutes(t *testing.T, ns NewStore) {
	t.Run("WithoutKeys", func(t *testing.T) {
		e := start(t, ns)
		subs := make([]store.Submission, 50)
		for i := range subs {
			subs[i] = job(fmt.Sprint("kind-", i))
		}
		items := e.admit(acme, base, subs...)
		ids := map[string]bool{}
		for i, it := range items {
			if it.Err != nil || it.Deduplicated || it.Execution.Kind != subs[i].Kind {
				t.Fatalf("item %d: %+v, want a new execution of %s", i, it, subs[i].Kind)
			}
			ids[it.Execution.ID] = true
		}
		if len(ids) != len(subs) {
			t.Errorf("%d distinct ids for %d items", len(ids), len(subs))
		}
		sameExecution(t, "item 7 after Admit", e.get(items[7].Execution.ID), items[7].Execution)
		e.wantInflight(acme, len(subs))
	})

	t.Run("WithKeys", func(t *testing.T) {
		e := start(t, ns)
		first := e.admit(acme, base, keyed("echo", "k1", `{"v":1}`), keyed("echo", "k2", `{"v":2}`),
			keyed("echo", "k3", `{"v":3}`))
		for i, it := range first {
			if it.Err != nil || it.Deduplicated {
				t.Fatalf("item %d of fresh keys: %+v, want a new execution", i, it)
			}
			sameExecution(t, fmt.Sprint("item ", i, " after Admit"), e.get(it.Execution.ID), it.Execution)
		}
		items := e.admit(acme, at(time.Second),
			keyed("echo", "k1", `{"v":1}`), // duplicate of the first batch
			keyed("echo", "k4", `{"v":4}`), // new
			keyed("echo", "k2", `{"v":9}`), // reuse
			keyed("echo", "k4", `{"v":4}`), // duplicate of item 1
			job("echo"),                    // new, no key
		)
		if !items[0].Deduplicated || items[0].Execution.ID != first[0].Execution.ID {
			t.Errorf("item 0: %+v, want %s deduplicated", items[0], first[0].Execution.ID)
		}
		if items[1].Err != nil || items[1].Deduplicated {
			t.Errorf("item 1: %+v, want a new execution", items[1])
		}
		wantErr(t, "item 2 (key reused)", items[2].Err, store.ErrDedupKeyReused)
		if items[1].Execution != nil && (!items[3].Deduplicated || items[3].Execution.ID != items[1].Execution.ID) {
			t.Errorf("item 3: %+v, want item 1's execution deduplicated", items[3])
		}
		if items[4].Err != nil || items[4].Deduplicated {
			t.Errorf("item 4: %+v, want a new execution", items[4])
		}
		e.wantInflight(acme, 5)
	})

	t.Run("UnknownTenantAdmitsNothing", func(t *testing.T) {
		e := start(t, ns)
		for _, subs := range [][]store.Submission{
			{job("a"), job("b")},
			{keyed("a", "k1", `{}`), keyed("b", "k2", `{}`)},
		} {
			_, err := e.s.Admit(e.ctx, &store.AdmitParams{Tenant: "nobody", Items: subs, Now: base})
			wantErr(t, "a batch for an unknown tenant", err, store.ErrNotFound)
		}
		if xs := e.list(store.ListParams{}); len(xs) != 0 {
			t.Errorf("%d executions exist after refused batches, want 0", len(xs))
		}
	})
}

// testAdmitConcurrentSingles sends one-item submits together, so that a
// backend that decides concurrent submits together sees them at once.
func testAdmitConcurrentSingles(t *testing.T, ns NewStore) {
	t.Run("KeysShared", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme, DedupTTL: time.Hour})
		// Keys 0..3 were bound at base and expire; keys 4..7 are new.
		old := map[string]string{}
		for k := range 4 {
			key := fmt.Sprint("k", k)
			old[key] = e.submit(acme, base, keyed("echo", key, `{}`)).ID
		}
		const n, keys = 48, 8
		answers := make([]answer, n)
		now := at(time.Hour + time.Second)
		together(n, func(i int) {
			sub := job("echo")
			if i%2 == 0 {
				sub = keyed("echo", fmt.Sprint("k", i/2%keys), `{}`)
			}
			res, err := e.s.Admit(e.ctx, &store.AdmitParams{Tenant: acme, Items: []store.Submission{sub}, Now: now})
			answers[i] = answerOf(res, err)
		})
		ids, fresh := map[string]string{}, map[string]int{}
		unkeyed := 0
		for i, a := range answers {
			if a.err != nil {
				t.Errorf("submitter %d: %v", i, a.err)
				continue
			}
			if i%2 == 1 {
				if a.dedup {
					t.Errorf("submitter %d without a key was deduplicated onto %s", i, a.id)
				}
				unkeyed++
				continue
			}
			key := fmt.Sprint("k", i/2%keys)
			if ids[key] == "" {
				ids[key] = a.id
			}
			if a.id != ids[key] {
				t.Errorf("I1: key %s gave %s and %s", key, ids[key], a.id)
			}
			if a.id == old[key] {
				t.Errorf("I1: expired key %s admitted its old execution %s again", key, a.id)
			}
			if !a.dedup {
				fresh[key]++
			}
		}
		for k := range keys {
			if key := fmt.Sprint("k", k); fresh[key] != 1 {
				t.Errorf("I1: key %s: %d submitters told they created its execution, want 1", key, fresh[key])
			}
		}
		e.wantInflight(acme, len(old)+keys+unkeyed)
	})

	t.Run("AtQuotaLimit", func(t *testing.T) {
		e := startEmpty(t, ns)
		const limit, n = 10, 40
		e.createTenant(store.CreateTenantParams{Name: acme, MaxInflight: limit})
		answers := make([]answer, n)
		together(n, func(i int) {
			sub := keyed("echo", fmt.Sprint("k", i), `{}`)
			if i%3 == 0 {
				sub = job("echo")
			}
			res, err := e.s.Admit(e.ctx, &store.AdmitParams{Tenant: acme, Items: []store.Submission{sub}, Now: base})
			answers[i] = answerOf(res, err)
		})
		admitted := 0
		for i, a := range answers {
			switch {
			case a.err == nil:
				admitted++
			case !isAny(a.err, store.ErrQuotaExceeded):
				t.Errorf("submitter %d: %v, want admitted or ErrQuotaExceeded", i, a.err)
			}
		}
		if admitted != limit {
			t.Errorf("I3: %d of %d submitters admitted at max_inflight %d, want %d", admitted, n, limit, limit)
		}
		e.wantInflight(acme, limit)
	})
}
