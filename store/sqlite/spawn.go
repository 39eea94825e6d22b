package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/latch-run/latch/store"
)

// Spawn implements store.Store: one fenced step that admits every child
// (as admitNew would, with its family columns and its place in spawn
// order), takes their quota slots and bytes, records the spawn step, counts
// the children on the parent (executions.children) and writes the spawn's
// counters (spawns). A refusal rolls the step back whole.
func (s *Store) Spawn(ctx context.Context, p *store.SpawnParams) (*store.SpawnResult, error) {
	if err := store.CheckStepName(p.Step); err != nil {
		return nil, err
	}
	t := now(p.Now)
	var res *store.SpawnResult
	err := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		res = nil
		l, err := fence(ctx, tx, p.ExecutionID, p.Tenant, p.Token, t)
		if err != nil {
			return false, err
		}
		prev, err := getStep(ctx, tx, p.ExecutionID, p.Step)
		if err != nil {
			return false, err
		}
		if prev != nil {
			res, err = replaySpawn(ctx, tx, p, prev)
			return false, err
		}
		// The payload's size is the API's to bound, not the store's.
		if err := p.Check(t, math.MaxInt); err != nil {
			return false, err
		}
		res, err = spawn(ctx, tx, p, l, t)
		return err == nil, err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// replaySpawn answers a repeat of a recorded step: a spawn's children as
// they are now (a deleted one StatusDeleted), nothing admitted; ErrInvalid
// for a step that is not a spawn's.
func replaySpawn(ctx context.Context, tx *sql.Tx, p *store.SpawnParams, prev *store.Step) (*store.SpawnResult, error) {
	ids, ok := store.ParseSpawnStep(prev.Result)
	if !ok {
		return nil, fmt.Errorf("%w: step: %q of execution %s is recorded, and not by a spawn", store.ErrInvalid, p.Step, p.ExecutionID)
	}
	res := &store.SpawnResult{Step: *prev, Children: make([]store.ChildRef, len(ids))}
	for i, id := range ids {
		res.Children[i] = store.ChildRef{ID: id, Status: store.StatusDeleted}
		var status string
		err := tx.QueryRowContext(ctx, `SELECT status FROM executions WHERE id = ?`, id).Scan(&status)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return nil, fmt.Errorf("sqlite: spawn: %w", err)
		default:
			res.Children[i].Status = store.Status(status)
		}
	}
	return res, nil
}

// spawn admits p's children of the running execution l, in the order of
// Store.Spawn's checks.
func spawn(ctx context.Context, tx *sql.Tx, p *store.SpawnParams, l *leased, t time.Time) (*store.SpawnResult, error) {
	n := len(p.Items)
	if n > p.ItemBound() {
		return nil, fmt.Errorf("a spawn of %d children passes the bound of %d: %w", n, p.ItemBound(), store.ErrTooManyChildren)
	}
	var spawned, depth int
	if err := tx.QueryRowContext(ctx, `SELECT children, depth FROM executions WHERE id = ?`, p.ExecutionID).
		Scan(&spawned, &depth); err != nil {
		return nil, fmt.Errorf("sqlite: spawn: %w", err)
	}
	if spawned+n > p.ChildBound() {
		return nil, fmt.Errorf("execution %s has spawned %d children; %d more pass the bound of %d: %w",
			p.ExecutionID, spawned, n, p.ChildBound(), store.ErrTooManyChildren)
	}
	if depth+1 > p.DepthBound() {
		return nil, fmt.Errorf("children of execution %s would be at depth %d, past the bound of %d: %w",
			p.ExecutionID, depth+1, p.DepthBound(), store.ErrTooManyChildren)
	}
	// A parent whose cancel was requested spawns its cancel children
	// cancelled: its Cancel would have cancelled them.
	ends := p.Ends()
	stillborn := l.cancelRequested && ends == store.ParentEndCancel
	kids := make([]*store.Execution, n)
	ids := make([]string, n)
	var bytes int64
	for i := range p.Items {
		e := store.NewExecution(newID(&p.Items[i]), l.tenant, &p.Items[i], t)
		e.ParentID, e.ParentStep, e.OnParentEnd, e.Depth = p.ExecutionID, p.Step, ends, depth+1
		if stillborn {
			e.Status, e.RunAt = store.StatusCancelled, t.UTC()
			finished := t.UTC()
			e.FinishedAt = &finished
		}
		kids[i], ids[i] = e, e.ID
		bytes += e.StoredBytes
	}
	st := store.Step{Name: p.Step, Result: store.SpawnStep(ids), RecordedAt: t, Attempt: l.attempt}
	rec, _, err := recordStep(ctx, tx, p.ExecutionID, &st, journalBounds{p.StepBound(), p.ByteBound()})
	if err != nil {
		return nil, err
	}
	q, err := loadQuota(ctx, tx, l.tenant)
	if err != nil {
		return nil, err
	}
	live := n
	if stillborn {
		live = 0
	}
	if q.inflight+live > q.maxInflight {
		return nil, fmt.Errorf("tenant %q has %d of %d in flight; the spawn needs %d more: %w",
			l.tenant, q.inflight, q.maxInflight, live, store.ErrQuotaExceeded)
	}
	stepBytes := store.StoredSize(st.Result)
	if q.stored+bytes+stepBytes > q.maxStored {
		return nil, fmt.Errorf("tenant %q stores %d of %d bytes; the spawn has %d: %w",
			l.tenant, q.stored, q.maxStored, bytes+stepBytes, store.ErrStorageExceeded)
	}
	res := &store.SpawnResult{Step: *rec, Recorded: true, Children: make([]store.ChildRef, n)}
	for i, e := range kids {
		if err := insertExecution(ctx, tx, e, spawned+i+1); err != nil {
			return nil, err
		}
		res.Children[i] = store.ChildRef{ID: e.ID, Status: e.Status}
	}
	touch(ctx, ids...)
	if err := addInflight(ctx, tx, l.tenant, live, bytes); err != nil {
		return nil, err
	}
	if err := charge(ctx, tx, p.ExecutionID, stepBytes, false); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE executions SET children = children + ? WHERE id = ?`,
		n, p.ExecutionID); err != nil {
		return nil, fmt.Errorf("sqlite: spawn: %w", err)
	}
	done := 0
	if stillborn {
		done = n
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO spawns (parent_id, step, total, ended) VALUES (?, ?, ?, ?)`,
		p.ExecutionID, p.Step, n, done); err != nil {
		return nil, fmt.Errorf("sqlite: spawn: %w", err)
	}
	return res, nil
}
