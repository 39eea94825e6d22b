package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/latch-run/latch/store"
)

// The journal (I10): latch_steps, one row per recorded step of an
// execution, the primary key (execution_id, name) the arbiter of the first
// record of a name. Steps are recorded under a lease (RecordStep) or by the
// end of a suspension (Suspend, Signal, Wake), each with the execution's
// row locked; every one of them sets has_steps on the execution, so that a
// claim reads journals only for the executions that have one.
const (
	// RecordStep's lock: sent in one pipeline with sqlRecordStep (one
	// implicit transaction, one round trip), so that the record's
	// statement takes its snapshot after the lock and counts every step
	// its previous holder committed. $1 id.
	sqlRecordStepLock = `SELECT 1 FROM latch_executions WHERE id = $1 FOR NO KEY UPDATE`

	// RecordStep: the fence (sqlFence's conditions) locks the execution,
	// the step is inserted unless its name is recorded already or the
	// journal holds $8 steps (full), and counted in the storage budget
	// (storage.go: past it, the statement fails with LA002), and the
	// recorded step is read back.
	// Records of one execution run one after the other on the row lock.
	// $1 id, $2 token, $3 tenant, $4 now, $5 name, $6 result, $7
	// started_at, $8 the journal's bound.
	//
	// The winner of a name recorded before is read in the statement's
	// snapshot: it is there unless its record committed while this one
	// waited for the row lock (two records of one name at once), and then
	// fenced is true with no step: the caller reads it again.
	sqlRecordStep = `
WITH x AS (
    SELECT id, attempt, has_steps FROM latch_executions
    WHERE id = $1 AND status = 'running' AND lease_token = $2
      AND ($3 = '' OR tenant = $3) AND lease_expires_at >= $4
    FOR NO KEY UPDATE
), room AS (
    SELECT NOT EXISTS (SELECT 1 FROM latch_steps WHERE execution_id = $1 AND name = $5)
        AND (SELECT count(*) FROM latch_steps WHERE execution_id = $1) >= $8 AS at_bound
), ins AS (
    INSERT INTO latch_steps (execution_id, name, result, started_at, recorded_at, attempt)
    SELECT x.id, $5, $6, $7, $4, x.attempt FROM x, room WHERE NOT room.at_bound
    ON CONFLICT (execution_id, name) DO NOTHING
    RETURNING name, result, started_at, recorded_at, attempt
), f AS (
    UPDATE latch_executions e SET has_steps = true, stored_bytes = e.stored_bytes + octet_length($6)
    FROM x WHERE e.id = x.id AND EXISTS (SELECT 1 FROM ins)
)
SELECT EXISTS (SELECT 1 FROM x), ins.name IS NOT NULL, (SELECT at_bound FROM room),
    coalesce(ins.name, s.name), coalesce(ins.result, s.result), coalesce(ins.started_at, s.started_at),
    coalesce(ins.recorded_at, s.recorded_at), coalesce(ins.attempt, s.attempt)
FROM (SELECT 1) one
LEFT JOIN ins ON true
LEFT JOIN latch_steps s ON ins.name IS NULL AND s.execution_id = $1 AND s.name = $5
    AND EXISTS (SELECT 1 FROM x)`

	sqlGetStep = `SELECT name, result, started_at, recorded_at, attempt FROM latch_steps
WHERE execution_id = $1 AND name = $2`

	// Steps: the execution (of the tenant $2, '' = any) and its journal in
	// record order; one row with a NULL step for an empty journal, none for
	// no execution.
	sqlSteps = `
SELECT s.name, s.result, s.started_at, s.recorded_at, s.attempt
FROM latch_executions e LEFT JOIN latch_steps s ON s.execution_id = e.id
WHERE e.id = $1 AND ($2 = '' OR e.tenant = $2)
ORDER BY s.seq`

	// The journals of claimed executions, read after the claim.
	// Each execution still under the claim's lease (id $1[i], token $2[i])
	// with its steps, one row with NULL name and result for none; an
	// execution force deleted since the claim has no row.
	sqlJournals = `SELECT e.id::text, s.name, s.result FROM latch_executions e
LEFT JOIN latch_steps s ON s.execution_id = e.id
WHERE e.id = ANY($1::text[]::uuid[])
  AND (e.id::text, e.lease_token::text) IN (SELECT * FROM unnest($1::text[], $2::text[]))`
)

