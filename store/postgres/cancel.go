package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/latch-run/latch/store"
)

// Cancel and delete statements; $1 is the execution id.
var (
	// $2 now. A suspension ends with it.
	sqlCancelWaiting = `UPDATE latch_executions SET status = 'cancelled', finished_at = $2, resume = false,
    wake_at = NULL, waiting_for = NULL, suspend_step = NULL, wait_count = NULL,
    wait_key = NULL, wait_since = NULL
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
// locked (after its parent: family.go), and cancelled at once (its quota
// unit given back) if scheduled, queued or suspended, or marked
// cancel-requested if running. Either way the children its end cancels
// are cancelled with it (the cascade, locked before anything changes), and
// a child that ended is counted by its parent's spawn. The lock makes a
// suspension end once: a Signal or Wake that comes after finds it
// cancelled.
func (s *Store) Cancel(ctx context.Context, p *store.CancelParams) (*store.Execution, error) {
	t := now(p.Now)
	id, ok := parseID(p.ID)
	if !ok {
		return nil, fmt.Errorf("execution %q: %w", p.ID, store.ErrNotFound)
	}
	var e *store.Execution
	var changed []string
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) (bool, error) {
		changed = nil
		cur, children, err := lockMember(ctx, tx, id, p.Tenant, p.ID)
		if err != nil {
			return false, err
		}
		waiting := cur.Status == store.StatusQueued || cur.Status == store.StatusScheduled ||
			cur.Status == store.StatusSuspended
		requesting := cur.Status == store.StatusRunning && !cur.CancelRequested
		if !waiting && !requesting { // terminal, or already cancel-requested
			e = cur
			return false, nil
		}
		var fam *cascade
		if children > 0 {
			if fam, err = lockCascade(ctx, tx, id); err != nil {
				return false, err
			}
		}
		freed := fam.freed()
		if waiting {
			freed++
		}
		if err := returnQuota(ctx, tx, cur.Tenant, freed); err != nil {
			return false, err
		}
		if waiting {
			e, err = scanExecution(tx.QueryRow(ctx, sqlCancelWaiting, id, t))
		} else {
			e, err = scanExecution(tx.QueryRow(ctx, sqlRequestCancel, id))
		}
		if err != nil {
			return false, err
		}
		changed, err = finishFamily(ctx, tx, e, waiting, fam, t)
		return true, err
	})
	if err != nil {
		return nil, err
	}
	s.feed.Publish(changed...)
	return s.feed.Execution(e, nil)
}

// Delete implements store.Store, as one transaction: the row, its dedup key
// (compare-and-delete) and, for an execution still in flight, its quota unit.
// A worker holding its lease finds nothing to fence on from then on. A
// parent goes with its family (family.go): its children and theirs, but for
// the abandoned children in flight, which stay without a parent. A child
// deleted in flight counts as ended for its parent's spawn. The locks come
// in the store's order (doc.go, "Lock order"): the family's rows (the
// parent, the row, its descendants), the dedup keys unbound, the quota
// units given back, and last the deletes, whose trigger moves the tenant's
// storage count.
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
	t := now(p.Now)
	var changed []string
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) (bool, error) {
		changed = nil
		cur, children, err := lockMember(ctx, tx, id, p.Tenant, p.ID)
		if err != nil {
			return false, err
		}
		if !cur.Status.Terminal() && !p.Force {
			return false, fmt.Errorf("execution %s is %s: %w", cur.ID, cur.Status, store.ErrNotTerminal)
		}
		var fam *familyDelete
		if children > 0 {
			if fam, err = lockDescendants(ctx, tx, id); err != nil {
				return false, err
			}
		}
		if cur.DedupKey != "" {
			if _, err := tx.Exec(ctx, sqlUnbindKeys, cur.Tenant, []string{cur.DedupKey}, []string{cur.ID}); err != nil {
				return false, err
			}
		}
		if err := fam.unbindKeys(ctx, tx); err != nil {
			return false, err
		}
		freed := fam.freed()
		if cur.Status.Inflight() {
			freed++
		}
		if err := returnQuota(ctx, tx, cur.Tenant, freed); err != nil {
			return false, err
		}
		if _, err := tx.Exec(ctx, sqlDeleteExecution, id); err != nil {
			return false, err
		}
		if _, err := fam.apply(ctx, tx); err != nil {
			return false, err
		}
		changed, err = finishFamily(ctx, tx, cur, cur.Status.Inflight(), nil, t)
		changed = append(changed, fam.ids()...)
		return true, err
	})
	s.feed.Publish(changed...)
	return s.feed.Deleted(p.ID, err)
}
