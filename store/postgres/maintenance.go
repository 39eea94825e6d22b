package postgres

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/latch-run/latch/store"
)

// Maintenance statements; $1 is now, $2 the batch limit.
const (
	// End expired leases. The candidates are locked with SKIP LOCKED, so a
	// worker finishing its execution right now is not waited for: its
	// lease is left to it, and looked at again by the next rescue. A lease
	// extended or ended since the snapshot fails the re-check on the newest
	// version and is skipped: the fence is the row itself. The run under
	// each lease ends, expired, in the same statement (runs.go).
	sqlRescue = `
WITH x AS (
    SELECT id FROM latch_executions
    WHERE status = 'running' AND lease_expires_at < $1
    ORDER BY lease_expires_at LIMIT $2
    FOR UPDATE SKIP LOCKED
), u AS (
    UPDATE latch_executions e SET
        status = CASE WHEN e.cancel_requested THEN 'cancelled'
                      WHEN e.attempt < e.max_attempts THEN 'queued' ELSE 'failed' END,
        error = CASE WHEN e.cancel_requested THEN e.error ELSE $3 END,
        run_at = CASE WHEN NOT e.cancel_requested AND e.attempt < e.max_attempts THEN $1 ELSE e.run_at END,
        finished_at = CASE WHEN e.cancel_requested OR e.attempt >= e.max_attempts THEN $1 END,
        lease_token = NULL, worker_id = NULL, lease_expires_at = NULL, resume = false
    FROM x WHERE e.id = x.id
    RETURNING e.id, e.runs, e.tenant, e.status
), re AS (
    SELECT latch_end_runs(array_agg(id), array_agg(runs), array_agg($1::timestamptz),
        array_agg('expired'::text), array_agg(NULL::text)) AS ended
    FROM u
)
SELECT tenant, status FROM u, re`

	sqlPromote = `
UPDATE latch_executions SET status = 'queued'
WHERE id IN (SELECT id FROM latch_executions WHERE status = 'scheduled' AND run_at <= $1
             LIMIT $2 FOR UPDATE SKIP LOCKED)`

	// Terminal executions past their tenant's retention go, each with the
	// dedup key that still maps to it (compare-and-delete), its journal,
	// its signals and its runs (found by id on their primary keys).
	sqlPruneExecutions = `
WITH x AS (
    SELECT e.id FROM latch_executions e JOIN latch_tenants t ON t.name = e.tenant
    WHERE e.finished_at IS NOT NULL
      AND e.finished_at < $1::timestamptz - (t.retention / 1000) * interval '1 microsecond'
      AND e.status IN ('succeeded', 'failed', 'cancelled', 'skipped')
    LIMIT $2 FOR UPDATE OF e SKIP LOCKED
), d AS (
    DELETE FROM latch_executions e USING x WHERE e.id = x.id
    RETURNING e.id, e.tenant, e.dedup_key
), k AS (
    DELETE FROM latch_dedup_keys dk USING d
    WHERE dk.tenant = d.tenant AND dk.dedup_key = d.dedup_key AND dk.execution_id = d.id
), h AS (
    SELECT latch_delete_history(ARRAY(SELECT id FROM d)) AS gone
)
SELECT count(*) FROM d, h`

	// Keys whose TTL has passed. A key re-bound meanwhile is a new row with a
	// later expiry and fails the re-check.
	sqlPruneSessions = `DELETE FROM latch_console_sessions WHERE expires_at <= $1`

	sqlPruneKeys = `
DELETE FROM latch_dedup_keys WHERE ctid IN (
    SELECT ctid FROM latch_dedup_keys WHERE expires_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`
)

// leaseLost is the error recorded on an execution whose lease expired.
const leaseLost = "lease expired: the worker stopped heartbeating"

// Rescue implements store.Store, as one transaction: the expired leases are
// ended and the quota units of those that became terminal given back.
func (s *Store) Rescue(ctx context.Context, p *store.RescueParams) (*store.RescueResult, error) {
	t := now(p.Now)
	limit := store.BatchLimit(p.Limit)
	var res store.RescueResult
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) (bool, error) {
		res = store.RescueResult{}
		rows, err := tx.Query(ctx, sqlRescue, t, limit, leaseLost)
		if err != nil {
			return false, err
		}
		ended := map[string]int{} // tenant -> executions that became terminal
		var tenant, status string
		_, err = pgx.ForEachRow(rows, []any{&tenant, &status}, func() error {
			switch store.Status(status) {
			case store.StatusQueued:
				res.Requeued++
			case store.StatusFailed:
				res.Failed++
				ended[tenant]++
			case store.StatusCancelled:
				res.Cancelled++
				ended[tenant]++
			}
			return nil
		})
		if err != nil {
			return false, err
		}
		if err := giveBack(ctx, tx, ended); err != nil {
			return false, err
		}
		return res != (store.RescueResult{}), nil
	})
	if err != nil {
		return nil, err
	}
	return s.feed.Rescued(&res, nil)
}

// giveBack returns quota units of several tenants, in tenant order (with
// returnQuota's shard order, one global lock order).
func giveBack(ctx context.Context, tx pgx.Tx, units map[string]int) error {
	tenants := make([]string, 0, len(units))
	for t := range units {
		tenants = append(tenants, t)
	}
	slices.Sort(tenants)
	for _, t := range tenants {
		if err := returnQuota(ctx, tx, t, units[t]); err != nil {
			return err
		}
	}
	return nil
}

// Promote implements store.Store: one statement.
func (s *Store) Promote(ctx context.Context, p *store.PromoteParams) (*store.PromoteResult, error) {
	t := now(p.Now)
	limit := store.BatchLimit(p.Limit)
	var tag int64
	err := s.write(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		ct, err := c.Exec(ctx, sqlPromote, t, limit)
		tag = ct.RowsAffected()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: promote: %w", interpretError(err))
	}
	if tag > 0 {
		s.changes.announce()
	}
	return s.feed.Promoted(&store.PromoteResult{Promoted: int(tag)}, nil)
}

// Prune implements store.Store: old terminal executions with their keys,
// then expired keys, expired sessions, and servers, workers and activity
// minutes past store.PresenceKept and store.ActivityKept (presence.go),
// each one statement.
func (s *Store) Prune(ctx context.Context, p *store.PruneParams) (*store.PruneResult, error) {
	t := now(p.Now)
	limit := store.BatchLimit(p.Limit)
	var res store.PruneResult
	err := s.write(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		if err := c.QueryRow(ctx, sqlPruneExecutions, t, limit).Scan(&res.Executions); err != nil {
			return err
		}
		tag, err := c.Exec(ctx, sqlPruneKeys, t, 10*store.DefaultBatch)
		res.DedupKeys = int(tag.RowsAffected())
		if err != nil {
			return err
		}
		if _, err = c.Exec(ctx, sqlPruneSessions, t); err != nil {
			return err
		}
		_, err = c.Exec(ctx, sqlPrunePresence, t.Add(-store.PresenceKept), t.Add(-store.ActivityKept))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: prune: %w", interpretError(err))
	}
	if res.Executions > 0 {
		s.changes.announce()
	}
	return &res, nil
}
