package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/latch-run/latch/store"
)

// Retry implements store.Store: a failed execution queued again with its
// journal, taking a quota slot again (finish freed it), in one transaction.
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
