package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/latch-run/latch/store"
)

// The attempt history. A running execution's row is its current run: the
// claim's own update numbers it (executions.runs) and sets its attempt,
// worker and claim time (worker_id, started_at), so recording a run costs
// the claim no write of its own. The operation that ends the lease copies
// the run, with its end, into execution_runs (endRun) before its change
// clears the lease, in the same step. Runs reads the ended runs and, while
// the execution runs, the current one from the row, in one statement.
//
// At most store.MaxRunsKept are kept: the claim of a run past it deletes
// the oldest ended ones (dropOldRuns), a write that only long histories
// pay.

// Runs implements store.Store.
func (s *Store) Runs(ctx context.Context, p *store.RunsParams) ([]*store.Run, error) {
	query, args := runsQuery(p)
	rows, err := s.read.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: runs: %w", interpretError(err))
	}
	defer rows.Close()
	found := false
	var cur *store.Run // the current run, while the execution runs
	runs := []*store.Run{}
	for rows.Next() {
		var status string
		var worker, rworker, outcome, errMsg sql.NullString
		var started, rattempt, claimed, ended sql.NullInt64
		var attempt int
		if err := rows.Scan(&status, &attempt, &worker, &started,
			&rattempt, &rworker, &claimed, &ended, &outcome, &errMsg); err != nil {
			return nil, fmt.Errorf("sqlite: runs: %w", interpretError(err))
		}
		if !found && status == string(store.StatusRunning) {
			cur = &store.Run{Attempt: attempt, WorkerID: worker.String, ClaimedAt: fromNS(started.Int64)}
		}
		found = true
		if claimed.Valid {
			runs = append(runs, &store.Run{Attempt: int(rattempt.Int64), WorkerID: rworker.String,
				ClaimedAt: fromNS(claimed.Int64), EndedAt: nullTime(ended),
				Outcome: store.RunOutcome(outcome.String), Error: errMsg.String})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: runs: %w", interpretError(err))
	}
	if !found {
		return nil, fmt.Errorf("execution %s: %w", p.ID, store.ErrNotFound)
	}
	if cur != nil {
		runs = append(runs, cur)
	}
	return runs, nil
}

// runsQuery reads an execution's row, with its current run, joined to its
// ended runs, oldest first (one row, with NULL run columns, when it has
// none). As in stepsQuery, the tenant's term is kept off every index (+),
// so the runs come in seq order from their primary key, with no sort.
func runsQuery(p *store.RunsParams) (query string, args []any) {
	query = `SELECT e.status, e.attempt, e.worker_id, e.started_at,
		r.attempt, r.worker_id, r.claimed_at, r.ended_at, r.outcome, r.error
		FROM executions e LEFT JOIN execution_runs r ON r.execution_id = e.id WHERE e.id = ?`
	args = []any{p.ID}
	if p.Tenant != "" {
		query += ` AND +e.tenant = ?`
		args = append(args, p.Tenant)
	}
	return query + ` ORDER BY r.seq`, args
}

// runEnd is how an operation that ends a lease ends its run: the outcome,
// unless a cancel request makes it the execution's cancellation (see
// leased.outcome), and the error of a failure.
type runEnd struct {
	outcome store.RunOutcome
	err     string
}

// sqlEndRun records the current run of a running execution, ended.
const sqlEndRun = `INSERT INTO execution_runs (execution_id, seq, attempt, worker_id, claimed_at,
	ended_at, outcome, error)
	SELECT id, runs, attempt, COALESCE(worker_id, ''), started_at, ?, ?, ? FROM executions WHERE id = ?`

// endRun records the run of execution id, whose lease is ending, as ended
// at t with outcome. It must come before the change that clears the
// lease. errMsg is kept for a failure only.
func endRun(ctx context.Context, tx *sql.Tx, id string, t time.Time,
	outcome store.RunOutcome, errMsg string) error {
	if outcome != store.RunFailed {
		errMsg = ""
	}
	args := []any{ns(t), string(outcome), nullString(errMsg), id}
	if _, err := tx.ExecContext(ctx, sqlEndRun, args...); err != nil {
		return fmt.Errorf("sqlite: end run: %w", err)
	}
	return nil
}

// sqlDropRuns deletes an execution's runs up to a number.
const sqlDropRuns = `DELETE FROM execution_runs WHERE execution_id = ? AND seq <= ?`

// dropOldRuns deletes the ended runs of execution id that its run seq, just
// claimed, puts past store.MaxRunsKept.
func dropOldRuns(ctx context.Context, tx *sql.Tx, id string, seq int64) error {
	if seq <= store.MaxRunsKept {
		return nil
	}
	if _, err := tx.ExecContext(ctx, sqlDropRuns, id, seq-store.MaxRunsKept); err != nil {
		return fmt.Errorf("sqlite: claim: runs: %w", err)
	}
	return nil
}

// deleteRuns removes the ended runs of the executions where selects (a
// condition on execution_id, with arg).
func deleteRuns(ctx context.Context, tx *sql.Tx, where string, arg any) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM execution_runs WHERE `+where, arg); err != nil {
		return fmt.Errorf("sqlite: delete runs: %w", err)
	}
	return nil
}
