package postgres_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/postgres"
	"github.com/latch-run/latch/store/storetest"
)

// TestMigrateStorageCountsExistingData: executions stored before schema
// version 11 (the storage budget) are counted by its up migration: each
// its payload, result and journal, its tenant the sum, with the default
// budget; and the down migration removes the budget whole.
func TestMigrateStorageCountsExistingData(t *testing.T) {
	t.Parallel()
	acquireSlot(t)
	ctx := t.Context()
	schema, u := newSchema(t)
	if _, err := postgres.Migrate(ctx, u, "up"); err != nil {
		t.Fatal(err)
	}
	for v := postgres.SchemaVersion(); v > 10; v-- { // down to version 10, the one before the budget
		if st, err := postgres.Migrate(ctx, u, "down"); err != nil || st.Version != v-1 {
			t.Fatalf("down from %d: %+v, %v", v, st, err)
		}
	}
	var n int
	if err := admin.pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables
		WHERE table_schema = $1 AND table_name = 'latch_storage'`, schema).Scan(&n); err != nil || n != 0 {
		t.Fatalf("after down: latch_storage left (%d, %v)", n, err)
	}
	// Data as version 10 stored it.
	tbl := func(name string) string { return pgx.Identifier{schema, name}.Sanitize() }
	q := `INSERT INTO ` + tbl("latch_tenants") + ` (name, max_inflight, dedup_ttl, retention, created_at)
    VALUES ('acme', 10, 1, 1, now());
INSERT INTO ` + tbl("latch_quota_shards") + ` (tenant, shard, free) VALUES ('acme', 0, 10);
INSERT INTO ` + tbl("latch_executions") + ` (id, tenant, kind, queue, priority, status, payload, result,
    max_attempts, timeout_seconds, created_at, run_at, finished_at)
VALUES ('01890a5d-ac96-774b-bcce-b302099a8057', 'acme', 'k', 'default', 0, 'succeeded', '{"a":"12345"}', '"done"',
    3, 60, now(), now(), now());
INSERT INTO ` + tbl("latch_steps") + ` (execution_id, name, result, recorded_at, attempt)
VALUES ('01890a5d-ac96-774b-bcce-b302099a8057', 'one', '[1,2,3]', now(), 1);`
	if _, err := admin.pool.Exec(ctx, q); err != nil {
		t.Fatal(err)
	}
	s := openMigrated(t, u)
	defer s.Close()
	want := int64(len(`{"a":"12345"}`) + len(`"done"`) + len(`[1,2,3]`))
	ten, err := s.GetTenant(ctx, &store.GetTenantParams{Name: "acme"})
	if err != nil || ten.StoredBytes != want || ten.MaxStoredBytes != store.DefaultMaxStoredBytes {
		t.Fatalf("tenant after the up: %+v, %v; want %d bytes stored of the default budget", ten, err, want)
	}
	storetest.CheckStorage(t, s, "acme")
	// The migrated count is the one the operations go on from.
	res, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Now: time.Now(),
		Items: []store.Submission{{Kind: "k", Payload: json.RawMessage(`{"b":1}`)}}})
	if err != nil || res.Items[0].Err != nil {
		t.Fatalf("admit after the up: %+v, %v", res, err)
	}
	if ten, _ := s.GetTenant(ctx, &store.GetTenantParams{Name: "acme"}); ten.StoredBytes != want+int64(len(`{"b":1}`)) {
		t.Errorf("after an admit: %d bytes stored, want %d", ten.StoredBytes, want+7)
	}
	storetest.CheckStorage(t, s, "acme")

	// A tenant that a server of the previous release creates during a
	// deploy (no storage row written by it) has the default budget, and
	// the reads of tenants still answer.
	old := `INSERT INTO ` + tbl("latch_tenants") + ` (name, max_inflight, dedup_ttl, retention, created_at)
    VALUES ('globex', 10, 1, 1, now());
INSERT INTO ` + tbl("latch_quota_shards") + ` (tenant, shard, free) VALUES ('globex', 0, 10);`
	if _, err := admin.pool.Exec(ctx, old); err != nil {
		t.Fatal(err)
	}
	if g, err := s.GetTenant(ctx, &store.GetTenantParams{Name: "globex"}); err != nil || g.MaxStoredBytes != store.DefaultMaxStoredBytes || g.StoredBytes != 0 {
		t.Errorf("a tenant an older server created: %+v, %v; want the default budget, 0 stored", g, err)
	}
	if ts, err := s.ListTenants(ctx, &store.ListTenantsParams{}); err != nil || len(ts) != 2 {
		t.Errorf("ListTenants with a tenant an older server created: %d tenants, %v; want 2", len(ts), err)
	}
	res, err = s.Admit(ctx, &store.AdmitParams{Tenant: "globex", Now: time.Now(),
		Items: []store.Submission{{Kind: "k", Payload: json.RawMessage(`{"b":1}`)}}})
	if err != nil || res.Items[0].Err != nil {
		t.Fatalf("admit for a tenant an older server created: %+v, %v", res, err)
	}
	storetest.CheckStorage(t, s, "globex")
}
