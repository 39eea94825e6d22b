package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latch-run/latch/store"
)

// Suspend statements. Suspend, Signal and Wake each lock the execution row
// before they decide (Wake with SKIP LOCKED): a suspension ends once, by
// whichever comes first, and the one after finds it ended; a buffered
// signal is consumed under the same lock, by one wait only. Every read that
// decides comes in a statement after the lock, so that its snapshot shows
// what the lock's previous holder committed.
const (
	// The fence (sqlFence's conditions), locking the row. $1 id, $2 token,
	// $3 tenant, $4 now. runs names the run under the lease, which the
	// statement that follows ends (runs.go); whether it has a parent and
	// how many children it spawned say whether a cancel is a family's
	// (family.go).
	sqlSuspendLock = `SELECT tenant, cancel_requested, runs, parent_id IS NOT NULL, children FROM latch_executions
WHERE id = $1 AND status = 'running' AND lease_token = $2 AND ($3 = '' OR tenant = $3)
  AND lease_expires_at >= $4
FOR UPDATE`

	// Whether step $2 is recorded, the journal's steps and bytes, and the
	// oldest buffered signal named $3 ('' for a sleep: no signal has that
	// name).
	// A fan-in wait's spawn $2: its counters (no row: not a spawn step).
	sqlSuspendSpawn = `SELECT spawned, ended FROM latch_steps
WHERE execution_id = $1 AND name = $2 AND spawned IS NOT NULL`

	sqlSuspendProbe = `
SELECT EXISTS (SELECT 1 FROM latch_steps WHERE execution_id = $1 AND name = $2),
    (SELECT count(*) FROM latch_steps WHERE execution_id = $1), ` + sqlJournalBytes + `, b.seq, b.data
FROM (SELECT 1) one LEFT JOIN LATERAL (
    SELECT seq, data FROM latch_signals WHERE execution_id = $1 AND name = $3 AND NOT consumed
    ORDER BY seq LIMIT 1) b ON true`
)

var (
	// The lease ends and so does the run ($7, suspended): queued again at
	// once, a resume ($2 now). With $3 the step $4 is recorded with result
	// $5; the buffered signal $6 (NULL: none) is consumed, its row kept
	// only for its idempotency key.
	sqlSuspendQueue = `
WITH ` + endRunSQL(7, 2, store.RunSuspended) + `, del AS (
    DELETE FROM latch_signals WHERE execution_id = $1 AND seq = $6 AND idempotency_key IS NULL
), con AS (
    UPDATE latch_signals SET consumed = true
    WHERE execution_id = $1 AND seq = $6 AND idempotency_key IS NOT NULL
), ins AS (
    INSERT INTO latch_steps (execution_id, name, result, recorded_at, attempt)
    SELECT id, $4, $5, $2, attempt FROM latch_executions WHERE id = $1 AND $3
    ON CONFLICT (execution_id, name) DO NOTHING
)
UPDATE latch_executions SET status = 'queued', run_at = $2, resume = true, has_steps = has_steps OR $3,
    lease_token = NULL, worker_id = NULL, lease_expires_at = NULL
WHERE id = $1 AND ` + sqlEndRunRead + ` RETURNING ` + executionColumnsPlain

	// Suspended: $2 wake_at, $3 waiting_for, $4 the step, $7 a fan-in
	// wait's count (NULL for any other), $8 and $9 a wait for an event's
	// key and since (NULL for any other; since is the execution's
	// created_at when $9 is NULL and $10); the run $6 ends at $5,
	// suspended.
	sqlSuspendWait = `
WITH ` + endRunSQL(6, 5, store.RunSuspended) + `
UPDATE latch_executions SET status = 'suspended', wake_at = $2, waiting_for = $3, suspend_step = $4,
    wait_count = $7, wait_key = $8, wait_since = CASE WHEN $10 THEN coalesce($9, created_at) END, resume = false, lease_token = NULL, worker_id = NULL, lease_expires_at = NULL
WHERE id = $1 AND ` + sqlEndRunRead + ` RETURNING ` + executionColumnsPlain

	// A cancel requested: cancelled, as Complete would end it ($2 now),
	// and so is the run $3.
	sqlSuspendCancelled = `
WITH ` + endRunSQL(3, 2, store.RunCancelled) + `
UPDATE latch_executions SET status = 'cancelled', finished_at = $2, resume = false,
    lease_token = NULL, worker_id = NULL, lease_expires_at = NULL
WHERE id = $1 AND ` + sqlEndRunRead + ` RETURNING ` + executionColumnsPlain
)

// Suspend implements store.Store, as one transaction: the fence locks the
// row, then the step and the buffered signals (a fan-in wait: its spawn's
// counters; a wait for an event: the oldest match, under the event name's
// lock, events.go) are read and the execution is cancelled, queued again (a
// resume) or suspended; a cancelled one gives its quota unit back, the
// others keep it. A cancelled child locks its parent first (family.go):
// when the fence finds one it did not lock, it runs again with it.
func (s *Store) Suspend(ctx context.Context, p *store.SuspendParams) (*store.Execution, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	t := now(p.Now)
	f, err := newFence(p.ExecutionID, p.Token, p.Tenant, t)
	if err != nil {
		return nil, err
	}
	var e *store.Execution
	var changed []string
	parentFirst := false
	for {
		err = s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) (bool, error) {
			var err error
			changed = nil
			e, err = suspendInTx(ctx, tx, f, p, t, parentFirst, &changed)
			return e != nil, err
		})
		if errors.Is(err, errParentFirst) && !parentFirst {
			parentFirst = true
			continue
		}
		break
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: suspend: %w", err)
	}
	s.feed.Publish(changed...)
	return s.feed.Execution(e, nil)
}

