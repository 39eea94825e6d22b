package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/latch-run/latch/store"
)

// Children (store/children.go) in SQLite. A child's row names its parent
// (parent_id, parent_step, parent_seq, on_parent_end); spawns holds one row
// per spawn step with its count of children and of those ended. Every
// write is one transaction of SQLite's one writer, so a child's end and
// its parent's suspend never interleave: whichever commits second sees the
// other.
//
// The hooks, each run in the transaction of the operation that causes it:
//
//   - ended: an execution became terminal (finish). As a parent, its live
//     children spawned with cancel are cancelled (cancelChildren); as a
//     child, its spawn counts one more ended and its parent's fan-in wait
//     may end (spawnEnded).
//   - cancelChildren: also on Cancel of a running execution.
//   - deleteFamily: a delete of an execution takes its children, and
//     theirs, but for abandoned ones still in flight, which lose their
//     parent.

const (
	// sqlLiveChildren reads a parent's children in flight spawned with
	// cancel: the entries of executions_live_children, none of the
	// parent's ended children.
	sqlLiveChildren = `SELECT id, tenant, status, cancel_requested
		FROM executions INDEXED BY executions_live_children
		WHERE parent_id = ? AND status IN ('scheduled', 'queued', 'running', 'suspended')
		AND on_parent_end = 'cancel'`
	// sqlChildren reads every child of a parent (executions_children).
	sqlChildren = `SELECT id, tenant, status, on_parent_end
		FROM executions INDEXED BY executions_children WHERE parent_id = ?`
	// sqlSpawnEnded counts one more ended child of a spawn: one row of
	// spawns, by its key.
	sqlSpawnEnded = `UPDATE spawns SET ended = ended + 1 WHERE parent_id = ? AND step = ?
		RETURNING ended, total`
)

// ended runs the hooks of execution id's end at t: its family's cascade,
// then its parent's fan-in wait. parent and step are the execution's
// parent_id and parent_step, children its count of children.
func ended(ctx context.Context, tx *sql.Tx, id string, parent, step sql.NullString, children int, t time.Time) error {
	if children > 0 {
		if err := cancelChildren(ctx, tx, id, t); err != nil {
			return err
		}
	}
	if !parent.Valid {
		return nil
	}
	return spawnEnded(ctx, tx, parent.String, step.String, t)
}

// cancelChildren cancels the children of parent spawned with cancel that
// are in flight (executions_live_children), as Cancel would: a queued,
// scheduled or suspended one becomes cancelled at t (finish, which
// cascades to its own children), a running one gets its cancel requested
// and its children are cancelled in turn. A running child whose cancel was
// requested before had its children cancelled then.
func cancelChildren(ctx context.Context, tx *sql.Tx, parent string, t time.Time) error {
	rows, err := tx.QueryContext(ctx, sqlLiveChildren, parent)
	if err != nil {
		return fmt.Errorf("sqlite: cancel children: %w", err)
	}
	type live struct {
		id, tenant, status string
		requested          bool
	}
	var list []live
	for rows.Next() {
		var c live
		if err := rows.Scan(&c.id, &c.tenant, &c.status, &c.requested); err != nil {
			rows.Close()
			return fmt.Errorf("sqlite: cancel children: %w", err)
		}
		list = append(list, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlite: cancel children: %w", err)
	}
	for _, c := range list {
		touch(ctx, c.id)
		if c.status != string(store.StatusRunning) {
			if err := finish(ctx, tx, c.id, c.tenant, store.StatusCancelled, sql.NullString{}, "", t); err != nil {
				return err
			}
			continue
		}
		if c.requested {
			continue
		}
		if err := requestCancel(ctx, tx, c.id, t); err != nil {
			return err
		}
	}
	return nil
}

// requestCancel records the cancel of running execution id and cancels its
// children: Cancel on a running execution is its parent's end for them.
func requestCancel(ctx context.Context, tx *sql.Tx, id string, t time.Time) error {
	var children int
	if err := tx.QueryRowContext(ctx, `UPDATE executions SET cancel_requested = 1 WHERE id = ? RETURNING children`,
		id).Scan(&children); err != nil {
		return fmt.Errorf("sqlite: cancel: %w", err)
	}
	if children == 0 {
		return nil
	}
	return cancelChildren(ctx, tx, id, t)
}

// spawnEnded counts one more ended child of parent's spawn step, and ends
// the parent's fan-in wait on that spawn if its condition now holds: one
// row of spawns and the parent's row, whatever the number of siblings.
func spawnEnded(ctx context.Context, tx *sql.Tx, parent, step string, t time.Time) error {
	var done, total int
	err := tx.QueryRowContext(ctx, sqlSpawnEnded, parent, step).Scan(&done, &total)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sqlite: spawn count: %w", err)
	}
	var status string
	var waiting, waitStep sql.NullString
	var count sql.NullInt64
	var attempt int
	err = tx.QueryRowContext(ctx, `SELECT status, waiting_for, wait_count, suspend_step, attempt
		FROM executions WHERE id = ?`, parent).Scan(&status, &waiting, &count, &waitStep, &attempt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sqlite: fan-in: %w", err)
	}
	if status != string(store.StatusSuspended) || !count.Valid || waiting.String != store.ChildrenWaitFor(step) ||
		!store.ChildrenWaitHolds(done, total, int(count.Int64)) {
		return nil
	}
	return endFanIn(ctx, tx, parent, waitStep.String, step, attempt, false, store.MaxJournalBytes, t)
}

