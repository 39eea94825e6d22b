package storetest

import (
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// Reopen opens a Store on one database that outlives the Store: a file, a
// PostgreSQL schema, a Redis key prefix. The suite closes every Store it
// opens, so Reopen must not arrange to close it.
type Reopen func(t *testing.T) store.Store

// RunReopen checks durability (I8) for backends whose database can be closed
// and opened again: whatever an operation acknowledged is still there, and
// still behaves the same, after a reopen. newDB prepares a fresh, empty
// database for one test and returns how to open a Store on it:
//
//	storetest.RunReopen(t, func(t *testing.T) storetest.Reopen {
//		path := filepath.Join(t.TempDir(), "latch.db")
//		return func(t *testing.T) store.Store {
//			s, err := sqlite.Open(t.Context(), path)
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		}
//	})
func RunReopen(t *testing.T, newDB func(t *testing.T) Reopen) {
	t.Helper()
	t.Run("AcknowledgedStateSurvives", func(t *testing.T) {
		t.Parallel()
		open := newDB(t)
		e := &env{t: t, ctx: t.Context(), s: open(t)}

		e.createTenant(store.CreateTenantParams{Name: acme, MaxInflight: 50, DedupTTL: time.Hour, Retention: 2 * time.Hour})
		e.createTenant(store.CreateTenantParams{Name: globex})
		e.must(e.s.AddAPIKey(e.ctx, &store.AddAPIKeyParams{Tenant: acme, KeyHash: "hash-acme-2", Now: base}), "AddAPIKey")
		admin, err := e.s.EnsureAdminKey(e.ctx, &store.EnsureAdminKeyParams{KeyHash: "hash-admin", Now: base})
		e.must(err, "EnsureAdminKey")
		if !admin.Created {
			t.Fatal("EnsureAdminKey did not create the key in an empty database")
		}

		// One execution in each state a process may leave behind.
		done := e.run(acme, base, keyed("echo", "done", `{"n":1}`))
		_, err = e.complete(done, at(time.Second), mustJSON(`{"ok":true}`))
		e.must(err, "Complete")
		failed := e.run(acme, at(2*time.Second), job("failed"))
		_, err = e.fail(failed, at(3*time.Second), "boom", false, 0)
		e.must(err, "Fail")
		retrying := e.run(acme, at(4*time.Second), job("retrying"))
		_, err = e.fail(retrying, at(5*time.Second), "again", true, time.Hour)
		e.must(err, "Fail with retry")
		cancelling := e.run(acme, at(6*time.Second), job("cancelling"))
		_, err = e.cancel(acme, cancelling.ExecutionID, at(7*time.Second))
		e.must(err, "Cancel")
		running := e.run(acme, at(8*time.Second), keyed("echo", "running", `{}`))
		cancelled := e.submit(acme, at(9*time.Second), job("cancelled"))
		_, err = e.cancel(acme, cancelled.ID, at(10*time.Second))
		e.must(err, "Cancel")
		queued := e.submit(acme, at(11*time.Second), keyed("http", "queued", `{"url":"https://example.com"}`))
		later := job("scheduled")
		later.RunAt = at(24 * time.Hour)
		e.submit(acme, at(12*time.Second), later)
		e.submit(globex, at(13*time.Second), keyed("echo", "queued", `{}`))

		before := map[string]*store.Execution{}
		for _, x := range e.list(store.ListParams{}) {
			before[x.ID] = x
		}
		tenantsBefore := map[string]*store.Tenant{acme: e.tenant(acme), globex: e.tenant(globex)}

		e.must(e.s.Close(), "Close")
		e.s = open(t)
		t.Cleanup(func() { e.s.Close() })

		after := e.list(store.ListParams{})
		if len(after) != len(before) {
			t.Errorf("I8: %d executions after reopening, want %d", len(after), len(before))
		}
		for _, x := range after {
			if b, ok := before[x.ID]; !ok {
				t.Errorf("I8: execution %s appeared after reopening", x.ID)
			} else {
				sameExecution(t, "I8: after reopening", x, b)
			}
		}
		for name, tn := range tenantsBefore {
			wantTenant(t, "I8: tenant after reopening", e.tenant(name), *tn)
			CheckInflight(t, e.s, name)
		}
		for hash, want := range map[string]store.APIKey{
			"hash-acme": {Tenant: acme}, "hash-acme-2": {Tenant: acme}, "hash-globex": {Tenant: globex}, "hash-admin": {Admin: true},
		} {
			k, err := e.s.LookupAPIKey(e.ctx, &store.LookupAPIKeyParams{KeyHash: hash})
			if err == nil && k.KeyID != "" {
				want.KeyID = k.KeyID // generated: any id, as long as it has one
			}
			if err != nil || *k != want || k.KeyID == "" {
				t.Errorf("I8: key %s after reopening: %+v, %v; want %+v", hash, k, err, want)
			}
		}
		res, err := e.s.EnsureAdminKey(e.ctx, &store.EnsureAdminKeyParams{KeyHash: "hash-admin-2", Now: at(time.Minute)})
		e.must(err, "EnsureAdminKey after reopening")
		if res.Created {
			t.Error("I8: a second admin key was created after reopening")
		}

		// Dedup keys, leases and cancel requests still hold.
		now := at(20 * time.Second)
		e.dedup(acme, now, keyed("echo", "done", `{"n":1}`), done.ExecutionID)
		e.dedup(acme, now, keyed("echo", "running", `{}`), running.ExecutionID)
		e.dedup(acme, now, keyed("http", "queued", `{"url":"https://example.com"}`), queued.ID)
		hb, err := e.heartbeat(running, now, leaseFor)
		e.must(err, "I8: Heartbeat with a lease granted before reopening")
		if hb.CancelRequested {
			t.Error("I8: a cancel request appeared after reopening")
		}
		hb, err = e.heartbeat(cancelling, now, leaseFor)
		e.must(err, "I8: Heartbeat with a lease granted before reopening")
		if !hb.CancelRequested {
			t.Error("I8: a cancel request was lost by reopening")
		}
		e.checkFenced(retrying, acme, now, store.ErrLeaseLost)
		l := e.claimOne(acme, now)
		if l.ExecutionID != queued.ID {
			t.Errorf("claimed %s after reopening, want the queued %s", l.ExecutionID, queued.ID)
		}
		e.claimNone(acme, now)
		e.wantInflight(acme, 5)
	})

	t.Run("ReopenEmptyDatabase", func(t *testing.T) {
		t.Parallel()
		open := newDB(t)
		s := open(t)
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		s = open(t)
		defer s.Close()
		if err := s.Ping(t.Context()); err != nil {
			t.Fatalf("Ping after reopening: %v", err)
		}
	})
}