// suspendInTx is Suspend's transaction; changed gets the other executions
// a cancel changed.
func suspendInTx(ctx context.Context, tx pgx.Tx, f fence, p *store.SuspendParams, t time.Time, parentFirst bool,
	changed *[]string) (*store.Execution, error) {
	if parentFirst {
		if err := lockParent(ctx, tx, f.id, f.tenant); err != nil {
			return nil, err
		}
	}
	var (
		tenant    string
		cancel    bool
		run       int
		hasParent bool
		children  int
	)
	err := tx.QueryRow(ctx, sqlSuspendLock, f.id, f.token, f.tenant, t).Scan(&tenant, &cancel, &run, &hasParent, &children)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("execution %s: %w", p.ExecutionID, store.ErrLeaseLost)
	}
	if err != nil {
		return nil, err
	}
	if cancel {
		if hasParent && !parentFirst {
			return nil, errParentFirst
		}
		var fam *cascade
		if children > 0 {
			if fam, err = lockCascade(ctx, tx, f.id); err != nil {
				return nil, err
			}
		}
		if err := returnQuota(ctx, tx, tenant, 1+fam.freed()); err != nil {
			return nil, err
		}
		e, err := scanExecution(tx.QueryRow(ctx, sqlSuspendCancelled, f.id, t, run))
		if err != nil {
			return nil, err
		}
		*changed, err = finishFamily(ctx, tx, e, true, fam, t)
		return e, err
	}
	var (
		recorded    bool
		steps, size int
		seq         *int64
		data        *string
	)
	if err := tx.QueryRow(ctx, sqlSuspendProbe, f.id, p.Step, p.Signal).Scan(&recorded, &steps, &size, &seq, &data); err != nil {
		return nil, err
	}
	// The outcome, now or when the suspension ends, is a new step:
	// there must be room for it now (a Wake's outcome is at most
	// TimedOut; a fan-in wait's is cut to the room there is). Nothing was
	// written.
	outcome := store.TimedOut
	if data != nil {
		outcome = []byte(*data)
	}
	switch {
	case !recorded && steps >= p.StepBound():
		return nil, fmt.Errorf("execution %s holds %d steps, its bound %d: %w", p.ExecutionID, steps,
			p.StepBound(), store.ErrTooManySteps)
	case !recorded && p.Children == "" && size+store.StepSize(p.Step, outcome) > p.ByteBound():
		return nil, fmt.Errorf("execution %s holds %d bytes of steps, a step of %d passes its bound %d: %w",
			p.ExecutionID, size, store.StepSize(p.Step, outcome), p.ByteBound(), store.ErrJournalTooLarge)
	case recorded: // nothing to wait for: the step's outcome is known
		return scanExecution(tx.QueryRow(ctx, sqlSuspendQueue, f.id, t, false, p.Step, nil, nil, run))
	case p.Children != "":
		return suspendFanIn(ctx, tx, f, p, t, run, size)
	case p.Event != "":
		return suspendEvent(ctx, tx, f, tenant, p, t, run, size)
	case p.Signal == "" && !micro(p.Until).After(t): // a sleep already over (to the microsecond stored)
		return scanExecution(tx.QueryRow(ctx, sqlSuspendQueue, f.id, t, true, p.Step, "null", nil, run))
	case seq != nil: // the signal came first
		return scanExecution(tx.QueryRow(ctx, sqlSuspendQueue, f.id, t, true, p.Step, *data, *seq, run))
	}
	var wakeAt *time.Time
	switch {
	case p.Signal == "":
		w := micro(p.Until)
		wakeAt = &w
	case p.Timeout > 0:
		w := micro(t.Add(p.Timeout))
		wakeAt = &w
	}
	return scanExecution(tx.QueryRow(ctx, sqlSuspendWait, f.id, wakeAt, strPtr(p.Signal), p.Step, t, run, nil, nil, nil,
		false))
}

// suspendFanIn is Suspend's fan-in wait (children.go), with the row
// locked: the spawn's counters, read after the lock, decide. A child that
// ends meanwhile waits for this lock (it locks its parent first) and then
// finds the wait.
func suspendFanIn(ctx context.Context, tx pgx.Tx, f fence, p *store.SuspendParams, t time.Time, run, size int) (*store.Execution, error) {
	var spawned, ended int
	err := tx.QueryRow(ctx, sqlSuspendSpawn, f.id, p.Children).Scan(&spawned, &ended)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: step %q of execution %s is not a spawn", store.ErrInvalid, p.Children, p.ExecutionID)
	}
	if err != nil {
		return nil, err
	}
	if p.Count > spawned {
		return nil, fmt.Errorf("%w: count %d passes the %d children of spawn %q", store.ErrInvalid, p.Count, spawned,
			p.Children)
	}
	if store.ChildrenWaitHolds(ended, spawned, p.Count) {
		children, _, err := fanIn(ctx, tx, f.id, p.Children)
		if err != nil {
			return nil, err
		}
		result := store.FanInStep(p.Step, children, false, p.ByteBound()-size)
		return scanExecution(tx.QueryRow(ctx, sqlSuspendQueue, f.id, t, true, p.Step, string(result), nil, run))
	}
	var wakeAt *time.Time
	if p.Timeout > 0 {
		w := micro(t.Add(p.Timeout))
		wakeAt = &w
	}
	return scanExecution(tx.QueryRow(ctx, sqlSuspendWait, f.id, wakeAt, store.ChildrenWaitFor(p.Children), p.Step, t,
		run, p.Count, nil, nil, false))
}
