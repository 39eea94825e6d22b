package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/latch-run/latch/store"
)

// Rescue implements store.Store. Expired leases are read and ended in one
// transaction, and each update is fenced on the token that was read, so an
// execution completed by its worker in the meantime stays completed.
func (s *Store) Rescue(ctx context.Context, p *store.RescueParams) (*store.RescueResult, error) {
	t := now(p.Now)
	limit := store.BatchLimit(p.Limit)
	res := &store.RescueResult{}
	err := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		rows, err := tx.QueryContext(ctx, `SELECT id, lease_token FROM executions
			WHERE status = 'running' AND lease_expires_at < ? ORDER BY lease_expires_at LIMIT ?`, ns(t), limit)
		if err != nil {
			return false, fmt.Errorf("sqlite: rescue: %w", err)
		}
		type expired struct{ id, token string }
		var list []expired
		for rows.Next() {
			var x expired
			if err := rows.Scan(&x.id, &x.token); err != nil {
				rows.Close()
				return false, fmt.Errorf("sqlite: rescue: %w", err)
			}
			list = append(list, x)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return false, fmt.Errorf("sqlite: rescue: %w", err)
		}
		for _, x := range list {
			l, err := fence(ctx, tx, x.id, "", x.token, time.Time{})
			if err != nil {
				continue // changed hands since it was read
			}
			// The run expired, whatever becomes of the execution.
			if err := endRun(ctx, tx, x.id, t, store.RunExpired, ""); err != nil {
				return false, err
			}
			const lost = "lease expired: the worker stopped heartbeating"
			switch {
			case l.cancelRequested:
				err = finish(ctx, tx, x.id, l.tenant, store.StatusCancelled, sql.NullString{}, "", t)
				res.Cancelled++
			case l.attempt < l.maxAttempts:
				err = requeue(ctx, tx, x.id, lost, t, t)
				res.Requeued++
			default:
				err = finish(ctx, tx, x.id, l.tenant, store.StatusFailed, sql.NullString{}, lost, t)
				res.Failed++
			}
			if err != nil {
				return false, err
			}
		}
		return len(list) > 0, nil
	})
	if err != nil {
		return nil, err
	}
	return s.feed.Rescued(res, nil)
}

// Promote implements store.Store.
func (s *Store) Promote(ctx context.Context, p *store.PromoteParams) (*store.PromoteResult, error) {
	t := now(p.Now)
	limit := store.BatchLimit(p.Limit)
	res := &store.PromoteResult{}
	err := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		r, err := tx.ExecContext(ctx, `UPDATE executions SET status = 'queued' WHERE id IN (
			SELECT id FROM executions WHERE status = 'scheduled' AND run_at <= ? LIMIT ?)`, ns(t), limit)
		if err != nil {
			return false, fmt.Errorf("sqlite: promote: %w", err)
		}
		n, _ := r.RowsAffected()
		res.Promoted = int(n)
		return n > 0, nil
	})
	if err != nil {
		return nil, err
	}
	return s.feed.Promoted(res, nil)
}

// sqlPruneDue reads the executions due for Prune: finished more than their
// tenant's retention ago, and not a child (executions_finished_roots): a
// child goes with its parent only (deleteFamily), never alone.
const sqlPruneDue = `SELECT e.id FROM executions e JOIN tenants t ON t.name = e.tenant
	WHERE e.finished_at IS NOT NULL AND e.parent_id IS NULL AND e.finished_at < ? - t.retention
	AND e.status IN ('succeeded', 'failed', 'cancelled', 'skipped') LIMIT ?`

// Prune implements store.Store. It deletes a family together: an
// execution nobody spawned (or that lost its parent) with its children and
// theirs (deleteFamily), never a child whose parent stays.
func (s *Store) Prune(ctx context.Context, p *store.PruneParams) (*store.PruneResult, error) {
	t := now(p.Now)
	limit := store.BatchLimit(p.Limit)
	res := &store.PruneResult{}
	err := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		rows, err := tx.QueryContext(ctx, sqlPruneDue, ns(t), limit)
		if err != nil {
			return false, fmt.Errorf("sqlite: prune: %w", err)
		}
		var ids []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return false, fmt.Errorf("sqlite: prune: %w", err)
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return false, fmt.Errorf("sqlite: prune: %w", err)
		}
		for _, id := range ids {
			n, err := deleteFamily(ctx, tx, id)
			if err != nil {
				return false, err
			}
			res.Executions += n
		}
		r, err := tx.ExecContext(ctx, `DELETE FROM dedup_keys WHERE expires_at <= ?`, ns(t))
		if err != nil {
			return false, fmt.Errorf("sqlite: prune: %w", err)
		}
		n, _ := r.RowsAffected()
		res.DedupKeys = int(n)
		if _, err := tx.ExecContext(ctx, `DELETE FROM console_sessions WHERE expires_at <= ?`, ns(t)); err != nil {
			return false, fmt.Errorf("sqlite: prune sessions: %w", err)
		}
		if err := prunePresence(ctx, tx, t); err != nil {
			return false, err
		}
		if err := pruneEvents(ctx, tx, t, limit); err != nil {
			return false, err
		}
		return len(ids) > 0, nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}
