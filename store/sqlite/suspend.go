package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/latch-run/latch/store"
)

// Suspend implements store.Store, in one fenced step (afterLease). A
// suspended execution keeps its quota slot (tenants.inflight is not
// touched) and holds no concurrency-key slot: claims count running
// executions only.
func (s *Store) Suspend(ctx context.Context, p *store.SuspendParams) (*store.Execution, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	t := now(p.Now)
	id := p.ExecutionID
	ends := runEnd{outcome: store.RunSuspended}
	return s.feed.Execution(s.afterLease(ctx, id, p.Tenant, p.Token, t, ends, func(ctx context.Context, tx *sql.Tx, l *leased) error {
		if l.cancelRequested {
			return finish(ctx, tx, id, l.tenant, store.StatusCancelled, sql.NullString{}, "", t)
		}
		prev, err := getStep(ctx, tx, id, p.Step)
		if err != nil {
			return err
		}
		if prev != nil {
			return resumeAt(ctx, tx, id, t)
		}
		// The outcome, now or when the suspension ends, is a new step:
		// there must be room for it now.
		if err := stepRoom(ctx, tx, id, p.StepBound()); err != nil {
			return err
		}
		if p.Children != "" {
			return suspendFanIn(ctx, tx, id, l, p, t)
		}
		if p.Event != "" {
			return suspendEvent(ctx, tx, id, l, p, t)
		}
		var outcome json.RawMessage
		switch {
		case p.Signal == "" && !p.Until.After(t):
			outcome = json.RawMessage("null")
		case p.Signal != "":
			if outcome, err = consumeSignal(ctx, tx, id, p.Signal); err != nil {
				return err
			}
		}
		if outcome != nil {
			st := store.Step{Name: p.Step, Result: outcome, RecordedAt: t, Attempt: l.attempt}
			if _, _, err := recordStep(ctx, tx, id, &st, journalBounds{bytes: p.ByteBound()}); err != nil {
				return err
			}
			return resumeAt(ctx, tx, id, t)
		}
		// The step a Wake may record must fit now: nothing is recorded
		// while the execution is suspended.
		if err := byteRoom(ctx, tx, id, store.StepSize(p.Step, store.TimedOut), p.ByteBound()); err != nil {
			return err
		}
		var wake sql.NullInt64
		switch {
		case p.Signal == "":
			wake = sql.NullInt64{Int64: ns(p.Until), Valid: true}
		case p.Timeout > 0:
			wake = sql.NullInt64{Int64: ns(t.Add(p.Timeout)), Valid: true}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE executions SET status = 'suspended', resume = 0,
			wake_at = ?, waiting_for = ?, suspend_step = ?,
			lease_token = NULL, worker_id = NULL, lease_expires_at = NULL WHERE id = ?`,
			wake, nullString(p.Signal), p.Step, id); err != nil {
			return fmt.Errorf("sqlite: suspend: %w", err)
		}
		return nil
	}))
}

// resumeAt queues execution id again at t by its flow's own progress: a
// resume, whose claim counts no start. Whatever it held — a lease, a
// suspension — ends; the quota slot stays taken.
func resumeAt(ctx context.Context, tx *sql.Tx, id string, t time.Time) error {
	if _, err := tx.ExecContext(ctx, `UPDATE executions SET status = 'queued', run_at = ?, resume = 1,
		wake_at = NULL, waiting_for = NULL, suspend_step = NULL, wait_count = NULL,
		wait_key = NULL, wait_since = NULL, lease_token = NULL, worker_id = NULL, lease_expires_at = NULL WHERE id = ?`, ns(t), id); err != nil {
		return fmt.Errorf("sqlite: resume: %w", err)
	}
	return nil
}

// suspendFanIn is Suspend's fan-in wait (children.go), after the fence and
// the journal's room for the step: ErrInvalid unless p.Children is a spawn
// step of id with at least p.Count children; its step recorded and id
// queued again at once when the condition holds; else suspended until a
// child's end (spawnEnded) or Wake ends the wait. wait_count marks the
// wait as a fan-in's.
func suspendFanIn(ctx context.Context, tx *sql.Tx, id string, l *leased, p *store.SuspendParams, t time.Time) error {
	var total, done int
	err := tx.QueryRowContext(ctx, `SELECT total, ended FROM spawns WHERE parent_id = ? AND step = ?`,
		id, p.Children).Scan(&total, &done)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: children: execution %s has no spawn step %q", store.ErrInvalid, id, p.Children)
	}
	if err != nil {
		return fmt.Errorf("sqlite: fan-in: %w", err)
	}
	if p.Count > total {
		return fmt.Errorf("%w: count: %d is more than the %d children of spawn %q", store.ErrInvalid, p.Count, total, p.Children)
	}
	if store.ChildrenWaitHolds(done, total, p.Count) {
		return endFanIn(ctx, tx, id, p.Step, p.Children, l.attempt, false, p.ByteBound(), t)
	}
	var wake sql.NullInt64
	if p.Timeout > 0 {
		wake = sql.NullInt64{Int64: ns(t.Add(p.Timeout)), Valid: true}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE executions SET status = 'suspended', resume = 0,
		wake_at = ?, waiting_for = ?, suspend_step = ?, wait_count = ?,
		lease_token = NULL, worker_id = NULL, lease_expires_at = NULL WHERE id = ?`,
		wake, store.ChildrenWaitFor(p.Children), p.Step, p.Count, id); err != nil {
		return fmt.Errorf("sqlite: suspend: %w", err)
	}
	return nil
}