// unendSpawn counts one ended child of parent's spawn step less: a failed
// child retried is in flight again.
func unendSpawn(ctx context.Context, tx *sql.Tx, parent, step string) error {
	if _, err := tx.ExecContext(ctx, `UPDATE spawns SET ended = ended - 1 WHERE parent_id = ? AND step = ?`,
		parent, step); err != nil {
		return fmt.Errorf("sqlite: spawn count: %w", err)
	}
	return nil
}

// endFanIn ends execution id's fan-in wait on spawn: the step waitStep is
// recorded (store.FanInStep of the spawn's children as they are now,
// within the room byteBound leaves in the journal) and the execution is
// queued again at t, a resume.
func endFanIn(ctx context.Context, tx *sql.Tx, id, waitStep, spawn string, attempt int, timedOut bool,
	byteBound int, t time.Time) error {
	kids, err := fanInChildren(ctx, tx, id, spawn)
	if err != nil {
		return err
	}
	have, err := journalSize(ctx, tx, id)
	if err != nil {
		return err
	}
	st := store.Step{Name: waitStep, Result: store.FanInStep(waitStep, kids, timedOut, byteBound-have),
		RecordedAt: t, Attempt: attempt}
	if _, _, err := recordStep(ctx, tx, id, &st, journalBounds{}); err != nil {
		return err
	}
	touch(ctx, id)
	return resumeAt(ctx, tx, id, t)
}

// fanInChildren reads the children of execution id's spawn step in spawn
// order, each as it is now; one that no longer exists is StatusDeleted.
func fanInChildren(ctx context.Context, tx *sql.Tx, id, spawn string) ([]store.FanInChild, error) {
	st, err := getStep(ctx, tx, id, spawn)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return nil, fmt.Errorf("sqlite: fan-in: execution %s has no step %q", id, spawn)
	}
	ids, ok := store.ParseSpawnStep(st.Result)
	if !ok {
		return nil, fmt.Errorf("sqlite: fan-in: step %q of execution %s is not a spawn", spawn, id)
	}
	out := make([]store.FanInChild, len(ids))
	for i, cid := range ids {
		c := store.FanInChild{ExecutionID: cid, Status: store.StatusDeleted}
		var status string
		var result, errMsg sql.NullString
		err := tx.QueryRowContext(ctx, `SELECT status, result, error FROM executions WHERE id = ?`, cid).
			Scan(&status, &result, &errMsg)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return nil, fmt.Errorf("sqlite: fan-in: %w", err)
		default:
			c.Status, c.Error = store.Status(status), errMsg.String
			if result.Valid {
				c.Result = []byte(result.String)
			}
		}
		out[i] = c
	}
	return out, nil
}

