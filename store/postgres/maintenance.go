package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
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
	// each lease ends, expired, in the same statement (runs.go). The
	// executions of a family are left to rescueFamily.
	sqlRescue = `
WITH x AS (
    SELECT id FROM latch_executions
    WHERE status = 'running' AND lease_expires_at < $1 AND parent_id IS NULL AND children = 0
    ORDER BY lease_expires_at LIMIT $2
    FOR UPDATE SKIP LOCKED
), ` + sqlRescueEnd

	// The expired leases of families, up to $2, unlocked: rescueFamily
	// takes each in a transaction of its own, in the family's lock order.
	sqlRescueFamilies = `SELECT id FROM latch_executions
WHERE status = 'running' AND lease_expires_at < $1 AND (parent_id IS NOT NULL OR children > 0)
ORDER BY lease_expires_at LIMIT $2`

	// One expired lease of a family, $2, locked after its parent, if it is
	// still expired at $1 and no one holds it: its tenant, its number of
	// children and whether the rescue ends it (sqlRescueEnd's cases).
	sqlRescueLockOne = `SELECT tenant, children, cancel_requested OR attempt >= max_attempts FROM latch_executions
WHERE id = $2 AND status = 'running' AND lease_expires_at < $1
FOR UPDATE SKIP LOCKED`

	// sqlRescueOne is sqlRescue for $4 alone, locked by sqlRescueLockOne
	// ($2 unused but typed).
	sqlRescueOne = `
WITH x AS (
    SELECT id FROM latch_executions WHERE id = $4 AND $2::int > 0
), ` + sqlRescueEnd

	// The end of the leases x: $1 now, $3 the error.
	sqlRescueEnd = `u AS (
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
	// its signals and its runs (found by id on their primary keys). A
	// child goes only with its parent, and a parent with its family
	// (pruneFamilies).
	sqlPruneExecutions = `
WITH x AS (
    SELECT e.id FROM latch_executions e JOIN latch_tenants t ON t.name = e.tenant
    WHERE e.finished_at IS NOT NULL AND e.parent_id IS NULL AND e.children = 0
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

	// The parents past their retention that nobody spawned (or whose
	// parent is gone), up to $2, locked as sqlPruneExecutions locks them.
	sqlPruneFamilies = `
SELECT e.id FROM latch_executions e JOIN latch_tenants t ON t.name = e.tenant
WHERE e.finished_at IS NOT NULL AND e.parent_id IS NULL AND e.children > 0
  AND e.finished_at < $1::timestamptz - (t.retention / 1000) * interval '1 microsecond'
  AND e.status IN ('succeeded', 'failed', 'cancelled', 'skipped')
LIMIT $2 FOR UPDATE OF e SKIP LOCKED`

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
	changed, err := s.rescueFamilies(ctx, t, limit, &res)
	if err != nil {
		return nil, err
	}
	s.feed.Publish(changed...)
	return s.feed.Rescued(&res, nil)
}

// rescueFamilies ends the expired leases of families, each as a
// transaction of its own: the parent locked first, then the execution
// (passed by if someone holds it, as sqlRescue passes it), then what its
// end cancels (family.go). It adds what it did to res and returns the
// other executions it changed.
func (s *Store) rescueFamilies(ctx context.Context, t time.Time, limit int, res *store.RescueResult) ([]string, error) {
	rows, err := s.pool.Query(ctx, sqlRescueFamilies, t, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: rescue: %w", interpretError(err))
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("postgres: rescue: %w", interpretError(err))
	}
	var changed []string
	for _, id := range ids {
		var status store.Status
		var family []string
		err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) (bool, error) {
			status, family = "", nil
			if err := lockParent(ctx, tx, id, ""); err != nil {
				return false, err
			}
			var (
				tenant   string
				children int
				ends     bool
			)
			err := tx.QueryRow(ctx, sqlRescueLockOne, t, id).Scan(&tenant, &children, &ends)
			if errors.Is(err, pgx.ErrNoRows) {
				return false, nil
			}
			if err != nil {
				return false, err
			}
			var fam *cascade
			if children > 0 {
				if fam, err = lockCascade(ctx, tx, id); err != nil {
					return false, err
				}
			}
			if ends {
				if err := returnQuota(ctx, tx, tenant, 1+fam.freed()); err != nil {
					return false, err
				}
			}
			var st string
			if err := tx.QueryRow(ctx, sqlRescueOne, t, 1, leaseLost, id).Scan(&tenant, &st); err != nil {
				return false, err
			}
			status = store.Status(st)
			if status.Terminal() != ends {
				return false, fmt.Errorf("postgres: execution %s changed under its lock", id)
			}
			if !ends {
				return true, nil
			}
			e, err := getExecution(ctx, tx, "", id.String())
			if err != nil {
				return false, err
			}
			family, err = finishFamily(ctx, tx, e, true, fam, t)
			return true, err
		})
		if err != nil {
			return nil, fmt.Errorf("postgres: rescue: %w", err)
		}
		switch status {
		case store.StatusQueued:
			res.Requeued++
		case store.StatusFailed:
			res.Failed++
		case store.StatusCancelled:
			res.Cancelled++
		}
		if status != "" {
			changed = append(changed, id.String())
			changed = append(changed, family...)
		}
	}
	return changed, nil
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
		var events int64
		if err := c.QueryRow(ctx, sqlPruneEvents, t, 10*store.DefaultBatch).Scan(&events); err != nil {
			return err
		}
		_, err = c.Exec(ctx, sqlPrunePresence, t.Add(-store.PresenceKept), t.Add(-store.ActivityKept))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: prune: %w", interpretError(err))
	}
	if rest := limit - res.Executions; rest > 0 {
		err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) (bool, error) {
			n, err := pruneFamilies(ctx, tx, t, rest)
			res.Executions += n
			return n > 0, err
		})
		if err != nil {
			return nil, fmt.Errorf("postgres: prune: %w", err)
		}
	}
	if res.Executions > 0 {
		s.changes.announce()
	}
	return &res, nil
}

// pruneFamilies deletes up to limit parents past their retention, each
// with its family (family.go: what goes with a deleted parent, the
// abandoned children in flight kept without it), and returns how many
// executions it deleted. The parents are locked first (SKIP LOCKED), then
// their descendants level by level.
func pruneFamilies(ctx context.Context, tx pgx.Tx, t time.Time, limit int) (int, error) {
	rows, err := tx.Query(ctx, sqlPruneFamilies, t, limit)
	if err != nil {
		return 0, err
	}
	roots, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil || len(roots) == 0 {
		return 0, err
	}
	fam, err := lockDescendants(ctx, tx, roots...)
	if err != nil {
		return 0, err
	}
	// The roots are terminal: only descendants give quota units back,
	// after the keys are unbound and before the deletes move the storage
	// counts (doc.go, "Lock order").
	fam.gone = append(fam.gone, roots...)
	if err := fam.unbindKeys(ctx, tx); err != nil {
		return 0, err
	}
	if err := giveBack(ctx, tx, fam.live); err != nil {
		return 0, err
	}
	return fam.apply(ctx, tx)
}
