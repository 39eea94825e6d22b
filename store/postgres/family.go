package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/latch-run/latch/store"
)

// Families (store/children.go; doc.go, "Children"). An operation that ends
// a child touches its parent's row (the spawn's counters, a fan-in wait's
// end), and one that ends a parent touches its children's rows (the
// cascade): every such operation locks the family's rows ancestors first —
// the parent, then the execution, then its descendants level by level,
// each level in id order — and then gives back the quota units its end
// frees (once, giveBack) before any change that moves its tenant's storage
// count (execution rows, quota shards, the storage row last).
const (
	// sqlLockParent locks the parent of execution $1 of tenant $2 ('' =
	// any), if it has one, for an operation that goes on to lock $1
	// itself. parent_id is read without a lock: it only ever becomes NULL
	// (its parent deleted), and a parent deleted meanwhile is simply not
	// found.
	sqlLockParent = `SELECT id FROM latch_executions
WHERE id = (SELECT parent_id FROM latch_executions WHERE id = $1 AND ($2 = '' OR tenant = $2))
FOR NO KEY UPDATE`

	// sqlLockCascade locks the children of $1 that their parent's end
	// cancels: in flight, spawned with cancel, a cancel not yet requested.
	sqlLockCascade = `SELECT id, children, status = 'running' FROM latch_executions
WHERE parent_id = ANY($1::uuid[]) AND status IN ('scheduled', 'queued', 'running', 'suspended')
  AND on_parent_end = 'cancel' AND NOT (status = 'running' AND cancel_requested)
ORDER BY id FOR UPDATE`

	// sqlCascade cancels executions $1 (locked by sqlLockCascade) at $2:
	// a running one gets its cancel requested, any other in flight becomes
	// cancelled, its suspension ended.
	sqlCascade = `UPDATE latch_executions x SET
    status = CASE WHEN x.status = 'running' THEN 'running' ELSE 'cancelled' END,
    cancel_requested = x.cancel_requested OR x.status = 'running',
    finished_at = CASE WHEN x.status = 'running' THEN x.finished_at ELSE $2::timestamptz END,
    resume = x.resume AND x.status = 'running',
    wake_at = NULL, waiting_for = NULL, suspend_step = NULL, wait_count = NULL, wait_key = NULL, wait_since = NULL
WHERE x.id = ANY($1::uuid[])
RETURNING x.id::text, x.tenant, x.status, x.parent_id, x.parent_step`

	// sqlCountEnded adds $3[i] ended children to spawn $2[i] of parent
	// $1[i] (negative: a child retried).
	sqlCountEnded = `UPDATE latch_steps s SET ended = s.ended + u.n
FROM unnest($1::uuid[], $2::text[], $3::int[]) AS u(parent, step, n)
WHERE s.execution_id = u.parent AND s.name = u.step`

	// sqlChildEnded counts one more ended child of spawn $2 of parent $1,
	// and answers the spawn's counters and the parent's wait.
	sqlChildEnded = `SELECT c.n_ended, c.n_spawned, e.status = 'suspended' AND e.wait_count IS NOT NULL
        AND e.waiting_for = $3, coalesce(e.wait_count, 0), coalesce(e.suspend_step, '')
FROM latch_child_ended($1, $2) c, latch_executions e WHERE e.id = $1`

	// sqlLockChildren locks every child of $1, for a delete of the family.
	sqlLockChildren = `SELECT id, tenant, status, coalesce(on_parent_end, ''), children FROM latch_executions
WHERE parent_id = ANY($1::uuid[]) ORDER BY id FOR UPDATE`

	// sqlOrphan clears the parent of abandoned children $1 still in flight
	// whose parent is deleted.
	sqlOrphan = `UPDATE latch_executions SET parent_id = NULL, parent_step = NULL WHERE id = ANY($1::uuid[])`

	// sqlUnbindMemberKeys removes the dedup keys of executions $1
	// (compare-and-delete: only while a key still maps to its execution).
	sqlUnbindMemberKeys = `
DELETE FROM latch_dedup_keys d USING latch_executions x
WHERE x.id = ANY($1::uuid[]) AND x.dedup_key IS NOT NULL
  AND d.tenant = x.tenant AND d.dedup_key = x.dedup_key AND d.execution_id = x.id`

	// sqlDeleteMembers deletes executions $1 with their journals, signals
	// and runs (their dedup keys go before, by sqlUnbindMemberKeys), and
	// answers how many it deleted.
	sqlDeleteMembers = `
WITH x AS (
    DELETE FROM latch_executions WHERE id = ANY($1::uuid[]) RETURNING id
), h AS (
    SELECT latch_delete_history(ARRAY(SELECT id FROM x)) AS gone
)
SELECT count(*) FROM x, h`

	// sqlFanInChildren reads, for the fan-in wait of parent $1 on spawn
	// $2, the journal's bytes and every child of the spawn in spawn order
	// as it is now (a NULL status: deleted).
	sqlFanInChildren = `
SELECT c.child_id, x.status, x.result, coalesce(x.error, ''), latch_journal_bytes($1)
FROM latch_spawn_children($1, $2) c
LEFT JOIN latch_executions x ON x.id = c.child_id::uuid AND x.parent_id = $1
ORDER BY c.ord`

	// sqlFanInEnd ends the fan-in wait of $1 at $2: its step recorded with
	// $3 (written by the store: it counts nothing in the storage budget),
	// and the execution queued again, a resume.
	sqlFanInEnd = `
WITH ins AS (
    INSERT INTO latch_steps (execution_id, name, result, recorded_at, attempt)
    SELECT id, suspend_step, $3, $2, attempt FROM latch_executions WHERE id = $1
    ON CONFLICT (execution_id, name) DO NOTHING
)
UPDATE latch_executions SET status = 'queued', run_at = $2, resume = true, has_steps = true,
    wake_at = NULL, waiting_for = NULL, suspend_step = NULL, wait_count = NULL
WHERE id = $1`
)

