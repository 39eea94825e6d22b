package postgres

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/latch-run/latch/store"
)

// QueueStats and ConcurrencyKeys read the executions in flight only, from
// partial indexes that hold nothing else (latch_executions_inflight, whose
// columns answer QueueStats by an index only scan; _concurrency): their
// cost follows the executions in flight, whatever the number of finished
// ones (TestObserveScale1M). {tenant} is replaced by the tenant filter,
// empty for every tenant.
const (
	// The counts of each (tenant, queue) with an execution in flight, at
	// $1: ready (queued, or scheduled and due) and the oldest ready run_at,
	// scheduled for later, running, suspended. One statement, one snapshot.
	sqlQueueStats = `
SELECT tenant, queue,
    count(*) FILTER (WHERE status = 'queued' OR run_at <= $1 AND status = 'scheduled'),
    min(run_at) FILTER (WHERE status = 'queued' OR run_at <= $1 AND status = 'scheduled'),
    count(*) FILTER (WHERE status = 'scheduled' AND run_at > $1),
    count(*) FILTER (WHERE status = 'running'),
    count(*) FILTER (WHERE status = 'suspended')
FROM latch_executions
WHERE status IN ('scheduled', 'queued', 'running', 'suspended'){tenant}
GROUP BY tenant, queue`

	// The running executions per (tenant, concurrency key), the largest
	// limit among them.
	sqlConcurrencyKeys = `
SELECT tenant, concurrency_key, count(*), max(concurrency_limit)
FROM latch_executions
WHERE status = 'running' AND concurrency_key IS NOT NULL{tenant}
GROUP BY tenant, concurrency_key`
)

// withTenant fills sql's {tenant}: no filter for "", else tenant = $n.
func withTenant(sql, tenant string, args []any) (string, []any) {
	if tenant == "" {
		return strings.ReplaceAll(sql, "{tenant}", ""), args
	}
	args = append(args, tenant)
	return strings.ReplaceAll(sql, "{tenant}", fmt.Sprintf(" AND tenant = $%d", len(args))), args
}

// QueueStats implements store.Store: one statement.
func (s *Store) QueueStats(ctx context.Context, p *store.QueueStatsParams) ([]*store.QueueStats, error) {
	sql, args := withTenant(sqlQueueStats, p.Tenant, []any{now(p.Now)})
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: queue stats: %w", interpretError(err))
	}
	defer rows.Close()
	var out []*store.QueueStats
	for rows.Next() {
		var q store.QueueStats
		if err := rows.Scan(&q.Tenant, &q.Queue, &q.Ready, &q.OldestReadyAt, &q.Scheduled, &q.Running, &q.Suspended); err != nil {
			return nil, fmt.Errorf("postgres: queue stats: %w", interpretError(err))
		}
		q.OldestReadyAt = utcPtr(q.OldestReadyAt)
		out = append(out, &q)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: queue stats: %w", interpretError(err))
	}
	// Byte order, as every backend orders (not the database's collation).
	slices.SortFunc(out, func(a, b *store.QueueStats) int {
		return cmp.Or(strings.Compare(a.Tenant, b.Tenant), strings.Compare(a.Queue, b.Queue))
	})
	return out, nil
}

// ConcurrencyKeys implements store.Store: one statement.
func (s *Store) ConcurrencyKeys(ctx context.Context, p *store.ConcurrencyKeysParams) ([]*store.ConcurrencyKeyUse, error) {
	sql, args := withTenant(sqlConcurrencyKeys, p.Tenant, nil)
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: concurrency keys: %w", interpretError(err))
	}
	defer rows.Close()
	var out []*store.ConcurrencyKeyUse
	for rows.Next() {
		var k store.ConcurrencyKeyUse
		if err := rows.Scan(&k.Tenant, &k.Key, &k.Running, &k.Limit); err != nil {
			return nil, fmt.Errorf("postgres: concurrency keys: %w", interpretError(err))
		}
		out = append(out, &k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: concurrency keys: %w", interpretError(err))
	}
	slices.SortFunc(out, func(a, b *store.ConcurrencyKeyUse) int {
		return cmp.Or(strings.Compare(a.Tenant, b.Tenant), strings.Compare(a.Key, b.Key))
	})
	return out, nil
}
