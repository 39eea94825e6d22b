package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/latch-run/latch/store"
)

// Cancel and delete statements; $1 is the execution id.
var (
	// Lock the execution for the rest of the transaction: a claim, a worker
	// or a rescuer that holds it is waited for, and one that comes later
	// waits (or, claiming with SKIP LOCKED, passes it by).
	sqlLockExecution = `SELECT ` + executionColumnsPlain + ` FROM latch_executions
WHERE id = $1 AND ($2 = '' OR tenant = $2) FOR UPDATE`

	// $2 now. A suspension ends with it.
	sqlCancelWaiting = `UPDATE latch_executions SET status = 'cancelled', finished_at = $2, resume = false,
    wake_at = NULL, waiting_for = NULL, suspend_step = NULL
WHERE id = $1 RETURNING ` + executionColumnsPlain

	sqlRequestCancel = `UPDATE latch_executions SET cancel_requested = true
WHERE id = $1 RETURNING ` + executionColumnsPlain

	// The execution with its journal, signals and runs (its dedup key goes
	// before, by sqlUnbindKeys).
	sqlDeleteExecution = `
WITH x AS (DELETE FROM latch_executions WHERE id = $1)
SELECT latch_delete_history(ARRAY[$1::uuid])`
)

// Cancel implements store.Store, as one transaction: the execution is
// locked, and cancelled at once (its quota unit given back) if scheduled,
// queued or suspended, or marked cancel-requested if running. The lock
// makes a suspension end once: a Signal or Wake that comes after finds it
// cancelled.
func (s *Store) Cancel(ctx context.Context, p *store.CancelParams) (*store.Execution, error) {
	t := now(p.Now)
	id, ok := parseID(p.ID)
	if !ok {
		return nil, fmt.Errorf("execution %q: %w", p.ID, store.ErrNotFound)
	}
	var e *store.Execution
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) (bool, error) {
		cur, err := lockExecution(ctx, tx, id, p.Tenant, p.ID)
		if err != nil {
			return false, err
		}
		switch {
		case cur.Status == store.StatusQueued || cur.Status == store.StatusScheduled ||
			cur.Status == store.StatusSuspended:
			if e, err = scanExecution(tx.QueryRow(ctx, sqlCancelWaiting, id, t)); err != nil {
				return false, err
			}
			return true, returnQuota(ctx, tx, cur.Tenant, 1)
		case cur.Status == store.StatusRunning && !cur.CancelRequested:
			e, err = scanExecution(tx.QueryRow(ctx, sqlRequestCancel, id))
			return true, err
		default: // terminal, or already cancel-requested
			e = cur
			return false, nil
		}
	})
	if err != nil {
		return nil, err
	}
	return s.feed.Execution(e, nil)
}

// Delete implements store.Store, as one transaction: the row, its dedup key
// (compare-and-delete) and, for an execution still in flight, its quota unit.
// A worker holding its lease finds nothing to fence on from then on. The
// locks come in the store's order (doc.go, "Lock order"): the row, its key,
// the quota unit given back, and last the delete, whose trigger moves the
// tenant's storage count.
//
// Without Force, an execution that is not terminal is refused on an
// unlocked read, before any lock: a terminal execution never becomes
// non-terminal again, so the refusal is right at that read, and a refused
// Delete never holds a ready row that claims (SKIP LOCKED) would then pass
// by. The row is locked only to be deleted.
func (s *Store) Delete(ctx context.Context, p *store.DeleteParams) error {
	id, ok := parseID(p.ID)
	if !ok {
		return fmt.Errorf("execution %q: %w", p.ID, store.ErrNotFound)
	}
	if !p.Force {
		cur, err := getExecution(ctx, s.pool, p.Tenant, p.ID)
		if err != nil {
			return err
		}
		if !cur.Status.Terminal() {
			return fmt.Errorf("execution %s is %s: %w", cur.ID, cur.Status, store.ErrNotTerminal)
		}
	}
	return s.feed.Deleted(p.ID, s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) (bool, error) {
		cur, err := lockExecution(ctx, tx, id, p.Tenant, p.ID)
		if err != nil {
			return false, err
		}
		if !cur.Status.Terminal() && !p.Force {
			return false, fmt.Errorf("execution %s is %s: %w", cur.ID, cur.Status, store.ErrNotTerminal)
		}
		if cur.DedupKey != "" {
			if _, err := tx.Exec(ctx, sqlUnbindKeys, cur.Tenant, []string{cur.DedupKey}, []string{cur.ID}); err != nil {
				return false, err
			}
		}
		if cur.Status.Inflight() {
			if err := returnQuota(ctx, tx, cur.Tenant, 1); err != nil {
				return false, err
			}
		}
		_, err = tx.Exec(ctx, sqlDeleteExecution, id)
		return true, err
	}))
}

func lockExecution(ctx context.Context, tx pgx.Tx, id any, tenant, raw string) (*store.Execution, error) {
	e, err := scanExecution(tx.QueryRow(ctx, sqlLockExecution, id, tenant))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("execution %s: %w", raw, store.ErrNotFound)
	}
	return e, err
}
