package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latch-run/latch/store"
)

// The attempt history (store/attempt.go): latch_runs, one row per run,
// keyed (execution_id, run), where run is the execution's runs counter
// after the claim that started it (migration 7). Every write is a CTE of
// the statement that starts or ends the run, so the history is written in
// the same atomic step, with no round trip of its own: a claim inserts the
// runs of all its leases with one INSERT, and an end updates the run under
// the lease, found on the primary key by the counter the ending UPDATE
// returns (only claims change it, and a claim also changes the token the
// end is fenced on).

// maxRunsKept is store.MaxRunsKept as SQL text; the array index below does
// not compile if the two part.
const maxRunsKept = "100"

var _ = [1]struct{}{}[store.MaxRunsKept-100]

const (
	// What a claim's UPDATE (CTE u, with alias x) returns for sqlRecordRuns,
	// after the columns of the lease.
	sqlRunReturning = `x.id AS run_id, x.runs AS run_no, x.worker_id AS run_worker, x.started_at AS run_claimed`

	// sqlRecordRuns continues a claim's WITH after u: one INSERT records the
	// run of every lease (attempt after the claim, worker, claimed at the
	// claim's now), and the runs that fall out of the latest MaxRunsKept go,
	// one per lease at most (run_no - MaxRunsKept), found on the primary
	// key: for the usual execution with fewer runs the DELETE reads nothing.
	sqlRecordRuns = `
), ru AS (
    INSERT INTO latch_runs (execution_id, run, attempt, worker_id, claimed_at)
    SELECT run_id, run_no, attempt, run_worker, run_claimed FROM u
), rt AS (
    DELETE FROM latch_runs r
    WHERE r.execution_id = ANY(ARRAY(SELECT run_id FROM u WHERE run_no > ` + maxRunsKept + `))
      AND (r.execution_id, r.run) IN (SELECT run_id, run_no - ` + maxRunsKept + ` FROM u)
)`

	// The runs of the fenced ends (endAttemptSQL): after the execution's
	// UPDATE (CTE e, returning u.n, its columns and x.runs AS run), the run
	// under the lease ends at u.now with the outcome and error given, SQL
	// expressions over e (the execution after) and u (the inputs).
	sqlEndRunsMany = `
), re AS (
    UPDATE latch_runs r SET ended_at = u.now, outcome = %s, error = %s
    FROM e JOIN u ON u.n = e.n
    WHERE r.execution_id = ANY(ARRAY(SELECT e.id::uuid FROM e))
      AND r.execution_id = e.id::uuid AND r.run = e.run`

	// A run's outcome when the operation may end the execution cancelled
	// (a cancel request wins over what the worker reported).
	sqlOutcome = `CASE WHEN e.status = 'cancelled' THEN 'cancelled' ELSE '%s' END`

	// sqlEndRun ends run $%[1]d of execution $1 at $%[2]d: a CTE for a
	// statement on one execution whose row it holds (Suspend).
	sqlEndRun = `run AS (
    UPDATE latch_runs SET ended_at = $%[2]d, outcome = '%[3]s'
    WHERE execution_id = $1 AND run = $%[1]d
)`

	// Runs: the execution (of the tenant $2, '' = any) and its runs, oldest
	// first; one row with a NULL run for none, no row for no execution.
	sqlRuns = `
SELECT r.attempt, r.worker_id, r.claimed_at, r.ended_at, r.outcome, r.error
FROM latch_executions e LEFT JOIN latch_runs r ON r.execution_id = e.id
WHERE e.id = $1 AND ($2 = '' OR e.tenant = $2)
ORDER BY r.run`
)

// endRunsSQL is sqlEndRunsMany for an outcome: ok is the one unless the
// execution ended cancelled; errExpr the run's error (NULL: none).
func endRunsSQL(ok store.RunOutcome, errExpr string) string {
	return fmt.Sprintf(sqlEndRunsMany, fmt.Sprintf(sqlOutcome, ok), errExpr)
}

// endRunSQL is sqlEndRun: the run is parameter run of the statement,
// ended at parameter at with outcome o.
func endRunSQL(run, at int, o store.RunOutcome) string {
	return fmt.Sprintf(sqlEndRun, run, at, o)
}

// Runs implements store.Store: one read.
func (s *Store) Runs(ctx context.Context, p *store.RunsParams) ([]*store.Run, error) {
	id, ok := parseID(p.ID)
	if !ok {
		return nil, fmt.Errorf("execution %q: %w", p.ID, store.ErrNotFound)
	}
	rows, err := s.pool.Query(ctx, sqlRuns, id, p.Tenant)
	if err != nil {
		return nil, fmt.Errorf("postgres: runs: %w", interpretError(err))
	}
	found := false
	runs := []*store.Run{}
	var (
		attempt          *int
		worker, outcome  *string
		errMsg           *string
		claimed, endedAt *time.Time
	)
	_, err = pgx.ForEachRow(rows, []any{&attempt, &worker, &claimed, &endedAt, &outcome, &errMsg}, func() error {
		found = true
		if attempt == nil { // no runs
			return nil
		}
		r := &store.Run{Attempt: *attempt, WorkerID: *worker, ClaimedAt: claimed.UTC()}
		if endedAt != nil {
			t := endedAt.UTC()
			r.EndedAt = &t
		}
		if outcome != nil {
			r.Outcome = store.RunOutcome(*outcome)
		}
		if errMsg != nil {
			r.Error = *errMsg
		}
		runs = append(runs, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: runs: %w", interpretError(err))
	}
	if !found {
		return nil, fmt.Errorf("execution %s: %w", p.ID, store.ErrNotFound)
	}
	return runs, nil
}
