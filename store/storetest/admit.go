package storetest

import (
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testAdmit covers Store.Admit apart from dedup: defaults, stored fields,
// scheduling, quota (I3) and the per-item rules of a batch.
func testAdmit(t *testing.T, ns NewStore) {
	t.Run("QueuedWithDefaults", func(t *testing.T) {
		e := start(t, ns)
		now := at(time.Minute)
		x := e.submit(acme, now, store.Submission{Kind: "echo"}) // nil payload means {}

		if !uuidV7.MatchString(x.ID) {
			t.Errorf("generated ID %q is not a UUIDv7", x.ID)
		}
		want := &store.Execution{
			ID: x.ID, Tenant: acme, Kind: "echo", Queue: store.DefaultQueue, Status: store.StatusQueued,
			Payload: mustJSON(`{}`), MaxAttempts: store.DefaultMaxAttempts,
			TimeoutSeconds: store.DefaultTimeoutSeconds, CreatedAt: now, RunAt: now,
			ConcurrencyLimit: x.ConcurrencyLimit, // meaningless without a concurrency key
			StoredBytes:      2,                  // the payload {}
		}
		sameExecution(t, "Admit answer", x, want)
		sameExecution(t, "Get after Admit", e.get(x.ID), want)
		e.wantInflight(acme, 1)
	})

	t.Run("KeepsSubmittedFields", func(t *testing.T) {
		e := start(t, ns)
		now := at(time.Minute)
		sub := store.Submission{
			ID: "01890a5d-ac96-774b-bcce-b302099a8057", Kind: "http", Queue: "mail", Priority: 7,
			Payload:  mustJSON(`{"url":"https://example.com/hook","n":1,"tags":["a","b"]}`),
			DedupKey: "order-1", MaxAttempts: 5, TimeoutSeconds: 60,
			ConcurrencyKey: "customer-9", ConcurrencyLimit: 2, RateKey: "partner-api", Schedule: "nightly",
			TraceParent: tp,
		}
		x := e.submit(acme, now, sub)
		want := &store.Execution{
			ID: sub.ID, Tenant: acme, Kind: "http", Queue: "mail", Priority: 7, Status: store.StatusQueued,
			DedupKey: "order-1", ConcurrencyKey: "customer-9", ConcurrencyLimit: 2, RateKey: "partner-api",
			Payload: sub.Payload, MaxAttempts: 5, TimeoutSeconds: 60, Schedule: "nightly",
			TraceParent: tp, CreatedAt: now, RunAt: now, StoredBytes: store.StoredSize(sub.Payload),
		}
		sameExecution(t, "Admit answer", x, want)
		sameExecution(t, "Get after Admit", e.get(sub.ID), want)
		e.wantInflight(acme, 1)
	})

	t.Run("ConcurrencyLimitDefaultsToOne", func(t *testing.T) {
		e := start(t, ns)
		sub := job("echo")
		sub.ConcurrencyKey = "customer-1"
		x := e.submit(acme, base, sub)
		if x.ConcurrencyLimit != store.DefaultConcurrencyLimit {
			t.Errorf("ConcurrencyLimit = %d, want %d", x.ConcurrencyLimit, store.DefaultConcurrencyLimit)
		}
		if got := e.get(x.ID).ConcurrencyLimit; got != store.DefaultConcurrencyLimit {
			t.Errorf("stored ConcurrencyLimit = %d, want %d", got, store.DefaultConcurrencyLimit)
		}
	})

	t.Run("GeneratesDistinctTimeOrderedIDs", func(t *testing.T) {
		e := start(t, ns)
		var prev string
		for i := range 5 {
			x := e.submit(acme, at(time.Duration(i)*time.Second), job("echo"))
			if !uuidV7.MatchString(x.ID) {
				t.Errorf("generated ID %q is not a UUIDv7", x.ID)
			}
			if x.ID <= prev {
				t.Errorf("ID %s of a later submit does not sort after %s", x.ID, prev)
			}
			prev = x.ID
		}
		e.wantInflight(acme, 5)
	})

	t.Run("FutureRunAtIsScheduled", func(t *testing.T) {
		e := start(t, ns)
		runAt := at(time.Hour)
		sub := job("echo")
		sub.RunAt = runAt
		x := e.submit(acme, base, sub)
		if x.Status != store.StatusScheduled {
			t.Errorf("status %s, want scheduled", x.Status)
		}
		wantTime(t, "RunAt", x.RunAt, runAt)
		wantTime(t, "CreatedAt", x.CreatedAt, base)
		e.wantStatus(x.ID, store.StatusScheduled)
		e.claimNone(acme, at(time.Hour-time.Second))
		e.wantInflight(acme, 1)
	})

	t.Run("PastRunAtIsQueued", func(t *testing.T) {
		e := start(t, ns)
		sub := job("echo")
		sub.RunAt = at(-time.Hour)
		x := e.submit(acme, base, sub)
		if x.Status != store.StatusQueued {
			t.Errorf("status %s, want queued", x.Status)
		}
		l := e.claimOne(acme, base)
		if l.ExecutionID != x.ID {
			t.Errorf("claimed %s, want %s", l.ExecutionID, x.ID)
		}
		e.wantInflight(acme, 1)
	})

	t.Run("UnknownTenantAdmitsNothing", func(t *testing.T) {
		e := start(t, ns)
		_, err := e.s.Admit(e.ctx, &store.AdmitParams{Tenant: "nobody", Items: []store.Submission{job("echo")}, Now: base})
		wantErr(t, "Admit for an unknown tenant", err, store.ErrNotFound)
		if xs := e.list(store.ListParams{}); len(xs) != 0 {
			t.Errorf("%d executions exist after a refused Admit, want 0", len(xs))
		}
	})

	t.Run("MalformedIDIsInvalidAlone", func(t *testing.T) {
		e := start(t, ns)
		bad := job("echo")
		bad.ID = "not-an-execution-id"
		items := e.admit(acme, base, bad, job("echo"))
		wantErr(t, "item 0 (malformed id)", items[0].Err, store.ErrInvalid)
		if items[1].Err != nil {
			t.Errorf("item 1: %v; a refused item must not affect the others", items[1].Err)
		}
		e.wantInflight(acme, 1)
	})

	t.Run("EmptyKindIsInvalidAndBindsNoKey", func(t *testing.T) {
		e := start(t, ns)
		bad := keyed("", "k1", `{}`)
		items := e.admit(acme, base, bad, job("echo"))
		wantErr(t, "item 0 (empty kind)", items[0].Err, store.ErrInvalid)
		if items[1].Err != nil {
			t.Errorf("item 1: %v; a refused item must not affect the others", items[1].Err)
		}
		e.wantInflight(acme, 1)
		// The refused item left no dedup key behind.
		e.submit(acme, at(time.Second), keyed("echo", "k1", `{"other":true}`))
		e.wantInflight(acme, 2)
	})

	t.Run("QuotaExceededWritesNothing", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme, MaxInflight: 2})
		e.submit(acme, base, job("echo"))
		e.submit(acme, base, job("echo"))
		it := e.admitOne(acme, base, keyed("echo", "k3", `{"n":3}`))
		wantErr(t, "third admit at max_inflight 2", it.Err, store.ErrQuotaExceeded)
		if n := len(e.list(store.ListParams{Tenant: acme})); n != 2 {
			t.Errorf("%d executions, want 2", n)
		}
		e.wantInflight(acme, 2)

		// Once work finishes there is room again, and the refused submit left
		// no dedup key: the same key with another payload is a new execution.
		l := e.claimOne(acme, at(time.Second))
		_, err := e.complete(l, at(2*time.Second), nil)
		e.must(err, "Complete")
		e.wantInflight(acme, 1)
		e.submit(acme, at(3*time.Second), keyed("other", "k3", `{"n":4}`))
		e.wantInflight(acme, 2)
	})

	t.Run("QuotaCountsScheduledQueuedAndRunning", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme, MaxInflight: 3})
		l := e.run(acme, base, job("echo")) // running
		e.submit(acme, base, job("echo"))   // queued
		later := job("echo")
		later.RunAt = at(time.Hour)
		e.submit(acme, base, later) // scheduled
		e.wantInflight(acme, 3)
		it := e.admitOne(acme, base, job("echo"))
		wantErr(t, "fourth admit at max_inflight 3", it.Err, store.ErrQuotaExceeded)
		_, err := e.complete(l, at(time.Second), nil)
		e.must(err, "Complete")
		e.submit(acme, at(2*time.Second), job("echo"))
		e.wantInflight(acme, 3)
	})

	t.Run("BatchKeepsOrder", func(t *testing.T) {
		e := start(t, ns)
		var subs []store.Submission
		for i := range 10 {
			s := job("kind-" + string(rune('a'+i)))
			s.Priority = i
			subs = append(subs, s)
		}
		items := e.admit(acme, base, subs...)
		ids := map[string]bool{}
		for i, it := range items {
			if it.Err != nil {
				t.Fatalf("item %d: %v", i, it.Err)
			}
			if it.Execution.Kind != subs[i].Kind || it.Execution.Priority != i {
				t.Errorf("item %d is %s/%d, want %s/%d: answers must keep request order",
					i, it.Execution.Kind, it.Execution.Priority, subs[i].Kind, i)
			}
			if ids[it.Execution.ID] {
				t.Errorf("item %d reuses id %s", i, it.Execution.ID)
			}
			ids[it.Execution.ID] = true
		}
		e.wantInflight(acme, 10)
	})

	t.Run("BatchItemErrorsDoNotAffectOthers", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme, MaxInflight: 3})
		e.submit(acme, base, keyed("echo", "used", `{"v":1}`))
		items := e.admit(acme, at(time.Second),
			job("ok-1"),                      // admitted (2 inflight)
			job(""),                          // invalid
			keyed("echo", "used", `{"v":2}`), // key reused with another payload
			job("ok-2"),                      // admitted (3 inflight)
			job("ok-3"),                      // over quota
			keyed("echo", "used", `{"v":1}`), // duplicate: no quota needed
		)
		if items[0].Err != nil || items[3].Err != nil {
			t.Errorf("valid items refused: %v, %v", items[0].Err, items[3].Err)
		}
		wantErr(t, "item 1 (empty kind)", items[1].Err, store.ErrInvalid)
		wantErr(t, "item 2 (reused key)", items[2].Err, store.ErrDedupKeyReused)
		wantErr(t, "item 4 (over quota)", items[4].Err, store.ErrQuotaExceeded)
		if items[5].Err != nil || !items[5].Deduplicated {
			t.Errorf("item 5 (duplicate at full quota): Err=%v Deduplicated=%v, want deduplicated", items[5].Err, items[5].Deduplicated)
		}
		if n := len(e.list(store.ListParams{Tenant: acme})); n != 3 {
			t.Errorf("%d executions, want 3", n)
		}
		e.wantInflight(acme, 3)
	})

	t.Run("BatchCountsQuotaPerItem", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme, MaxInflight: 3})
		items := e.admit(acme, base, job("a"), job("b"), job("c"), job("d"), job("e"))
		for i, it := range items {
			if i < 3 && it.Err != nil {
				t.Errorf("item %d: %v, want admitted", i, it.Err)
			}
			if i >= 3 {
				wantErr(t, "item beyond max_inflight", it.Err, store.ErrQuotaExceeded)
			}
		}
		e.wantInflight(acme, 3)
	})

	t.Run("BatchSameKeyTwiceIsOneExecution", func(t *testing.T) {
		e := start(t, ns)
		sub := keyed("echo", "k", `{"a":1}`)
		items := e.admit(acme, base, sub, sub)
		if items[0].Err != nil || items[1].Err != nil {
			t.Fatalf("errors: %v, %v", items[0].Err, items[1].Err)
		}
		if items[0].Deduplicated || !items[1].Deduplicated {
			t.Errorf("Deduplicated = %v, %v; want false, true", items[0].Deduplicated, items[1].Deduplicated)
		}
		if items[0].Execution.ID != items[1].Execution.ID {
			t.Errorf("two items with one key got %s and %s, want one execution", items[0].Execution.ID, items[1].Execution.ID)
		}
		if n := len(e.list(store.ListParams{Tenant: acme, DedupKey: "k"})); n != 1 {
			t.Errorf("%d executions with the key, want 1", n)
		}
		e.claimOne(acme, base)
		e.claimNone(acme, base)
		e.wantInflight(acme, 1)
	})

	t.Run("BatchSameKeyDifferentPayloadIsReused", func(t *testing.T) {
		e := start(t, ns)
		items := e.admit(acme, base, keyed("echo", "k", `{"a":1}`), keyed("echo", "k", `{"a":2}`))
		if items[0].Err != nil {
			t.Fatalf("item 0: %v", items[0].Err)
		}
		wantErr(t, "item 1", items[1].Err, store.ErrDedupKeyReused)
		e.wantInflight(acme, 1)
	})
}
