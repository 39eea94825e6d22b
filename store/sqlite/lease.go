package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/latch-run/latch/store"
)

// leased is the part of an execution that fenced operations decide on.
type leased struct {
	tenant          string
	attempt         int
	maxAttempts     int
	cancelRequested bool
	// resume: the run resumes a flow (its claim counted no start).
	resume bool
}

// fence loads a running execution of tenant whose current, unexpired lease
// token is token. Anything else — no such execution, another tenant's, not
// running under that token, a lease expired before now — is ErrLeaseLost,
// and the caller changes nothing (I5). The rescuer passes a zero now: for it an expired lease is
// exactly the one to end.
func fence(ctx context.Context, tx *sql.Tx, id, tenant, token string, now time.Time) (*leased, error) {
	var l leased
	var status string
	var cancel, resume int
	var curToken sql.NullString
	var expires sql.NullInt64
	err := tx.QueryRowContext(ctx, `SELECT tenant, attempt, max_attempts, cancel_requested, resume, status,
		lease_token, lease_expires_at FROM executions WHERE id = ?`, id).
		Scan(&l.tenant, &l.attempt, &l.maxAttempts, &cancel, &resume, &status, &curToken, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("execution %s: %w", id, store.ErrLeaseLost)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: fence: %w", err)
	}
	if (tenant != "" && l.tenant != tenant) || status != string(store.StatusRunning) ||
		!curToken.Valid || curToken.String != token || (!now.IsZero() && expires.Int64 < ns(now)) {
		return nil, fmt.Errorf("execution %s: %w", id, store.ErrLeaseLost)
	}
	l.cancelRequested, l.resume = cancel != 0, resume != 0
	return &l, nil
}

// outcome is how the lease's run ends when its worker ends it as o: a
// cancel request makes every such end the execution's cancellation.
func (l *leased) outcome(o store.RunOutcome) store.RunOutcome {
	if l.cancelRequested {
		return store.RunCancelled
	}
	return o
}

// Heartbeat implements store.Store.
func (s *Store) Heartbeat(ctx context.Context, p *store.HeartbeatParams) (*store.HeartbeatResult, error) {
	t := now(p.Now)
	lease := store.LeaseOrDefault(p.LeaseDuration)
	var res store.HeartbeatResult
	err := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		l, err := fence(ctx, tx, p.ExecutionID, p.Tenant, p.Token, t)
		if err != nil {
			return false, err
		}
		expires := t.Add(lease)
		if _, err := tx.ExecContext(ctx, `UPDATE executions SET lease_expires_at = ? WHERE id = ?`,
			ns(expires), p.ExecutionID); err != nil {
			return false, fmt.Errorf("sqlite: heartbeat: %w", err)
		}
		res = store.HeartbeatResult{ExpiresAt: expires.UTC(), CancelRequested: l.cancelRequested}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// Complete implements store.Store.
func (s *Store) Complete(ctx context.Context, p *store.CompleteParams) (*store.Execution, error) {
	t := now(p.Now)
	ends := runEnd{outcome: store.RunSucceeded}
	return s.feed.Execution(s.afterLease(ctx, p.ExecutionID, p.Tenant, p.Token, t, ends, func(ctx context.Context, tx *sql.Tx, l *leased) error {
		if err := charge(ctx, tx, p.ExecutionID, store.StoredSize(p.Result), false); err != nil {
			return err
		}
		result := sql.NullString{String: string(p.Result), Valid: p.Result != nil}
		status := store.StatusSucceeded
		if l.cancelRequested {
			status = store.StatusCancelled
		}
		return finish(ctx, tx, p.ExecutionID, l.tenant, status, result, "", t)
	}))
}

// Fail implements store.Store.
func (s *Store) Fail(ctx context.Context, p *store.FailParams) (*store.Execution, error) {
	t := now(p.Now)
	msg := p.StoredError()
	ends := runEnd{outcome: store.RunFailed, err: msg}
	return s.feed.Execution(s.afterLease(ctx, p.ExecutionID, p.Tenant, p.Token, t, ends, func(ctx context.Context, tx *sql.Tx, l *leased) error {
		if err := charge(ctx, tx, p.ExecutionID, int64(len(msg)), true); err != nil {
			return err
		}
		switch {
		case l.cancelRequested:
			return finish(ctx, tx, p.ExecutionID, l.tenant, store.StatusCancelled, sql.NullString{}, msg, t)
		case p.Retry && l.attempt < l.maxAttempts:
			return requeue(ctx, tx, p.ExecutionID, msg, t.Add(max(p.RetryDelay, 0)), t)
		default:
			return finish(ctx, tx, p.ExecutionID, l.tenant, store.StatusFailed, sql.NullString{}, msg, t)
		}
	}))
}

// Release implements store.Store. An unstarted lease gives its claim back:
// a start's count, or a resume's flag (its claim counted no start), which
// requeue clears and this sets again.
func (s *Store) Release(ctx context.Context, p *store.ReleaseParams) (*store.Execution, error) {
	t := now(p.Now)
	ends := runEnd{outcome: store.RunReleased}
	return s.feed.Execution(s.afterLease(ctx, p.ExecutionID, p.Tenant, p.Token, t, ends, func(ctx context.Context, tx *sql.Tx, l *leased) error {
		if p.Unstarted && !l.resume {
			if _, err := tx.ExecContext(ctx, `UPDATE executions SET attempt = attempt - 1 WHERE id = ?`, p.ExecutionID); err != nil {
				return fmt.Errorf("sqlite: release: %w", err)
			}
		}
		if l.cancelRequested {
			return finish(ctx, tx, p.ExecutionID, l.tenant, store.StatusCancelled, sql.NullString{}, "", t)
		}
		if err := requeue(ctx, tx, p.ExecutionID, "", t, t); err != nil {
			return err
		}
		if p.Unstarted && l.resume {
			if _, err := tx.ExecContext(ctx, `UPDATE executions SET resume = 1 WHERE id = ?`, p.ExecutionID); err != nil {
				return fmt.Errorf("sqlite: release: %w", err)
			}
		}
		return nil
	}))
}

// afterLease runs a fenced state change that ends the lease, and returns
// the execution after it. The lease's run ends as ends says, in the same
// step. change gets the step's context (its touched set, touch.go).
func (s *Store) afterLease(ctx context.Context, id, tenant, token string, now time.Time, ends runEnd,
	change func(ctx context.Context, tx *sql.Tx, l *leased) error) (*store.Execution, error) {
	var e *store.Execution
	err := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		l, err := fence(ctx, tx, id, tenant, token, now)
		if err != nil {
			return false, err
		}
		if err := endRun(ctx, tx, id, now, l.outcome(ends.outcome), ends.err); err != nil {
			return false, err
		}
		if err := change(ctx, tx, l); err != nil {
			return false, err
		}
		e, err = getExecution(ctx, tx, "", id)
		return true, err
	})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// requeue ends a running attempt and makes the execution claimable again at
