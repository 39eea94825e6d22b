package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/postgres"
)

// TestListPlans: List's window is read from an index alone, and the page in
// it from that range of an index, whatever the filters; a tenant's dedup
// key is read through its own index. The plans are read as the store's
// connections run them, with statistics of 100,000 executions over two
// tenants, ids in creation order as the store makes them.
func TestListPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, schema := obsStore(t, 4, store.CreateTenantParams{})
	tbl := pgx.Identifier{schema, "latch_executions"}.Sanitize()
	if _, err := admin.pool.Exec(ctx, `INSERT INTO `+tbl+` (id, tenant, kind, queue, priority, status, payload,
		max_attempts, timeout_seconds, created_at, run_at, finished_at, dedup_key, schedule)
		SELECT ('00000000-0000-7000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, CASE WHEN i % 2 = 0 THEN 'acme' ELSE 'globex' END, 'k' || (i % 7), 'q' || (i % 3), 0,
			'succeeded', '{}', 1, 60, now(), now(), now(),
			CASE WHEN i % 5 = 0 THEN 'd' || i END, CASE WHEN i % 11 = 0 THEN 's' || (i % 4) END
		FROM generate_series(1, 100000) AS i`); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.pool.Exec(ctx, `VACUUM ANALYZE `+tbl); err != nil {
		t.Fatal(err)
	}
	// The page in a window may walk the tenant's index or the primary key
	// (the planner weighs the tenant's share of the range); either way it
	// reads the window's range of ids only.
	window := "(id >= "
	want := map[string][]string{
		"window of a tenant":            {"Index Only Scan Backward using latch_executions_tenant"},
		"window of every tenant":        {"Index Only Scan Backward using latch_executions_pkey"},
		"page in a tenant's window":     {"Index Scan Backward using latch_executions_", window},
		"page in every tenant's window": {"Index Scan Backward using latch_executions_pkey", window},
		"dedup key of a tenant":         {"Index Scan using latch_executions_tenant_dedup"},
	}
	queries := postgres.ListPlanQueries()
	if len(queries) != len(want) {
		t.Fatalf("%d List statements, want %d", len(queries), len(want))
	}
	for name, q := range queries {
		plan := strings.Join(explainGeneric(t, schema, q), "\n")
		t.Logf("%s:\n%s", name, plan)
		ok := !strings.Contains(plan, "Seq Scan")
		for _, w := range want[name] {
			ok = ok && strings.Contains(plan, w)
		}
		if !ok {
			t.Errorf("%s: plan\n%s\nwant %q and no sequential scan", name, plan, want[name])
		}
	}
}

// explainGeneric answers the generic plan of q on schema, as the store's
// connections would plan it (postgres.go).
func explainGeneric(t *testing.T, schema string, q postgres.PlanQuery) []string {
	t.Helper()
	ctx := context.Background()
	tx, err := admin.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SET LOCAL search_path = `+pgx.Identifier{schema}.Sanitize()+
		`; SET LOCAL plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	rows, err := tx.Query(ctx, `EXPLAIN `+q.SQL, q.Args...)
	if err != nil {
		t.Fatalf("EXPLAIN %s: %v", q.SQL, err)
	}
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("EXPLAIN %s: %v", q.SQL, err)
	}
	return plan
}