// deleteFamily deletes execution id with its children and theirs, and
// returns how many executions it deleted. A child spawned with abandon
// that is still in flight is kept and loses its parent (its own children
// stay its own). Every deleted execution still in flight gives its quota
// slot back; id's own slot is the caller's.
func deleteFamily(ctx context.Context, tx *sql.Tx, id string) (int, error) {
	rows, err := tx.QueryContext(ctx, sqlChildren, id)
	if err != nil {
		return 0, fmt.Errorf("sqlite: delete children: %w", err)
	}
	type kid struct{ id, tenant, status, ends string }
	var kids []kid
	for rows.Next() {
		var k kid
		var ends sql.NullString
		if err := rows.Scan(&k.id, &k.tenant, &k.status, &ends); err != nil {
			rows.Close()
			return 0, fmt.Errorf("sqlite: delete children: %w", err)
		}
		k.ends = ends.String
		kids = append(kids, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("sqlite: delete children: %w", err)
	}
	n := 0
	for _, k := range kids {
		touch(ctx, k.id)
		live := store.Status(k.status).Inflight()
		if live && store.ParentEnd(k.ends) == store.ParentEndAbandon {
			if _, err := tx.ExecContext(ctx, `UPDATE executions SET parent_id = NULL, parent_step = NULL,
				parent_seq = NULL WHERE id = ?`, k.id); err != nil {
				return 0, fmt.Errorf("sqlite: orphan child: %w", err)
			}
			continue
		}
		m, err := deleteFamily(ctx, tx, k.id)
		if err != nil {
			return 0, err
		}
		n += m
		if live {
			if _, err := tx.ExecContext(ctx, `UPDATE tenants SET inflight = inflight - 1 WHERE name = ?`, k.tenant); err != nil {
				return 0, fmt.Errorf("sqlite: delete children: %w", err)
			}
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM spawns WHERE parent_id = ?`, id); err != nil {
		return 0, fmt.Errorf("sqlite: delete spawns: %w", err)
	}
	if err := deleteExecutions(ctx, tx, []string{id}); err != nil {
		return 0, err
	}
	return n + 1, nil
}

// listChildren is List by ParentID: the parent's children in spawn order
// (executions_children), with the other filters; After is a child's id,
// the page starting after its place.
func (s *Store) listChildren(ctx context.Context, p *store.ListParams, limit int) (*store.ListResult, error) {
	query, args := listChildrenQuery(p)
	rows, err := s.read.QueryContext(ctx, query, append(args, limit+1)...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list children: %w", interpretError(err))
	}
	defer rows.Close()
	page := p.Page(limit)
	for rows.Next() {
		e, err := scanExecution(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list children: %w", interpretError(err))
		}
		if page.Add(e) {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list children: %w", interpretError(err))
	}
	return page.Result(""), nil
}

// listChildrenQuery is listChildren's statement; its last argument, not
// among args, is the limit.
func listChildrenQuery(p *store.ListParams) (string, []any) {
	query := `SELECT ` + executionColumns + ` FROM executions INDEXED BY executions_children WHERE parent_id = ?`
	args := []any{p.ParentID}
	add := func(cond string, v any) {
		query += ` AND ` + cond
		args = append(args, v)
	}
	if p.After != "" {
		// A cursor that is no longer this parent's child ends the list.
		query += ` AND parent_seq > (SELECT parent_seq FROM executions WHERE id = ? AND parent_id = ?)`
		args = append(args, p.After, p.ParentID)
	}
	for _, f := range []struct{ col, v string }{
		{"tenant", p.Tenant}, {"status", string(p.Status)}, {"kind", p.Kind}, {"queue", p.Queue},
		{"dedup_key", p.DedupKey}, {"schedule", p.Schedule},
	} {
		if f.v != "" {
			add(f.col+` = ?`, f.v)
		}
	}
	return query + ` ORDER BY parent_seq LIMIT ?`, args
}
