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

// TestRunsPlans: the statements that write an execution's runs, or delete
// its journal, signals, runs and consumed events, and those that read and
// write events (a wait's match, a publish's resume, Prune's), find those
// rows by an index
// whatever the statistics said when the connection planned them. The
// store's connections make a statement's generic plan once (postgres.go:
// plan_cache_mode = force_generic_plan) and keep it until an ANALYZE of its
// tables; here the plans are made while statistics say latch_runs,
// latch_steps and latch_signals are empty (analyzed so, with a long queue:
// a new deployment, or a quiet table), on one connection with the store's
// settings. The tables then grow to 50,000 rows each, and that
// connection's plans, the statements' own and those of the functions they
// call, must not read any of them whole: such a scan reads the whole table
// for every group of ends (a 50,000-job drain ran at ~200 jobs/s). Each
// statement runs for real, on a lease the fences accept, in a transaction
// rolled back, and the connection's table statistics
// (pg_stat_xact_user_tables, before and after) count its sequential scans.
func TestRunsPlans(t *testing.T) {
	f := newRunsFixture(t)
	ctx := f.ctx
	_, err := f.s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", Now: f.now})
	f.must(err, "CreateTenant")
	f.submit("acme", store.Submission{Kind: "echo"})
	lease := f.claim("acme", 1)[0]
	table := func(name string) string { return pgx.Identifier{f.schema, name}.Sanitize() }
	_, err = admin.pool.Exec(ctx, `INSERT INTO `+table("latch_executions")+` (id, tenant, kind, queue, priority, status,
		payload, max_attempts, timeout_seconds, created_at, run_at)
		SELECT gen_random_uuid(), 'acme', 'echo', 'default', 0, 'queued', '{}', 1, 60, now(), now()
		FROM generate_series(1, 50000)`)
	f.must(err, "queue 50,000 executions")
	history := []string{"latch_runs", "latch_steps", "latch_signals", "latch_event_consumed", "latch_events"}
	for _, tbl := range history {
		_, err = admin.pool.Exec(ctx, `VACUUM ANALYZE `+table(tbl))
		f.must(err, "analyze "+tbl)
	}

	conn, err := admin.pool.Acquire(ctx)
	f.must(err, "acquire")
	// The connection leaves the pool: its settings and plans are this
	// test's, and the other tests' cached statements must not meet them.
	c := conn.Hijack()
	defer func() { _ = c.Close(context.Background()) }()
	exec := func(sql string) {
		t.Helper()
		_, err := c.Exec(ctx, sql, pgx.QueryExecModeSimpleProtocol)
		f.must(err, sql)
	}
	exec(`SET search_path = ` + pgx.Identifier{f.schema}.Sanitize() + `; SET plan_cache_mode = force_generic_plan; SET jit = off`)
	queries := postgres.RunsPlanQueries(lease.ExecutionID, lease.Token, f.now)
	call := func(name string) string {
		q := queries[name]
		lits := make([]string, len(q.Args))
		for i, a := range q.Args {
			switch a := a.(type) {
			case int:
				lits[i] = fmt.Sprint(a)
			case nil:
				lits[i] = "NULL"
			default:
				lits[i] = "'" + strings.ReplaceAll(fmt.Sprint(a), "'", "''") + "'"
			}
		}
		return `"` + name + `"(` + strings.Join(lits, ", ") + `)`
	}
	// seqScans answers the sequential scans of the history tables counted
	// by this connection and not yet reported, by table (the counts of the
	// transaction, and of earlier ones pending).
	seqScans := func() map[string]int64 {
		t.Helper()
		scans := map[string]int64{}
		rows, err := c.Query(ctx, `SELECT relname, seq_scan FROM pg_stat_xact_user_tables
			WHERE schemaname = $1 AND relname = ANY($2)`, f.schema, history)
		f.must(err, "pg_stat_xact_user_tables")
		var tbl string
		var n int64
		_, err = pgx.ForEachRow(rows, []any{&tbl, &n}, func() error { scans[tbl] = n; return nil })
		f.must(err, "pg_stat_xact_user_tables")
		return scans
	}
	// run executes the statement in a transaction rolled back, and answers
	// the sequential scans of the history tables it made, by table.
	run := func(name string) map[string]int64 {
		t.Helper()
		exec(`BEGIN`)
		defer exec(`ROLLBACK`)
		before := seqScans()
		exec(`EXECUTE ` + call(name))
		made := map[string]int64{}
		for tbl, n := range seqScans() {
			if n > before[tbl] {
				made[tbl] = n - before[tbl]
			}
		}
		return made
	}
	for name, q := range queries {
		exec(`PREPARE "` + name + `" AS ` + q.SQL)
		run(name) // the plans are made, the functions' too
	}
	for _, tbl := range history {
		_, err = admin.pool.Exec(ctx, `INSERT INTO `+table(tbl)+map[string]string{
			"latch_runs":           ` (execution_id, run, attempt, worker_id, claimed_at) SELECT gen_random_uuid(), 1, 1, 'w', now()`,
			"latch_steps":          ` (execution_id, name, result, recorded_at, attempt) SELECT gen_random_uuid(), 's', '{}', now(), 1`,
			"latch_signals":        ` (execution_id, name, data, consumed, delivered, sent_at) SELECT gen_random_uuid(), 's', '{}', false, false, now()`,
			"latch_event_consumed": ` (execution_id, event_id) SELECT gen_random_uuid(), gen_random_uuid()`,
			"latch_events": ` (id, tenant, name, key, data, published_at, expires_at, size)
				SELECT gen_random_uuid(), 'acme', 'n' || (i % 100), 'k' || (i % 7), 'null', now(), now() + interval '1 day', 1`,
		}[tbl]+` FROM generate_series(1, 50000) AS i`)
		f.must(err, "grow "+tbl)
	}
	for name := range queries {
		rows, err := c.Query(ctx, `EXPLAIN EXECUTE `+call(name), pgx.QueryExecModeSimpleProtocol)
		f.must(err, "EXPLAIN "+name)
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		f.must(err, "EXPLAIN "+name)
		plan := strings.Join(lines, "\n")
		scans := run(name)
		t.Logf("%s, with 50,000 rows in each table: sequential scans %v; plan:\n%s", name, scans, plan)
		if len(scans) > 0 {
			t.Errorf("%s: sequential scans of %v, want none (plan made on an empty table; statement's plan:\n%s)", name, scans, plan)
		}
	}
}