// sqlLockMember locks an execution for the rest of the transaction ($1
// id, $2 tenant, ” = any) and answers it with the number of children it
// spawned: a claim, a worker or a rescuer that holds it is waited for, and
// one that comes later waits (or, claiming with SKIP LOCKED, passes it by).
var sqlLockMember = `SELECT ` + executionColumnsPlain + `, children FROM latch_executions
WHERE id = $1 AND ($2 = '' OR tenant = $2) FOR UPDATE`

// errParentFirst restarts an operation that found, with the execution
// locked, that it ends a child whose parent it has not locked: it runs
// again with the parent locked first.
var errParentFirst = errors.New("postgres: the parent's lock comes first")

// lockParent locks the parent of id, of tenant ("" = any), if any
// (sqlLockParent).
func lockParent(ctx context.Context, tx pgx.Tx, id uuid.UUID, tenant string) error {
	rows, err := tx.Query(ctx, sqlLockParent, id, tenant)
	if err != nil {
		return err
	}
	rows.Close()
	return rows.Err()
}

// lockMember locks execution id after its parent (lockParent) and returns
// it with the number of children it spawned.
func lockMember(ctx context.Context, tx pgx.Tx, id uuid.UUID, tenant, raw string) (*store.Execution, int, error) {
	if err := lockParent(ctx, tx, id, tenant); err != nil {
		return nil, 0, err
	}
	var children int
	e, err := scanExecution(wrapped{row: tx.QueryRow(ctx, sqlLockMember, id, tenant), after: []any{&children}})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, fmt.Errorf("execution %s: %w", raw, store.ErrNotFound)
	}
	return e, children, err
}

// units counts quota units to give back per tenant: a transaction gives
// them back once (giveBack), so that it never holds one shard while it
// waits for others, after its locks of execution rows and before the
// changes that move the storage count.
type units map[string]int

// cascade is a parent's end (children.go): the children its end cancels,
// and theirs in turn, locked level by level (lockCascade) before anything
// else is changed, and cancelled by apply. cancels counts those that are
// not running: they become cancelled, each giving back its quota unit (to
// the tenant of the family: children never cross tenants).
type cascade struct {
	levels  [][]uuid.UUID
	cancels int
}

// freed is the number of quota units c's apply frees (0 for none).
func (c *cascade) freed() int {
	if c == nil {
		return 0
	}
	return c.cancels
}

