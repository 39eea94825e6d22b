package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/latch-run/latch/store"
)

// Retry implements store.Store: a failed execution queued again with its
// journal, taking a quota slot again (finish freed it), in one transaction.
// A child spawned with cancel whose parent has ended or has its cancel
// requested becomes cancelled instead (I13): no slot, still ended in its
// spawn.
func (s *Store) Retry(ctx context.Context, p *store.RetryParams) (*store.Execution, error) {
	t := now(p.Now)
	var e *store.Execution
	err := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		cur, err := getExecution(ctx, tx, p.Tenant, p.ID)
		if err != nil {
			return false, err
		}
		if cur.Status != store.StatusFailed {
			return false, fmt.Errorf("execution %s is %s: %w", cur.ID, cur.Status, store.ErrNotFailed)
		}
		if stillborn, err := parentEnded(ctx, tx, cur); err != nil || stillborn {
			if err == nil {
				e, err = cancelFailed(ctx, tx, cur.ID, t)
			}
			return err == nil, err
		}
		q, err := loadQuota(ctx, tx, cur.Tenant)
		if err != nil {
			return false, err
		}
		if q.inflight+1 > q.maxInflight {
			return false, fmt.Errorf("tenant %q has %d of %d in flight: %w",
				cur.Tenant, q.inflight, q.maxInflight, store.ErrQuotaExceeded)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE executions SET status = 'queued', attempt = 0, run_at = ?,
			error = NULL, result = NULL, finished_at = NULL, resume = 0, cancel_requested = 0
			WHERE id = ?`, ns(t), cur.ID); err != nil {
			return false, fmt.Errorf("sqlite: retry: %w", err)
		}
		if err := addInflight(ctx, tx, cur.Tenant, 1, 0); err != nil {
			return false, err
		}
		if cur.ParentID != "" {
			if err := unendSpawn(ctx, tx, cur.ParentID, cur.ParentStep); err != nil {
				return false, err
			}
		}
		e, err = getExecution(ctx, tx, "", cur.ID)
		return true, err
	})
	if err != nil {
		return nil, err
	}
	return s.feed.Execution(e, nil)
}

// parentEnded reports whether failed execution e is a child spawned with
// cancel whose parent has ended or has its cancel requested: its parent's
// end would have cancelled it had it been in flight.
func parentEnded(ctx context.Context, tx *sql.Tx, e *store.Execution) (bool, error) {
	if e.ParentID == "" || e.OnParentEnd == store.ParentEndAbandon {
		return false, nil
	}
	var status string
	var cancelRequested int
	err := tx.QueryRowContext(ctx, `SELECT status, cancel_requested FROM executions WHERE id = ?`, e.ParentID).
		Scan(&status, &cancelRequested)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("sqlite: retry: %w", err)
	}
	return !store.Status(status).Inflight() || cancelRequested != 0, nil
}

// cancelFailed makes failed execution id cancelled at t: its error and
// journal are kept, it takes no quota slot, and its spawn still counts it
// ended (it was ended, and stays so).
func cancelFailed(ctx context.Context, tx *sql.Tx, id string, t time.Time) (*store.Execution, error) {
	if _, err := tx.ExecContext(ctx, `UPDATE executions SET status = 'cancelled', finished_at = ?
		WHERE id = ?`, ns(t), id); err != nil {
		return nil, fmt.Errorf("sqlite: retry: %w", err)
	}
	return getExecution(ctx, tx, "", id)
}
