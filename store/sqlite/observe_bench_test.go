package sqlite

import (
	"context"
	"database/sql"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
)

// TestObserveMillion times the observation reads and the first page of
// List on a store of 1,000,000 executions: 990,000 terminal, 10,000 queued,
// scheduled, running or suspended, over 50 tenants and 5 queues. It seeds
// with bulk SQL and runs only with LATCH_BENCH_1M=1 (about a minute):
//
//	LATCH_BENCH_1M=1 go test -run TestObserveMillion -v ./store/sqlite/
//
// It logs the median of 5 calls of each read, and fails if QueueStats
// takes 100 ms or more, or Explain (a handful of indexed reads) 10 ms or
// more.
func TestObserveMillion(t *testing.T) {
	if os.Getenv("LATCH_BENCH_1M") != "1" {
		t.Skip("set LATCH_BENCH_1M=1 to seed 1,000,000 executions and time the observation reads")
	}
	ctx := context.Background()
	s, err := Open(ctx, testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Date(2031, time.March, 14, 12, 0, 0, 0, time.UTC)
	started := time.Now()
	if err := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		return false, seedMillion(ctx, tx, now)
	}); err != nil {
		t.Fatal(err)
	}
	// What a long-running store has: the seed checkpointed out of the
	// write-ahead log (a read through a log of a million fresh rows
	// looks up every page in the log's index first).
	if _, err := s.write.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	t.Logf("seeded 1,000,000 executions in %v", time.Since(started).Round(time.Millisecond))
	var n int
	if err := s.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM executions
		WHERE status IN ('scheduled', 'queued', 'running', 'suspended')`).Scan(&n); err != nil || n != 10000 {
		t.Fatalf("%d live executions, %v; want 10000", n, err)
	}

	median := func(what string, call func() (int, error)) time.Duration {
		t.Helper()
		var took []time.Duration
		size := 0
		for range 5 {
			t0 := time.Now()
			got, err := call()
			took = append(took, time.Since(t0))
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			size = got
		}
		slices.Sort(took)
		t.Logf("%-40s %9v  (%d rows)", what, took[2].Round(time.Microsecond), size)
		return took[2]
	}
	all := median("QueueStats, all tenants", func() (int, error) {
		r, err := s.QueueStats(ctx, &store.QueueStatsParams{Now: now})
		return len(r), err
	})
	one := median("QueueStats, one tenant", func() (int, error) {
		r, err := s.QueueStats(ctx, &store.QueueStatsParams{Tenant: "t07", Now: now})
		return len(r), err
	})
	median("ConcurrencyKeys, all tenants", func() (int, error) {
		r, err := s.ConcurrencyKeys(ctx, &store.ConcurrencyKeysParams{})
		return len(r), err
	})
	median("ConcurrencyKeys, one tenant", func() (int, error) {
		r, err := s.ConcurrencyKeys(ctx, &store.ConcurrencyKeysParams{Tenant: "t07"})
		return len(r), err
	})
	median("ListRateLimits, all tenants", func() (int, error) {
		r, err := s.ListRateLimits(ctx, &store.ListRateLimitsParams{})
		return len(r), err
	})
	median("Activity, all tenants, 2 h", func() (int, error) {
		r, err := s.Activity(ctx, &store.ActivityParams{Since: now.Add(-2 * time.Hour)})
		return len(r), err
	})
	median("Activity, one tenant, 2 h", func() (int, error) {
		r, err := s.Activity(ctx, &store.ActivityParams{Tenant: "t07", Since: now.Add(-2 * time.Hour)})
		return len(r), err
	})
	median("Presence, all", func() (int, error) {
		r, err := s.Presence(ctx, &store.PresenceParams{Since: now.Add(-time.Minute)})
		if err != nil {
			return 0, err
		}
		return len(r.Servers) + len(r.Workers), err
	})
	median("Presence, one tenant", func() (int, error) {
		r, err := s.Presence(ctx, &store.PresenceParams{Tenant: "t07", Since: now.Add(-time.Minute)})
		if err != nil {
			return 0, err
		}
		return len(r.Workers), err
	})
	for _, c := range []struct {
		what string
		p    store.ListParams
	}{
		{"List, all tenants", store.ListParams{}},
		{"List, one tenant", store.ListParams{Tenant: "t07"}},
		{"List, all tenants, queued", store.ListParams{Status: store.StatusQueued}},
		{"List, one tenant, queued", store.ListParams{Tenant: "t07", Status: store.StatusQueued}},
		{"List, all tenants, succeeded", store.ListParams{Status: store.StatusSucceeded}},
		{"List, one tenant, succeeded", store.ListParams{Tenant: "t07", Status: store.StatusSucceeded}},
		// A filter no execution matches: what one request may cost.
		{"List, all tenants, kind=nope", store.ListParams{Kind: "nope"}},
		{"List, one tenant, kind=nope", store.ListParams{Tenant: "t07", Kind: "nope"}},
	} {
		median(c.what, func() (int, error) {
			r, err := s.List(ctx, &c.p)
			if err != nil {
				return 0, err
			}
			return len(r.Items), nil
		})
	}
	for what, d := range map[string]time.Duration{"all tenants": all, "one tenant": one} {
		if d >= 100*time.Millisecond {
			t.Errorf("QueueStats of %s took %v (median of 5); want well under 100 ms", what, d)
		}
	}
	// Explain of t07's executions waiting in each way: queued (t00-t06
	// ahead in turn, no worker of its kind), scheduled later, suspended.
	for _, st := range []store.Status{store.StatusQueued, store.StatusScheduled, store.StatusSuspended} {
		var id string
		if err := s.read.QueryRowContext(ctx, `SELECT id FROM executions WHERE tenant = 't07' AND status = ?
			ORDER BY run_at DESC LIMIT 1`, st).Scan(&id); err != nil {
			t.Fatalf("a %s execution of t07: %v", st, err)
		}
		d := median("Explain, "+string(st), func() (int, error) {
			x, err := s.Explain(ctx, &store.ExplainParams{ID: id, Now: now})
			if err != nil {
				return 0, err
			}
			return len(x.Gates), nil
		})
		if d >= 10*time.Millisecond {
			t.Errorf("Explain of a %s execution took %v (median of 5); want a few indexed reads", st, d)
		}
	}
}

// seedMillion writes the tenants, 1,000,000 executions (every 100th one
// live: queued, scheduled (half of them due), running (a third of them
// with a concurrency key) or suspended, 50 of each per tenant, over the 5
// queues; the others succeeded, failed or cancelled), 4 rate limits per tenant, 20 servers
// with 10 workers each, and 2 hours of activity per tenant. Ids are
// ordered like UUIDv7s: by creation.
func seedMillion(ctx context.Context, tx *sql.Tx, now time.Time) error {
	t0 := now.Add(-24 * time.Hour).UnixNano()
	step := int64(24*time.Hour) / 1_000_000
	day := int64(24 * time.Hour)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 49)
			INSERT INTO tenants (name, max_inflight, inflight, dedup_ttl, retention, created_at)
			SELECT printf('t%02d', i), 100000, 200, ?, ?, ? FROM n`, []any{day, 7 * day, t0}},
		// i: the execution's place in creation order; live: every 100th;
		// k: a live one's number, m = k / 50: a live one's status
		// (m % 4), tenant (k % 50) and queue (m / 4 % 5) vary apart.
		{`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 999999),
			x AS (SELECT i, i % 100 = 0 AS live, i / 100 AS k, i / 5000 AS m FROM n)
			INSERT INTO executions (id, tenant, kind, queue, priority, status, concurrency_key, concurrency_limit,
				payload, result, error, attempt, max_attempts, timeout_seconds, created_at, run_at, started_at,
				finished_at, worker_id, lease_token, lease_expires_at, wake_at, suspend_step, runs)
			SELECT printf('%08x-%04x-7000-8000-%012x', i / 65536, i % 65536, i),
				printf('t%02d', CASE WHEN live THEN k % 50 ELSE i % 50 END), 'kind' || (i % 3),
				'q' || CASE WHEN live THEN m / 4 % 5 ELSE i / 7 % 5 END, 0,
				CASE WHEN NOT live THEN CASE i % 3 WHEN 0 THEN 'succeeded' WHEN 1 THEN 'failed' ELSE 'cancelled' END
					ELSE CASE m % 4 WHEN 0 THEN 'queued' WHEN 1 THEN 'scheduled' WHEN 2 THEN 'running' ELSE 'suspended' END END,
				CASE WHEN live AND m % 4 = 2 AND k % 3 = 0 THEN 'ck' || (k % 7) END,
				CASE WHEN live AND m % 4 = 2 AND k % 3 = 0 THEN 1 + k % 5 END,
				'{"n":' || i || '}',
				CASE WHEN NOT live AND i % 3 = 0 THEN '{"ok":true}' END,
				CASE WHEN NOT live AND i % 3 = 1 THEN 'boom' END,
				CASE WHEN live AND m % 4 IN (0, 1) THEN 0 ELSE 1 END, 3, 60,
				?1 + i * ?2,
				CASE WHEN live AND m % 8 = 1 THEN ?3 + 3600000000000 ELSE ?1 + i * ?2 END,
				CASE WHEN live AND m % 4 IN (0, 1) THEN NULL ELSE ?1 + i * ?2 END,
				CASE WHEN NOT live THEN ?1 + i * ?2 + 1000000000 END,
				CASE WHEN live AND m % 4 = 2 THEN 'w' || (i % 10) END,
				CASE WHEN live AND m % 4 = 2 THEN 'tok' || i END,
				CASE WHEN live AND m % 4 = 2 THEN ?3 + 60000000000 END,
				CASE WHEN live AND m % 4 = 3 THEN ?3 + 3600000000000 END,
				CASE WHEN live AND m % 4 = 3 THEN 'nap' END,
				CASE WHEN live AND m % 4 IN (0, 1) THEN 0 ELSE 1 END
			FROM x`, []any{t0, step, now.UnixNano()}},
		{`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 199)
			INSERT INTO rate_limits (tenant, rate_key, rate, per, burst, created_at, updated_at)
			SELECT printf('t%02d', i / 4), 'rk' || (i % 4), 10, 1000000000, 10, ?1, ?1 FROM n`, []any{t0}},
		{`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 19)
			INSERT INTO servers (id, host, version, started_at, last_seen_at)
			SELECT 'srv' || i, 'host' || i, 'v1', ?1, ?2 FROM n`, []any{t0, now.UnixNano()}},
		{`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 199)
			INSERT INTO workers (server_id, worker_id, tenant, last_seen_at)
			SELECT 'srv' || (i / 10), 'wk' || i, CASE WHEN i % 2 = 0 THEN '' ELSE printf('t%02d', i % 50) END, ?1 FROM n`,
			[]any{now.UnixNano()}},
		{`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 5999)
			INSERT INTO activity (tenant, minute, starts, failures)
			SELECT printf('t%02d', i % 50), ?1 - (i / 50) * 60000000000, 1 + i % 17, i % 3 FROM n`,
			[]any{store.MinuteOf(now).UnixNano()}},
	} {
		if _, err := tx.ExecContext(ctx, q.sql, q.args...); err != nil {
			return err
		}
	}
	return nil
}
