package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
)

// TestMigrateEventsDownReleasesBytes: reverting schema version 13 alone
// drops the retained events and takes their bytes out of their tenants'
// counts, which then hold their executions' bytes only; the up after it
// starts again with the default event retention.
func TestMigrateEventsDownReleasesBytes(t *testing.T) {
	ctx := context.Background()
	path := testdb.SQLite(t)
	base := time.Date(2031, time.March, 14, 9, 0, 0, 0, time.UTC)
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"acme", "globex"} {
		if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: name, EventRetention: time.Hour, Now: base}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: []store.Submission{{Kind: "k", Payload: []byte(`{"n":1}`)}}, Now: base}); err != nil {
		t.Fatal(err)
	}
	// globex's waiter is resumed by its event: the step it records, its
	// copy of the event, stays its execution's after the down.
	if _, err := s.Admit(ctx, &store.AdmitParams{Tenant: "globex", Items: []store.Submission{{Kind: "flow"}}, Now: base}); err != nil {
		t.Fatal(err)
	}
	c, err := s.Claim(ctx, &store.ClaimParams{Tenant: "globex", Max: 1, LeaseDuration: time.Minute, Now: base})
	if err != nil || len(c.Leases) != 1 {
		t.Fatalf("Claim: %+v, %v", c, err)
	}
	l := c.Leases[0]
	if x, err := s.Suspend(ctx, &store.SuspendParams{ExecutionID: l.ExecutionID, Token: l.Token, Step: "paid",
		Event: "payment", Now: base}); err != nil || x.Status != store.StatusSuspended {
		t.Fatalf("Suspend: %+v, %v", x, err)
	}
	for i, name := range []string{"acme", "acme", "globex"} {
		if _, err := s.Publish(ctx, &store.PublishParams{Tenant: name, Name: "payment", Data: []byte(`{"n":1}`), Now: base.Add(time.Duration(i))}); err != nil {
			t.Fatal(err)
		}
	}
	tn, err := s.GetTenant(ctx, &store.GetTenantParams{Name: "acme"})
	if err != nil || tn.StoredBytes != store.StoredSize([]byte(`{"n":1}`))+2*store.EventSize("payment", "", []byte(`{"n":1}`)) {
		t.Fatalf("acme before the down: %+v, %v; want its execution's and its two events' bytes", tn, err)
	}
	waiter, err := s.Get(ctx, &store.GetParams{ID: l.ExecutionID})
	if err != nil || waiter.StoredBytes == 0 {
		t.Fatalf("globex's waiter before the down: %+v, %v; want it to count its copy of the event", waiter, err)
	}
	tn, err = s.GetTenant(ctx, &store.GetTenantParams{Name: "globex"})
	if err != nil || tn.StoredBytes != waiter.StoredBytes+store.EventSize("payment", "", []byte(`{"n":1}`)) {
		t.Fatalf("globex before the down: %+v, %v; want its waiter's %d bytes and its event's", tn, err, waiter.StoredBytes)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	m := ms[len(ms)-1]
	if m.Version != 13 {
		t.Fatalf("newest migration %d, want 13 (this test reverts the events')", m.Version)
	}
	db, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, m.Down); err != nil {
		t.Fatalf("migration 13 down: %v", err)
	}
	if _, err := db.ExecContext(ctx, `DELETE FROM schema_migrations WHERE version = 13`); err != nil {
		t.Fatal(err)
	}
	rows, err := db.QueryContext(ctx, `SELECT name, stored_bytes,
		(SELECT COALESCE(SUM(stored_bytes), 0) FROM executions WHERE tenant = tenants.name) FROM tenants ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var name string
		var stored, sum int64
		if err := rows.Scan(&name, &stored, &sum); err != nil {
			t.Fatal(err)
		}
		n++
		if stored != sum {
			t.Errorf("%s after the down: stored_bytes %d, want its executions' %d", name, stored, sum)
		}
	}
	rows.Close()
	db.Close()
	if n != 2 {
		t.Fatalf("%d tenants after the down, want 2", n)
	}

	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tn, err = s.GetTenant(ctx, &store.GetTenantParams{Name: "acme"})
	if err != nil || tn.EventRetention != store.DefaultEventRetention {
		t.Errorf("acme after down and up: %+v, %v; want the default event retention", tn, err)
	}
	res, err := s.Publish(ctx, &store.PublishParams{Tenant: "acme", Name: "payment", Now: base.Add(time.Second)})
	if err != nil || res.Replayed {
		t.Errorf("Publish after down and up: %+v, %v", res, err)
	}
}

// TestPublishOneKeyFromSeveralStores: the same publish, with one
// idempotency key, from four Stores on one file (as four processes would
// share it) and four goroutines each: one event, one start per
// subscription, the waiter resumed once, and every answer the first.
func TestPublishOneKeyFromSeveralStores(t *testing.T) {
	ctx := t.Context()
	path := testdb.SQLite(t)
	base := time.Date(2031, time.March, 14, 9, 0, 0, 0, time.UTC)
	stores := make([]*Store, 4)
	for i := range stores {
		s, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores[i] = s
	}
	s := stores[0]
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", Now: base}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if _, err := s.PutSubscription(ctx, &store.PutSubscriptionParams{Subscription: store.Subscription{Tenant: "acme",
			Name: name, Event: "payment", Kind: "start-" + name, Enabled: true}, Now: base}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: []store.Submission{{Kind: "flow"}}, Now: base}); err != nil {
		t.Fatal(err)
	}
	c, err := s.Claim(ctx, &store.ClaimParams{Tenant: "acme", Max: 1, LeaseDuration: time.Minute, Now: base})
	if err != nil || len(c.Leases) != 1 {
		t.Fatalf("Claim: %+v, %v", c, err)
	}
	l := c.Leases[0]
	if x, err := s.Suspend(ctx, &store.SuspendParams{ExecutionID: l.ExecutionID, Token: l.Token, Step: "paid",
		Event: "payment", Now: base}); err != nil || x.Status != store.StatusSuspended {
		t.Fatalf("Suspend: %+v, %v", x, err)
	}
	const per = 4
	answers := make([]*store.PublishResult, len(stores)*per)
	errs := make([]error, len(answers))
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range answers {
		wg.Go(func() {
			<-gate
			answers[i], errs[i] = stores[i%len(stores)].Publish(ctx, &store.PublishParams{Tenant: "acme", Name: "payment",
				Data: []byte(`{"n":1}`), IdempotencyKey: "pay-1", Now: base.Add(time.Second)})
		})
	}
	close(gate)
	wg.Wait()
	fresh := 0
	for i, a := range answers {
		if errs[i] != nil {
			t.Fatalf("Publish %d: %v", i, errs[i])
		}
		if !a.Replayed {
			fresh++
		}
		if a.EventID != answers[0].EventID || a.Resumed != 1 || fmt.Sprint(a.Started) != fmt.Sprint(answers[0].Started) {
			t.Errorf("Publish %d answered %+v, Publish 0 %+v", i, a, answers[0])
		}
	}
	if fresh != 1 {
		t.Errorf("%d of %d publishes were not Replayed, want 1", fresh, len(answers))
	}
	for _, kind := range []string{"start-a", "start-b"} {
		got, err := s.List(ctx, &store.ListParams{Tenant: "acme", Kind: kind, Limit: 100})
		if err != nil || len(got.Items) != 1 {
			t.Errorf("executions of %s: %d, %v; want 1", kind, len(got.Items), err)
		}
	}
	var events int
	if err := s.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM events`).Scan(&events); err != nil || events != 1 {
		t.Errorf("%d events stored, %v; want 1", events, err)
	}
	st, err := s.Steps(ctx, &store.StepsParams{ID: l.ExecutionID})
	if err != nil || len(st.Items) != 1 {
		t.Errorf("the waiter's journal: %+v, %v; want its one step", st, err)
	}
}
