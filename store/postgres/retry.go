package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/latch-run/latch/store"
)

// sqlRetry queues failed execution $1 again at $2, as new but for its
// journal (and its has_steps): attempts start again from 0.
var sqlRetry = `
UPDATE latch_executions SET status = 'queued', attempt = 0, error = NULL, result = NULL,
    finished_at = NULL, run_at = $2, resume = false, cancel_requested = false
WHERE id = $1 RETURNING ` + executionColumnsPlain

// sqlRetryCancel cancels failed execution $1 at $2 instead (I13: a child
// spawned with cancel whose parent $3 has ended or has its cancel
// requested), its error and journal kept; it answers nothing when $3 is
// live.
var sqlRetryCancel = `
UPDATE latch_executions x SET status = 'cancelled', finished_at = $2
FROM latch_executions p
WHERE x.id = $1 AND p.id = $3
  AND (p.status NOT IN ('scheduled', 'queued', 'running', 'suspended') OR p.cancel_requested)
RETURNING ` + columns("x")

// Retry implements store.Store, as one transaction: the execution is
// locked, after its parent (family.go: a retried child is in flight again,
// and its spawn counts it so), (a Prune that comes later passes it by, one that holds it first
// leaves nothing to retry), checked to be failed, and queued again with a
// quota unit taken as an admission takes it (takeQuota: a refusal is never
// spurious, and rolls everything back). A child spawned with cancel whose
// parent (locked) has ended or has its cancel requested becomes cancelled
// instead (sqlRetryCancel): no quota unit, still counted ended.
func (s *Store) Retry(ctx context.Context, p *store.RetryParams) (*store.Execution, error) {
	t := now(p.Now)
	id, ok := parseID(p.ID)
	if !ok {
		return nil, fmt.Errorf("execution %q: %w", p.ID, store.ErrNotFound)
	}
	var e *store.Execution
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) (bool, error) {
		cur, _, err := lockMember(ctx, tx, id, p.Tenant, p.ID)
		if err != nil {
			return false, err
		}
		if cur.Status != store.StatusFailed {
			return false, fmt.Errorf("execution %s is %s: %w", cur.ID, cur.Status, store.ErrNotFailed)
		}
		if cur.ParentID != "" && cur.OnParentEnd != store.ParentEndAbandon {
			parent, _ := parseID(cur.ParentID)
			e, err = scanExecution(tx.QueryRow(ctx, sqlRetryCancel, id, t, parent))
			if err == nil {
				return true, nil
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return false, err
			}
		}
		got, err := takeQuota(ctx, tx, cur.Tenant, 1)
		if err != nil {
			return false, err
		}
		if got < 1 {
			return false, fmt.Errorf("tenant %q: %w", cur.Tenant, store.ErrQuotaExceeded)
		}
		if e, err = scanExecution(tx.QueryRow(ctx, sqlRetry, id, t)); err != nil {
			return false, err
		}
		if e.ParentID != "" { // in flight again: its spawn no longer counts it ended
			_, err = tx.Exec(ctx, sqlCountEnded, []string{e.ParentID}, []string{e.ParentStep}, []int{-1})
		}
		return true, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: retry: %w", err)
	}
	return s.feed.Execution(e, nil)
}