// lockCascade locks what the end of roots cancels. roots are locked by the
// caller.
func lockCascade(ctx context.Context, tx pgx.Tx, roots ...uuid.UUID) (*cascade, error) {
	c := &cascade{}
	for frontier := roots; len(frontier) > 0; {
		rows, err := tx.Query(ctx, sqlLockCascade, frontier)
		if err != nil {
			return nil, err
		}
		var level, next []uuid.UUID
		var id uuid.UUID
		var children int
		var running bool
		_, err = pgx.ForEachRow(rows, []any{&id, &children, &running}, func() error {
			level = append(level, id)
			if !running {
				c.cancels++
			}
			if children > 0 {
				next = append(next, id)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(level) > 0 {
			c.levels = append(c.levels, level)
		}
		frontier = next
	}
	return c, nil
}

// apply cancels what c locked at t, and their spawns count those that
// became cancelled ended (their quota units are the caller's to give back:
// freed). It returns the ids it changed.
func (c *cascade) apply(ctx context.Context, tx pgx.Tx, t time.Time) ([]string, error) {
	if c == nil || len(c.levels) == 0 {
		return nil, nil
	}
	var changed []string
	type spawn struct {
		parent uuid.UUID
		step   string
	}
	ended := map[spawn]int{}
	for _, level := range c.levels {
		rows, err := tx.Query(ctx, sqlCascade, level, t)
		if err != nil {
			return nil, err
		}
		var id, tenant, status, step string
		var parent uuid.UUID
		_, err = pgx.ForEachRow(rows, []any{&id, &tenant, &status, &parent, &step}, func() error {
			changed = append(changed, id)
			if store.Status(status) == store.StatusCancelled {
				ended[spawn{parent, step}]++
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if len(ended) > 0 {
		var parents []uuid.UUID
		var steps []string
		var ns []int
		for s, n := range ended {
			parents, steps, ns = append(parents, s.parent), append(steps, s.step), append(ns, n)
		}
		if _, err := tx.Exec(ctx, sqlCountEnded, parents, steps, ns); err != nil {
			return nil, err
		}
	}
	return changed, nil
}

// childEnded is a child's end (children.go): the child of parent spawned
// by step ended (or was deleted in flight) in this transaction, whose
// caller locked parent before the child. The spawn counts it, and if the
// parent is suspended waiting for that spawn and the wait now holds, the
// wait ends (endFanIn). resumed reports that.
func childEnded(ctx context.Context, tx pgx.Tx, parent uuid.UUID, step string, t time.Time) (resumed bool, err error) {
	var ended, spawned, count int
	var waits bool
	var suspendStep string
	err = tx.QueryRow(ctx, sqlChildEnded, parent, step, store.ChildrenWaitFor(step)).Scan(&ended, &spawned, &waits,
		&count, &suspendStep)
	if errors.Is(err, pgx.ErrNoRows) { // the parent is gone
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !waits || !store.ChildrenWaitHolds(ended, spawned, count) {
		return false, nil
	}
	return true, endFanIn(ctx, tx, parent, step, suspendStep, t, false, store.MaxJournalBytes)
}

// fanIn reads the children of spawn step of parent for its fan-in wait's
// step, and the journal's bytes.
func fanIn(ctx context.Context, tx pgx.Tx, parent uuid.UUID, step string) ([]store.FanInChild, int, error) {
	rows, err := tx.Query(ctx, sqlFanInChildren, parent, step)
	if err != nil {
		return nil, 0, err
	}
	var (
		out     []store.FanInChild
		size    int
		id, msg string
		status  *string
		result  *string
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &status, &result, &msg, &size}, func() error {
		c := store.FanInChild{ExecutionID: id, Status: store.StatusDeleted}
		if status != nil {
			c.Status, c.Error = store.Status(*status), msg
			if result != nil {
				c.Result = json.RawMessage(*result)
			}
		}
		out = append(out, c)
		return nil
	})
	return out, size, err
}

// endFanIn ends parent's fan-in wait on spawn step at t, its step
// (suspendStep) recorded
// with every child as it is now (store.FanInStep within maxBytes of
// journal), and queues it again. The caller holds parent's row.
func endFanIn(ctx context.Context, tx pgx.Tx, parent uuid.UUID, step, suspendStep string, t time.Time,
	timedOut bool, maxBytes int) error {
	children, size, err := fanIn(ctx, tx, parent, step)
	if err != nil {
		return err
	}
	result := store.FanInStep(suspendStep, children, timedOut, maxBytes-size)
	_, err = tx.Exec(ctx, sqlFanInEnd, parent, t, string(result))
	return err
}

// familyDelete is the delete of a family: the descendants of its roots
// that go with them, locked level by level, and the abandoned children in
// flight that stay, their parent cleared.
type familyDelete struct {
	gone []uuid.UUID // every descendant to delete
	live units       // those in flight by tenant: their quota units
	kept []uuid.UUID // abandoned children in flight
}

// freed is the number of quota units f's apply frees (0 for none).
func (f *familyDelete) freed() int {
	n := 0
	if f != nil {
		for _, k := range f.live {
			n += k
		}
	}
	return n
}

// lockDescendants locks the descendants of roots (locked by the caller)
// and sorts them into what goes and what stays.
func lockDescendants(ctx context.Context, tx pgx.Tx, roots ...uuid.UUID) (*familyDelete, error) {
	f := &familyDelete{live: units{}}
	for frontier := roots; len(frontier) > 0; {
		rows, err := tx.Query(ctx, sqlLockChildren, frontier)
		if err != nil {
			return nil, err
		}
		var next []uuid.UUID
		var id uuid.UUID
		var tenant, status, ends string
		var children int
		_, err = pgx.ForEachRow(rows, []any{&id, &tenant, &status, &ends, &children}, func() error {
			if store.ParentEnd(ends) == store.ParentEndAbandon && store.Status(status).Inflight() {
				f.kept = append(f.kept, id)
				return nil
			}
			f.gone = append(f.gone, id)
			if store.Status(status).Inflight() {
				f.live[tenant]++
			}
			if children > 0 {
				next = append(next, id)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		frontier = next
	}
	return f, nil
}

// deleteMembers deletes ids (locked) with what goes with them and returns
// how many it deleted.
func deleteMembers(ctx context.Context, tx pgx.Tx, ids []uuid.UUID) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	var n int
	err := tx.QueryRow(ctx, sqlDeleteMembers, ids).Scan(&n)
	return n, err
}

// ids are the executions f deletes or orphans.
func (f *familyDelete) ids() []string {
	if f == nil {
		return nil
	}
	out := make([]string, 0, len(f.gone)+len(f.kept))
	for _, id := range append(append([]uuid.UUID{}, f.gone...), f.kept...) {
		out = append(out, id.String())
	}
	return out
}

// unbindKeys removes the dedup keys of what f deletes: before the quota
// units are given back and the deletes move the storage count (doc.go,
// "Lock order").
func (f *familyDelete) unbindKeys(ctx context.Context, tx pgx.Tx) error {
	if f == nil || len(f.gone) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, sqlUnbindMemberKeys, f.gone)
	return err
}

// apply deletes f's descendants and orphans its kept children (their
// quota units are the caller's to give back: freed; their dedup keys the
// caller's to unbind before: unbindKeys).
func (f *familyDelete) apply(ctx context.Context, tx pgx.Tx) (int, error) {
	if f == nil {
		return 0, nil
	}
	if len(f.kept) > 0 {
		if _, err := tx.Exec(ctx, sqlOrphan, f.kept); err != nil {
			return 0, err
		}
	}
	return deleteMembers(ctx, tx, f.gone)
}

// finishFamily completes, in its transaction, an operation that ended e
// (ended: it became terminal, or was deleted in flight) or requested its
// cancel, with the family's rows locked and their quota units given back:
// the cascade fam is applied, and a child's end is counted by its
// parent's spawn (childEnded). It returns the ids of the other executions
// it changed.
func finishFamily(ctx context.Context, tx pgx.Tx, e *store.Execution, ended bool, fam *cascade, t time.Time) ([]string, error) {
	changed, err := fam.apply(ctx, tx, t)
	if err != nil {
		return nil, err
	}
	if ended && e.ParentID != "" {
		parent, err := uuid.Parse(e.ParentID)
		if err != nil {
			return nil, err
		}
		resumed, err := childEnded(ctx, tx, parent, e.ParentStep, t)
		if err != nil {
			return nil, err
		}
		if resumed {
			changed = append(changed, e.ParentID)
		}
	}
	return changed, nil
}
