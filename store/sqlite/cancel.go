package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/latch-run/latch/store"
)

// Cancel implements store.Store. Cancel of a running execution is a durable
// flag on its row, not a message: the worker reads it from every heartbeat,
// and Fail, Release or Rescue turn it into the cancelled status. Either way
// it is its parent's end for the execution's children (children.go), in
// the same step.
func (s *Store) Cancel(ctx context.Context, p *store.CancelParams) (*store.Execution, error) {
	t := now(p.Now)
	var e *store.Execution
	err := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		cur, err := getExecution(ctx, tx, p.Tenant, p.ID)
		if err != nil {
			return false, err
		}
		switch cur.Status {
		case store.StatusQueued, store.StatusScheduled, store.StatusSuspended:
			if err := finish(ctx, tx, cur.ID, cur.Tenant, store.StatusCancelled, sql.NullString{}, "", t); err != nil {
				return false, err
			}
		case store.StatusRunning:
			if cur.CancelRequested {
				e = cur
				return false, nil
			}
			if err := requestCancel(ctx, tx, cur.ID, t); err != nil {
				return false, err
			}
		default:
			e = cur
			return false, nil
		}
		e, err = getExecution(ctx, tx, "", cur.ID)
		return true, err
	})
	if err != nil {
		return nil, err
	}
	return s.feed.Execution(e, nil)
}

// Delete implements store.Store. The row, its dedup key (compare-and-delete:
// only a key that still names this execution), its journal, signals and
// history and, for an execution still in flight, its quota slot all go in
// one transaction, with its children and theirs (deleteFamily).
func (s *Store) Delete(ctx context.Context, p *store.DeleteParams) error {
	return s.feed.Deleted(p.ID, s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		cur, err := getExecution(ctx, tx, p.Tenant, p.ID)
		if err != nil {
			return false, err
		}
		if !cur.Status.Terminal() && !p.Force {
			return false, fmt.Errorf("execution %s is %s: %w", cur.ID, cur.Status, store.ErrNotTerminal)
		}
		if _, err := deleteFamily(ctx, tx, cur.ID); err != nil {
			return false, err
		}
		if cur.Status.Inflight() {
			if _, err := tx.ExecContext(ctx, `UPDATE tenants SET inflight = inflight - 1 WHERE name = ?`, cur.Tenant); err != nil {
				return false, fmt.Errorf("sqlite: delete: %w", err)
			}
			// A child deleted in flight ends for its parent's fan-in wait,
			// which then lists it deleted.
			if cur.ParentID != "" {
				if err := spawnEnded(ctx, tx, cur.ParentID, cur.ParentStep, now(p.Now)); err != nil {
					return false, err
				}
			}
		}
		return true, nil
	}))
}

// deleteExecutions removes executions, the dedup keys that still map to
// them, their journals, signals and histories, and gives their bytes back
// to their tenants' storage counts. It does not touch quota.
func deleteExecutions(ctx context.Context, tx *sql.Tx, ids []string) error {
	for _, id := range ids {
		if err := release(ctx, tx, id); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM dedup_keys WHERE execution_id = ?`, id); err != nil {
			return fmt.Errorf("sqlite: delete dedup key: %w", err)
		}
		if err := deleteFlow(ctx, tx, `execution_id = ?`, id); err != nil {
			return err
		}
		if err := deleteRuns(ctx, tx, `execution_id = ?`, id); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM executions WHERE id = ?`, id); err != nil {
			return fmt.Errorf("sqlite: delete execution: %w", err)
		}
	}
	return nil
}
