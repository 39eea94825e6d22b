package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/postgres"
)

// TestListPlans: List's window is read from an index alone, and the page in
// it from that range of an index, whatever the filters; a tenant's dedup
// key and a schedule's ticks are read through their own indexes. The plans are read as the store's
// connections plan them (generic plans), with statistics of 100,000
// executions over 50 tenants, ids in creation order as the store makes them.
func TestListPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, schema := obsStore(t, 4, store.CreateTenantParams{})
	tbl := pgx.Identifier{schema, "latch_executions"}.Sanitize()
	if _, err := admin.pool.Exec(ctx, `INSERT INTO `+tbl+` (id, tenant, kind, queue, priority, status, payload,
		max_attempts, timeout_seconds, created_at, run_at, finished_at, dedup_key, schedule)
		SELECT ('00000000-0000-7000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, CASE WHEN i % 50 = 0 THEN 'acme' ELSE 't' || (i % 50) END, 'k' || (i % 7), 'q' || (i % 3), 0,
			'succeeded', '{}', 1, 60, now(), now(), now(),
			CASE WHEN i % 5 = 0 THEN 'd' || i END, CASE WHEN i % 11 = 0 THEN 's' || (i % 4) END
		FROM generate_series(1, 100000) AS i`); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.pool.Exec(ctx, `VACUUM ANALYZE `+tbl); err != nil {
		t.Fatal(err)
	}
	// The page in a window reads that range of an index only (a tenant's:
	// by a scan of latch_executions_tenant or a bitmap of it, as the
	// planner weighs them; never the primary key, which would read the rows
	// of every tenant in between).
	want := map[string][]string{
		"window of a tenant":            {"Index Only Scan Backward using latch_executions_tenant", "ROW(tenant, id) < ROW($1, $2)"},
		"window of every tenant":        {"Index Only Scan Backward using latch_executions_pkey", "(id < $1)"},
		"page in a tenant's window":     {" using latch_executions_tenant", "(ROW(tenant, id) >= ROW($1, $3))"},
		"page in every tenant's window": {"Index Scan Backward using latch_executions_pkey", "(id >= $2)"},
		"unfiltered page of a tenant":   {"Index Scan Backward using latch_executions_tenant", "(ROW(tenant, id) < ROW($1, $2))"},
		"dedup key of a tenant":         {"Index Scan using latch_executions_tenant_dedup"},
		"schedule of a tenant":          {"Index Scan Backward using latch_executions_schedule_ticks"},
	}
	queries := postgres.ListPlanQueries()
	if len(queries) != len(want) {
		t.Fatalf("%d List statements, want %d", len(queries), len(want))
	}
	for name, q := range queries {
		plan := strings.Join(explainGeneric(t, schema, q, false), "\n")
		t.Logf("%s:\n%s", name, plan)
		ok := !strings.Contains(plan, "Seq Scan") &&
			(!strings.Contains(name, "a tenant") || !strings.Contains(plan, "latch_executions_pkey"))
		for _, w := range want[name] {
			ok = ok && strings.Contains(plan, w)
		}
		if !ok {
			t.Errorf("%s: plan\n%s\nwant %q, no sequential scan, and for a tenant not the primary key", name, plan, want[name])
		}
	}
}

// explainGeneric answers the generic plan of q on schema, as the store's
// connections plan it (postgres.go: plan_cache_mode = force_generic_plan):
// q prepared, then explained as EXECUTE with its arguments as literals.
// With analyze, it runs too (EXPLAIN (ANALYZE, BUFFERS)).
func explainGeneric(t *testing.T, schema string, q postgres.PlanQuery, analyze bool) []string {
	t.Helper()
	ctx := context.Background()
	tx, err := admin.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SET LOCAL search_path = `+pgx.Identifier{schema}.Sanitize()+
		`; SET LOCAL plan_cache_mode = force_generic_plan; SET LOCAL jit = off`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `PREPARE plan_q AS `+q.SQL, pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatalf("PREPARE %s: %v", q.SQL, err)
	}
	// A prepared statement outlives the transaction, on the pool's
	// connection.
	defer func() { _, _ = tx.Conn().Exec(ctx, `DEALLOCATE plan_q`, pgx.QueryExecModeSimpleProtocol) }()
	lits := make([]string, len(q.Args))
	for i, a := range q.Args {
		switch a := a.(type) {
		case int:
			lits[i] = fmt.Sprint(a)
		default:
			lits[i] = "'" + strings.ReplaceAll(fmt.Sprint(a), "'", "''") + "'"
		}
	}
	explain := `EXPLAIN `
	if analyze {
		explain = `EXPLAIN (ANALYZE, BUFFERS) `
	}
	rows, err := tx.Query(ctx, explain+`EXECUTE plan_q(`+strings.Join(lits, ", ")+`)`, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatalf("EXPLAIN %s: %v", q.SQL, err)
	}
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("EXPLAIN %s: %v", q.SQL, err)
	}
	return plan
}