// runAt (scheduled if that is later than t), its next claim a start (not a
// resume). The quota slot stays taken.
func requeue(ctx context.Context, tx *sql.Tx, id, errMsg string, runAt, t time.Time) error {
	status := store.StatusQueued
	if runAt.After(t) {
		status = store.StatusScheduled
	}
	_, err := tx.ExecContext(ctx, `UPDATE executions SET status = ?, run_at = ?,
		error = COALESCE(?, error), resume = 0,
		lease_token = NULL, worker_id = NULL, lease_expires_at = NULL WHERE id = ?`,
		string(status), ns(runAt), nullString(errMsg), id)
	if err != nil {
		return fmt.Errorf("sqlite: requeue: %w", err)
	}
	return nil
}

// finish moves an in-flight execution to a terminal status and frees its
// tenant's quota slot in the same transaction (I3). A success clears the
// error an earlier attempt left; other ends keep it unless errMsg replaces it.
// A suspension (a suspended execution cancelled) ends with it. It is the
// execution's end for its family, in the same step (ended).
func finish(ctx context.Context, tx *sql.Tx, id, tenant string, status store.Status,
	result sql.NullString, errMsg string, t time.Time) error {
	var parent, step sql.NullString
	var children int
	err := tx.QueryRowContext(ctx, `UPDATE executions SET status = ?, result = ?,
		error = CASE WHEN ? THEN NULL ELSE COALESCE(?, error) END, finished_at = ?,
		lease_token = NULL, worker_id = NULL, lease_expires_at = NULL,
		resume = 0, wake_at = NULL, waiting_for = NULL, suspend_step = NULL, wait_count = NULL,
		wait_key = NULL, wait_since = NULL WHERE id = ?
		RETURNING parent_id, parent_step, children`,
		string(status), result, status == store.StatusSucceeded, nullString(errMsg), ns(t), id).Scan(&parent, &step, &children)
	if err != nil {
		return fmt.Errorf("sqlite: finish: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE tenants SET inflight = inflight - 1 WHERE name = ?`, tenant); err != nil {
		return fmt.Errorf("sqlite: finish: %w", err)
	}
	return ended(ctx, tx, id, parent, step, children, t)
}
