package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/latch-run/latch/store"
)

// TestClaimKindPlans: a claim filtered by kind reads the ready executions
// of its kinds only, however many of other kinds are ready ahead of them
// (issue: 3,000 executions of a kind no worker handles made every
// filtered claim read all 3,000 inside its write transaction). The claim's
// function (latch_claim_candidates) is planned on one connection with the
// store's settings while the tables are small; then acme gets 3,000
// queued and 500 due scheduled executions of kind nobody at the top
// priority, and each claim below — for every tenant and for acme alone,
// with and without a queue filter, moving turns or not — runs for real in
// a transaction rolled back, and the connection's table statistics
// (pg_stat_xact_user_tables, before and after) count the rows of
// latch_executions it read, by index and by sequential scan.
func TestClaimKindPlans(t *testing.T) {
	f := newRunsFixture(t)
	ctx := f.ctx
	for _, tn := range []string{"acme", "globex"} {
		_, err := f.s.CreateTenant(ctx, &store.CreateTenantParams{Name: tn, Now: f.now})
		f.must(err, "CreateTenant")
		f.submit(tn, store.Submission{Kind: "echo"}, store.Submission{Kind: "echo", Priority: 3})
	}
	table := func(name string) string { return pgx.Identifier{f.schema, name}.Sanitize() }
	_, err := admin.pool.Exec(ctx, `ANALYZE `+table("latch_executions"))
	f.must(err, "analyze")

	conn, err := admin.pool.Acquire(ctx)
	f.must(err, "acquire")
	c := conn.Hijack() // this test's settings and plans stay on this connection
	defer func() { _ = c.Close(context.Background()) }()
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := c.Exec(ctx, sql, args...)
		f.must(err, sql)
	}
	exec(`SET search_path = ` + pgx.Identifier{f.schema}.Sanitize() + `; SET plan_cache_mode = force_generic_plan; SET jit = off`)
	read := func() int64 {
		t.Helper()
		var n int64
		f.must(c.QueryRow(ctx, `SELECT coalesce(sum(coalesce(idx_tup_fetch, 0) + coalesce(seq_tup_read, 0)), 0)
			FROM pg_stat_xact_user_tables WHERE schemaname = $1 AND relname = 'latch_executions'`, f.schema).Scan(&n),
			"pg_stat_xact_user_tables")
		return n
	}
	type claim struct {
		name   string
		tenant string
		queues []string
		move   bool
	}
	claims := []claim{
		{"every tenant", "", nil, false},
		{"every tenant, moving turns", "", nil, true},
		{"every tenant, queue default", "", []string{"default"}, true},
		{"acme alone", "acme", nil, true},
		{"acme alone, queue default", "acme", []string{"default"}, false},
	}
	// run claims (n 2, kinds echo and sleep) in a transaction rolled back;
	// it answers the rows read and the candidates got.
	run := func(cl claim) (rows int64, got int) {
		t.Helper()
		exec(`BEGIN`)
		defer exec(`ROLLBACK`)
		before := read()
		f.must(c.QueryRow(ctx, `SELECT count(*) FROM latch_claim_candidates($1, 2, $2, $3, $4, $5)`,
			f.now.Add(60e9), cl.tenant, cl.queues, []string{"echo", "sleep"}, cl.move).Scan(&got), cl.name)
		return read() - before, got
	}
	for _, cl := range claims {
		run(cl) // the plans are made
	}
	_, err = admin.pool.Exec(ctx, `INSERT INTO `+table("latch_executions")+` (id, tenant, kind, queue, priority, status,
		payload, max_attempts, timeout_seconds, created_at, run_at)
		SELECT gen_random_uuid(), 'acme', 'nobody', 'default', 9, CASE WHEN i <= 500 THEN 'scheduled' ELSE 'queued' END,
			'{}', 1, 60, $1, $1 FROM generate_series(1, 3500) AS i`, f.now)
	f.must(err, "queue 3,500 of kind nobody")
	for _, cl := range claims {
		rows, got := run(cl)
		t.Logf("%s: %d candidates, %d rows of latch_executions read", cl.name, got, rows)
		if got == 0 {
			t.Errorf("%s: no candidate of kind echo", cl.name)
		}
		if rows > 40 {
			t.Errorf("%s: read %d rows of latch_executions, want at most 40 (3,500 ready of another kind are not its to read)", cl.name, rows)
		}
	}
}
