package postgres_test

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/postgres"
)

// TestMigrateBackfillsKeyIDs: a key stored before schema version 4 gets a
// key id from the migration, by which it is listed and deleted.
func TestMigrateBackfillsKeyIDs(t *testing.T) {
	t.Parallel()
	acquireSlot(t)
	ctx := t.Context()
	schema, u := newSchema(t)
	s := openMigrated(t, u)
	now := time.Date(2031, time.March, 14, 9, 0, 0, 0, time.UTC)
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", Now: now}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// Down past every later version and version 4 (key ids).
	for v := postgres.SchemaVersion() - 1; v >= 3; v-- {
		if st, err := postgres.Migrate(ctx, u, "down"); err != nil || st.Version != v {
			t.Fatalf("down to version %d: %+v, %v", v, st, err)
		}
	}
	for _, h := range []string{"hash-old-1", "hash-old-2"} {
		if _, err := admin.pool.Exec(ctx, `INSERT INTO `+pgx.Identifier{schema, "latch_api_keys"}.Sanitize()+
			` (hash, tenant, created_at) VALUES ($1, 'acme', $2)`, h, now); err != nil {
			t.Fatal(err)
		}
	}
	s = openMigrated(t, u)
	defer s.Close()
	ks, err := s.ListAPIKeys(ctx, &store.ListAPIKeysParams{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ks) != 2 || ks[0].KeyID == ks[1].KeyID {
		t.Fatalf("keys after the migration: %d, want 2 with distinct ids", len(ks))
	}
	for _, k := range ks {
		if !strings.HasPrefix(k.KeyID, "key_") || len(k.KeyID) != 20 {
			t.Errorf("backfilled key id %q, want key_ and 16 hex digits", k.KeyID)
		}
	}
	if err := s.DeleteAPIKey(ctx, &store.DeleteAPIKeyParams{Tenant: "acme", KeyID: ks[0].KeyID}); err != nil {
		t.Fatal(err)
	}
	if ks, err := s.ListAPIKeys(ctx, &store.ListAPIKeysParams{Tenant: "acme"}); err != nil || len(ks) != 1 {
		t.Errorf("keys after deleting one: %d, %v; want 1", len(ks), err)
	}
}