// RecordStep implements store.Store: one statement (sqlRecordStep), fenced
// like Complete.
func (s *Store) RecordStep(ctx context.Context, p *store.RecordStepParams) (*store.RecordStepResult, error) {
	if err := store.CheckStepName(p.Name); err != nil {
		return nil, err
	}
	t := now(p.Now)
	f, err := newFence(p.ExecutionID, p.Token, p.Tenant, t)
	if err != nil {
		return nil, err
	}
	result := "null"
	if p.Result != nil {
		result = string(p.Result)
	}
	var startedAt *time.Time
	if !p.StartedAt.IsZero() {
		v := micro(p.StartedAt)
		startedAt = &v
	}
	var (
		res          store.RecordStepResult
		fenced, full bool
	)
	err = s.write(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		b := &pgx.Batch{}
		b.Queue(sqlRecordStepLock, f.id)
		b.Queue(sqlRecordStep, f.id, f.token, f.tenant, t, p.Name, result, startedAt, p.StepBound())
		br := c.SendBatch(ctx, b)
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return err
		}
		var (
			name, result *string
			recordedAt   *time.Time
			attempt      *int
			st           stepRow
		)
		err := br.QueryRow().Scan(&fenced, &res.Recorded, &full, &name, &result, &st.startedAt, &recordedAt, &attempt)
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if err != nil || !fenced || full {
			return err
		}
		if name == nil { // recorded by a concurrent call: read it now
			st.name = p.Name
			if err := scanStep(c.QueryRow(ctx, sqlGetStep, f.id, p.Name), &st); err != nil {
				return err
			}
		} else {
			st.name, st.result, st.recordedAt, st.attempt = *name, *result, *recordedAt, *attempt
		}
		res.Step = st.step()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: record step: %w", interpretError(err))
	}
	if !fenced {
		return nil, fmt.Errorf("execution %s: %w", p.ExecutionID, store.ErrLeaseLost)
	}
	if full {
		return nil, fmt.Errorf("execution %s is at its bound of %d steps: %w", p.ExecutionID, p.StepBound(),
			store.ErrTooManySteps)
	}
	return &res, nil
}

// Steps implements store.Store: one read.
func (s *Store) Steps(ctx context.Context, p *store.StepsParams) ([]*store.Step, error) {
	id, ok := parseID(p.ID)
	if !ok {
		return nil, fmt.Errorf("execution %q: %w", p.ID, store.ErrNotFound)
	}
	rows, err := s.pool.Query(ctx, sqlSteps, id, p.Tenant)
	if err != nil {
		return nil, fmt.Errorf("postgres: steps: %w", interpretError(err))
	}
	found := false
	steps := []*store.Step{}
	var (
		name, result *string
		startedAt    *time.Time
		recordedAt   *time.Time
		attempt      *int
	)
	_, err = pgx.ForEachRow(rows, []any{&name, &result, &startedAt, &recordedAt, &attempt}, func() error {
		found = true
		if name != nil { // else the journal is empty
			st := stepRow{name: *name, result: *result, startedAt: startedAt, recordedAt: *recordedAt, attempt: *attempt}
			x := st.step()
			steps = append(steps, &x)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: steps: %w", interpretError(err))
	}
	if !found {
		return nil, fmt.Errorf("execution %s: %w", p.ID, store.ErrNotFound)
	}
	return steps, nil
}

// readJournals gives each claimed execution with a journal its Steps, in
// one read after the claim, and none when no claimed execution has one
// (the common case costs nothing). A claimed execution's journal cannot
// change meanwhile: steps are recorded under its lease, which its worker
// has not got yet. The read's snapshot follows the claim's commit, so it
// shows every step recorded before the execution became claimable (the
// claim's own snapshot may predate a record that committed just before).
//
// An execution force deleted between the claim and this read has lost its
// journal with it: its lease is dropped from the answer (it is void: every
// call under it is lease_lost), rather than handed out with an empty
// journal, which would let a worker run recorded steps again. The claim
// then linearizes after the delete. It returns the leases kept.
func (s *Store) readJournals(ctx context.Context, cs []claimed) ([]claimed, error) {
	var ids, tokens []string
	at := map[string]int{}
	for i, c := range cs {
		if c.hasSteps {
			ids = append(ids, c.lease.ExecutionID)
			tokens = append(tokens, c.lease.Token)
			at[c.lease.ExecutionID] = i
		}
	}
	if len(ids) == 0 {
		return cs, nil
	}
	rows, err := s.pool.Query(ctx, sqlJournals, ids, tokens)
	if err != nil {
		return nil, err
	}
	alive := map[string]bool{}
	var id string
	var name, result *string
	_, err = pgx.ForEachRow(rows, []any{&id, &name, &result}, func() error {
		alive[id] = true
		if name == nil { // no step left: only a deleted execution loses them
			return nil
		}
		l := &cs[at[id]].lease
		if l.Steps == nil {
			l.Steps = store.Journal{}
		}
		l.Steps[*name] = json.RawMessage(*result)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(cs, func(c claimed) bool { return c.hasSteps && !alive[c.lease.ExecutionID] }), nil
}

// stepRow is one latch_steps row as scanned.
type stepRow struct {
	name       string
	result     string
	startedAt  *time.Time
	recordedAt time.Time
	attempt    int
}

func scanStep(row pgx.Row, st *stepRow) error {
	err := row.Scan(&st.name, &st.result, &st.startedAt, &st.recordedAt, &st.attempt)
	if errors.Is(err, pgx.ErrNoRows) {
		// A name that conflicted is recorded, and steps go only with their
		// execution, whose lease this call held.
		return fmt.Errorf("postgres: step %q vanished", st.name)
	}
	return err
}

func (st *stepRow) step() store.Step {
	out := store.Step{Name: st.name, Result: json.RawMessage(st.result), RecordedAt: st.recordedAt.UTC(),
		Attempt: st.attempt}
	if st.startedAt != nil {
		out.StartedAt = st.startedAt.UTC()
	}
	return out
}
