package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/latch-run/latch/store"
)

// liveIndexes are the partial indexes that hold the executions in flight,
// each with the condition that makes it usable: between them every
// scheduled, queued, running and suspended execution, once.
// cols is what QueueStats reads of each entry: all of it from the index
// (migration 0007 made each covering), the status and run time of a
// running or suspended one being of no use.
var liveIndexes = []struct{ name, cond, cols string }{
	{"executions_ready_tenant", "status IN ('queued', 'scheduled')", "tenant, queue, status, run_at"},
	{"executions_leases", "status = 'running'", "tenant, queue, 'running', NULL"},
	{"executions_suspended", "status = 'suspended'", "tenant, queue, 'suspended', NULL"},
}

// queueStatsQuery counts the executions that are not terminal by tenant and
// queue. It reads them from liveIndexes only (their entries, no row), so its
// cost follows the number of executions in flight, not the table's
// history. Its first argument is the time of the read.
func queueStatsQuery(p *store.QueueStatsParams) (string, []any) {
	args := []any{ns(now(p.Now))}
	parts := make([]string, len(liveIndexes))
	for i, ix := range liveIndexes {
		parts[i] = `SELECT ` + ix.cols + ` FROM executions INDEXED BY ` + ix.name + ` WHERE ` + ix.cond
		if p.Tenant != "" {
			parts[i] += ` AND tenant = ?2`
		}
	}
	if p.Tenant != "" {
		args = append(args, p.Tenant)
	}
	query := `SELECT tenant, queue,
		COALESCE(SUM(status = 'queued' OR (status = 'scheduled' AND run_at <= ?1)), 0),
		MIN(CASE WHEN status = 'queued' OR (status = 'scheduled' AND run_at <= ?1) THEN run_at END),
		COALESCE(SUM(status = 'scheduled' AND run_at > ?1), 0),
		COALESCE(SUM(status = 'running'), 0),
		COALESCE(SUM(status = 'suspended'), 0)
		FROM (SELECT tenant, queue, status, run_at FROM (` + strings.Join(parts, ` UNION ALL `) + `))
		GROUP BY tenant, queue ORDER BY tenant, queue`
	return query, args
}

// QueueStats implements store.Store.
func (s *Store) QueueStats(ctx context.Context, p *store.QueueStatsParams) ([]*store.QueueStats, error) {
	query, args := queueStatsQuery(p)
	rows, err := s.read.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: queue stats: %w", interpretError(err))
	}
	defer rows.Close()
	var out []*store.QueueStats
	for rows.Next() {
		var q store.QueueStats
		var oldest sql.NullInt64
		if err := rows.Scan(&q.Tenant, &q.Queue, &q.Ready, &oldest, &q.Scheduled, &q.Running, &q.Suspended); err != nil {
			return nil, fmt.Errorf("sqlite: queue stats: %w", interpretError(err))
		}
		q.OldestReadyAt = nullTime(oldest)
		out = append(out, &q)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: queue stats: %w", interpretError(err))
	}
	return out, nil
}

// concurrencyKeysQuery groups the running executions with a concurrency
// key by tenant and key: it reads executions_concurrency, which holds those
// rows only.
func concurrencyKeysQuery(p *store.ConcurrencyKeysParams) (string, []any) {
	query := `SELECT tenant, concurrency_key, COUNT(*), MAX(concurrency_limit)
		FROM executions INDEXED BY executions_concurrency
		WHERE status = 'running' AND concurrency_key IS NOT NULL`
	var args []any
	if p.Tenant != "" {
		query += ` AND tenant = ?`
		args = append(args, p.Tenant)
	}
	return query + ` GROUP BY tenant, concurrency_key ORDER BY tenant, concurrency_key`, args
}

// ConcurrencyKeys implements store.Store.
func (s *Store) ConcurrencyKeys(ctx context.Context, p *store.ConcurrencyKeysParams) ([]*store.ConcurrencyKeyUse, error) {
	query, args := concurrencyKeysQuery(p)
	rows, err := s.read.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: concurrency keys: %w", interpretError(err))
	}
	defer rows.Close()
	var out []*store.ConcurrencyKeyUse
	for rows.Next() {
		var u store.ConcurrencyKeyUse
		if err := rows.Scan(&u.Tenant, &u.Key, &u.Running, &u.Limit); err != nil {
			return nil, fmt.Errorf("sqlite: concurrency keys: %w", interpretError(err))
		}
		out = append(out, &u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: concurrency keys: %w", interpretError(err))
	}
	return out, nil
}
