package postgres_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/postgres"
)

// TestObserveScale1M times the observation reads and List on a store of
// 1,000,000 executions: 990,000 finished and 10,000 in flight (queued,
// scheduled, running, suspended) over 50 tenants and 5 queues, seeded with
// bulk SQL. It runs only with LATCH_BENCH_1M=1 (a minute or two of seeding
// on a shared machine), and logs the median of 5 calls of each read.
//
//	LATCH_BENCH_1M=1 go test -run TestObserveScale1M -v ./store/postgres/
func TestObserveScale1M(t *testing.T) {
	if os.Getenv("LATCH_BENCH_1M") != "1" {
		t.Skip("set LATCH_BENCH_1M=1 to seed 1,000,000 executions and time the observation reads")
	}
	ctx := context.Background()
	acquireSlot(t)
	schema, _ := newSchema(t)
	s := openSchema(t, databaseURL(t), schema, 4)
	defer s.Close()
	now := time.Now().UTC().Truncate(time.Microsecond)
	const tenants, queues = 50, 5
	for i := range tenants {
		if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: fmt.Sprintf("t%02d", i), Now: now}); err != nil {
			t.Fatal(err)
		}
	}
	tbl := func(name string) string { return pgx.Identifier{schema, name}.Sanitize() }
	start := time.Now()
	// Ids are time-ordered (UUIDv7-like: 48 bits of milliseconds first), as
	// the store makes them: created over the last 10 days, one row every
	// ~0.86 s; one row in 100 is in flight, spread over the whole range, each
	// (tenant, queue) with some of every status in flight.
	seed := `INSERT INTO ` + tbl("latch_executions") + ` (id, tenant, kind, queue, priority, status,
    payload, result, attempt, max_attempts, timeout_seconds, created_at, run_at, started_at, finished_at,
    worker_id, lease_token, lease_expires_at, concurrency_key, concurrency_limit, wake_at, dedup_hits)
SELECT (lpad(to_hex((extract(epoch FROM c) * 1000)::bigint), 12, '0') || '7' || substr(h, 1, 3) || '8'
        || substr(h, 4, 15))::uuid,
    't' || lpad((i / 100 % 50)::text, 2, '0'), 'echo', 'q' || (i / 5000 % 5), 0, st,
    '{"n":' || i || '}', CASE WHEN st = 'succeeded' THEN '{"ok":true}' END,
    CASE WHEN st IN ('queued', 'scheduled') THEN 0 ELSE 1 END, 3, 60, c,
    CASE WHEN st = 'scheduled' THEN $1::timestamptz + (i % 7 - 3) * interval '1 hour' ELSE c END,
    CASE WHEN st NOT IN ('queued', 'scheduled') THEN c END,
    CASE WHEN st IN ('succeeded', 'failed', 'cancelled') THEN c + interval '1 second' END,
    CASE WHEN st = 'running' THEN 'w' || (i % 64) END,
    CASE WHEN st = 'running' THEN gen_random_uuid() END,
    CASE WHEN st = 'running' THEN $1::timestamptz + interval '1 minute' END,
    CASE WHEN st = 'running' AND i % 3 = 0 THEN 'ck' || (i % 40) END,
    CASE WHEN st = 'running' AND i % 3 = 0 THEN 100 END,
    CASE WHEN st = 'suspended' THEN $1::timestamptz + interval '1 hour' END, 0
FROM (
    SELECT i, md5(i::text) AS h, $1::timestamptz - interval '10 days' + i * interval '864 milliseconds' AS c,
        CASE WHEN i % 100 = 0 THEN (ARRAY['queued', 'scheduled', 'running', 'suspended'])[1 + i / 25000 % 4]
             WHEN i % 100 = 1 THEN 'failed' WHEN i % 100 = 2 THEN 'cancelled' ELSE 'succeeded' END AS st
    FROM generate_series(1, 1000000) AS i
) g`
	if _, err := admin.pool.Exec(ctx, seed, now); err != nil {
		t.Fatal(err)
	}
	// Rate limits, server reports and activity of a busy deployment.
	if _, err := admin.pool.Exec(ctx, `INSERT INTO `+tbl("latch_rate_limits")+` (tenant, rate_key, rate, per, burst, created_at, updated_at)
		SELECT 't' || lpad((i % 50)::text, 2, '0'), 'r' || i, 10, 1000000000, 1, $1, $1 FROM generate_series(1, 200) AS i`, now); err != nil {
		t.Fatal(err)
	}
	for sv := range 10 {
		r := &store.ServerReport{ID: fmt.Sprintf("server-%d", sv), Host: "host", Version: "v", StartedAt: now.Add(-time.Hour), Now: now}
		for w := range 20 {
			r.Workers = append(r.Workers, store.WorkerSeen{ID: fmt.Sprintf("w%d", w), Tenant: fmt.Sprintf("t%02d", (sv*20+w)%tenants), LastSeenAt: now})
		}
		for m := range 120 {
			for tn := range tenants {
				if (m+tn+sv)%10 == 0 {
					r.Activity = append(r.Activity, store.ActivityCount{Tenant: fmt.Sprintf("t%02d", tn),
						Minute: store.MinuteOf(now.Add(-time.Duration(m) * time.Minute)), Starts: 3, Failures: 1})
				}
			}
		}
		if err := s.ReportServer(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.pool.Exec(ctx, `VACUUM ANALYZE `+tbl("latch_executions")); err != nil {
		t.Fatal(err)
	}
	t.Logf("seeded 1,000,000 executions in %s", time.Since(start).Round(time.Second))
	var inflight int
	if err := admin.pool.QueryRow(ctx, `SELECT count(*) FROM `+tbl("latch_executions")+
		` WHERE status IN ('queued', 'scheduled', 'running', 'suspended')`).Scan(&inflight); err != nil || inflight != 10000 {
		t.Fatalf("%d executions in flight (%v), want 10000", inflight, err)
	}

	for _, q := range []struct{ name, sql string }{
		{"QueueStats all tenants", postgres.ObservePlanQueries()["QueueStats tenant="].SQL},
		{"List first page", postgres.ListPlanQuery()},
	} {
		plan := explainAnalyze(t, schema, q.sql, now)
		t.Logf("%s:\n%s", q.name, strings.Join(plan, "\n"))
	}
	median := func(name string, fn func() (int, error)) {
		t.Helper()
		var ds []time.Duration
		n := 0
		for range 5 {
			t0 := time.Now()
			got, err := fn()
			ds = append(ds, time.Since(t0))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			n = got
		}
		slices.Sort(ds)
		t.Logf("%-44s median %8.2f ms  (min %.2f, max %.2f; %d items)", name,
			ms(ds[2]), ms(ds[0]), ms(ds[4]), n)
	}
	median("QueueStats all tenants", func() (int, error) {
		r, err := s.QueueStats(ctx, &store.QueueStatsParams{Now: now})
		total := 0
		for _, q := range r {
			total += q.Ready + q.Scheduled + q.Running + q.Suspended
		}
		if err == nil && (len(r) != tenants*queues || total != 10000) {
			err = fmt.Errorf("%d queues, %d executions; want %d and 10000", len(r), total, tenants*queues)
		}
		return len(r), err
	})
	median("QueueStats one tenant", func() (int, error) {
		r, err := s.QueueStats(ctx, &store.QueueStatsParams{Tenant: "t07", Now: now})
		return len(r), err
	})
	median("ConcurrencyKeys all tenants", func() (int, error) {
		r, err := s.ConcurrencyKeys(ctx, &store.ConcurrencyKeysParams{})
		return len(r), err
	})
	median("ConcurrencyKeys one tenant", func() (int, error) {
		r, err := s.ConcurrencyKeys(ctx, &store.ConcurrencyKeysParams{Tenant: "t07"})
		return len(r), err
	})
	median("ListRateLimits all tenants", func() (int, error) {
		r, err := s.ListRateLimits(ctx, &store.ListRateLimitsParams{})
		return len(r), err
	})
	median("Activity all tenants, 2h", func() (int, error) {
		r, err := s.Activity(ctx, &store.ActivityParams{Since: now.Add(-2 * time.Hour)})
		return len(r), err
	})
	median("Activity one tenant, 2h", func() (int, error) {
		r, err := s.Activity(ctx, &store.ActivityParams{Tenant: "t07", Since: now.Add(-2 * time.Hour)})
		return len(r), err
	})
	median("Presence all", func() (int, error) {
		r, err := s.Presence(ctx, &store.PresenceParams{Since: now.Add(-time.Minute)})
		if err != nil {
			return 0, err
		}
		return len(r.Servers) + len(r.Workers), nil
	})
	median("Presence one tenant", func() (int, error) {
		r, err := s.Presence(ctx, &store.PresenceParams{Tenant: "t07", Since: now.Add(-time.Minute)})
		if err != nil {
			return 0, err
		}
		return len(r.Workers), nil
	})
	// Explain of t07's executions waiting in each way: queued (the tenants
	// before it in turn ahead), scheduled, suspended.
	for _, st := range []store.Status{store.StatusQueued, store.StatusScheduled, store.StatusSuspended} {
		var id string
		if err := admin.pool.QueryRow(ctx, `SELECT id::text FROM `+tbl("latch_executions")+
			` WHERE tenant = 't07' AND status = $1 LIMIT 1`, string(st)).Scan(&id); err != nil {
			t.Fatalf("a %s execution of t07: %v", st, err)
		}
		median("Explain "+string(st), func() (int, error) {
			x, err := s.Explain(ctx, &store.ExplainParams{ID: id, Now: now})
			if err != nil {
				return 0, err
			}
			return len(x.Gates), nil
		})
	}
	for _, c := range []struct {
		tenant string
		status store.Status
	}{{"", ""}, {"t07", ""}, {"", store.StatusQueued}, {"t07", store.StatusQueued}, {"", store.StatusSucceeded}, {"t07", store.StatusRunning}} {
		name := fmt.Sprintf("List first page tenant=%q status=%q", c.tenant, c.status)
		median(name, func() (int, error) {
			r, err := s.List(ctx, &store.ListParams{Tenant: c.tenant, Status: c.status})
			if err != nil {
				return 0, err
			}
			return len(r.Items), nil
		})
	}
	// List's window of t07 and the page in it (a kind no execution has),
	// as the store plans them (generic plans).
	window, page := postgres.ListPlanQueriesOf("t07")
	t.Logf("List window tenant=\"t07\":\n%s", strings.Join(explainGeneric(t, schema, window, true), "\n"))
	var oldest string
	if err := admin.pool.QueryRow(ctx, `SELECT min(id::text COLLATE "C") FROM (SELECT id FROM `+tbl("latch_executions")+
		` WHERE tenant = 't07' ORDER BY id DESC LIMIT 10000) w`).Scan(&oldest); err != nil {
		t.Fatal(err)
	}
	t.Logf("List page in that window, kind=nope:\n%s", strings.Join(explainGeneric(t, schema, page(oldest), true), "\n"))
	// A filter no execution matches: what one request may cost.
	for _, tenant := range []string{"", "t07"} {
		median(fmt.Sprintf("List first page tenant=%q kind=nope", tenant), func() (int, error) {
			r, err := s.List(ctx, &store.ListParams{Tenant: tenant, Kind: "nope"})
			if err != nil {
				return 0, err
			}
			return len(r.Items), nil
		})
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// explainAnalyze runs sql (its $1: now) on schema as the store's
// connections would, and returns its EXPLAIN (ANALYZE, BUFFERS).
func explainAnalyze(t *testing.T, schema, sql string, now time.Time) []string {
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
	var args []any
	if strings.Contains(sql, "$1") {
		args = append(args, now)
	}
	rows, err := tx.Query(ctx, `EXPLAIN (ANALYZE, BUFFERS) `+sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return plan
}
