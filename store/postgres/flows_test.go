package postgres_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/postgres"
)

// TestMigrateDownQueuesSuspended: schema version 5 has no flows, so going
// down from 6 queues a suspended execution again (its quota unit kept), and
// its tenant's in-flight count is unchanged.
func TestMigrateDownQueuesSuspended(t *testing.T) {
	t.Parallel()
	acquireSlot(t)
	ctx := t.Context()
	schema, u := newSchema(t)
	s := openMigrated(t, u)
	now := time.Date(2031, time.March, 14, 9, 0, 0, 0, time.UTC)
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", MaxInflight: 5, Now: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: []store.Submission{{Kind: "flow"}}, Now: now}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Claim(ctx, &store.ClaimParams{WorkerID: "w", Max: 1, Now: now})
	if err != nil || len(res.Leases) != 1 {
		t.Fatalf("Claim: %+v, %v", res, err)
	}
	l := res.Leases[0]
	x, err := s.Suspend(ctx, &store.SuspendParams{ExecutionID: l.ExecutionID, Token: l.Token, Step: "nap",
		Until: now.Add(time.Hour), Now: now})
	if err != nil || x.Status != store.StatusSuspended {
		t.Fatalf("Suspend: %+v, %v", x, err)
	}
	s.Close()

	// Down past every later version and version 6 (flows).
	for v := postgres.SchemaVersion() - 1; v >= 5; v-- {
		if st, err := postgres.Migrate(ctx, u, "down"); err != nil || st.Version != v {
			t.Fatalf("down to version %d: %+v, %v", v, st, err)
		}
	}
	var status string
	if err := admin.pool.QueryRow(ctx, `SELECT status FROM `+pgx.Identifier{schema, "latch_executions"}.Sanitize()+` WHERE id = $1`,
		l.ExecutionID).Scan(&status); err != nil || status != string(store.StatusQueued) {
		t.Fatalf("after down: status %q, %v; want queued", status, err)
	}
	s = openMigrated(t, u)
	defer s.Close()
	ten, err := s.GetTenant(ctx, &store.GetTenantParams{Name: "acme"})
	if err != nil || ten.Inflight != 1 {
		t.Fatalf("tenant after down and up: %+v, %v; want 1 in flight", ten, err)
	}
	got, err := s.Get(ctx, &store.GetParams{ID: l.ExecutionID})
	if err != nil || got.Status != store.StatusQueued || got.WakeAt != nil || got.SuspendStep != "" {
		t.Fatalf("execution after down and up: %+v, %v; want queued, no suspension", got, err)
	}
}
