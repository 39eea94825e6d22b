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
	// one per lease at most (run_no - MaxRunsKept), found on the primary key
	// by latch_drop_runs (migration 10; see doc.go, Statements): for the
	// usual execution with fewer runs it is called with none and reads
	// nothing. CTE rt is one row, which the claim's final SELECT must join
	// (a CTE that only reads is run only if referenced).
	sqlRecordRuns = `
), ru AS (
    INSERT INTO latch_runs (execution_id, run, attempt, worker_id, claimed_at)
    SELECT run_id, run_no, attempt, run_worker, run_claimed FROM u
), rt AS (
    SELECT latch_drop_runs(array_agg(run_id), array_agg(run_no - ` + maxRunsKept + `)) AS dropped
    FROM u WHERE run_no > ` + maxRunsKept + `
)`

	// The runs of the fenced ends (endAttemptSQL): after the execution's
	// UPDATE (CTE e, returning u.n, its columns and x.runs AS run), the run
	// under the lease ends at u.now with the outcome and error given, SQL
	// expressions over e (the execution after) and u (the inputs), by
	// latch_end_runs on the primary key (migration 10; doc.go, Statements).
	// CTE re is one row, which the statement's final SELECT joins.
	sqlEndRunsMany = `
), re AS (
    SELECT latch_end_runs(array_agg(e.id::uuid), array_agg(e.run), array_agg(u.now),
        array_agg((%s)::text), array_agg((%s)::text)) AS ended
    FROM e JOIN u ON u.n = e.n`

	// A run's outcome when the operation may end the execution cancelled
	// (a cancel request wins over what the worker reported).
	sqlOutcome = `CASE WHEN e.status = 'cancelled' THEN 'cancelled' ELSE '%s' END`

	// sqlEndRun ends run $%[1]d of execution $1 at $%[2]d: a CTE for a
	// statement on one execution whose row it holds (Suspend), one row that
	// the statement must read (sqlEndRunRead) for it to run.
	sqlEndRun = `run AS (
    SELECT latch_end_runs(ARRAY[$1::uuid], ARRAY[$%[1]d::integer], ARRAY[$%[2]d::timestamptz],
        ARRAY['%[3]s'], ARRAY[NULL::text]) AS ended
)`

	// sqlEndRunRead is a condition that holds, and reads CTE run.
	sqlEndRunRead = `(SELECT ended FROM run) IS NOT NULL`

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
