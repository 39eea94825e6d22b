package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
// sqlJournalBytes is the size of execution $1's journal: the sum of its
// steps' store.StepSize, read from the values' lengths (octet_length reads
// a stored value's header, not the value).
const sqlJournalBytes = `(SELECT coalesce(sum(octet_length(name) + octet_length(result)), 0)
    FROM latch_steps WHERE execution_id = $1)`

const (
	// RecordStep's lock: sent in one pipeline with sqlRecordStep (one
	// implicit transaction, one round trip), so that the record's
	// statement takes its snapshot after the lock and counts every step
	// its previous holder committed. $1 id.
	sqlRecordStepLock = `SELECT 1 FROM latch_executions WHERE id = $1 FOR NO KEY UPDATE`

	// RecordStep: the fence (sqlFence's conditions) locks the execution,
	// the step is inserted unless its name is recorded already, the
	// journal holds $8 steps (full) or the step would make its size
	// (store.StepSize: octet_length reads a value's length, not the value)
	// pass $9 bytes (too large); it is counted in the storage budget
	// (storage.go: past it, the statement fails with LA002); and the
	// recorded step is read back.
	// Records of one execution run one after the other on the row lock.
	// $1 id, $2 token, $3 tenant, $4 now, $5 name, $6 result, $7
	// started_at, $8 the journal's bound, $9 its bound of bytes.
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
), j AS (
    SELECT NOT EXISTS (SELECT 1 FROM latch_steps WHERE execution_id = $1 AND name = $5) AS new,
        count(*) AS n, coalesce(sum(octet_length(name) + octet_length(result)), 0) AS size
    FROM latch_steps WHERE execution_id = $1
), room AS (
    SELECT new AND n >= $8 AS at_bound, new AND size + octet_length($5) + octet_length($6) > $9 AS too_large FROM j
), ins AS (
    INSERT INTO latch_steps (execution_id, name, result, started_at, recorded_at, attempt)
    SELECT x.id, $5, $6, $7, $4, x.attempt FROM x, room WHERE NOT room.at_bound AND NOT room.too_large
    ON CONFLICT (execution_id, name) DO NOTHING
    RETURNING name, result, started_at, recorded_at, attempt
), f AS (
    UPDATE latch_executions e SET has_steps = true, stored_bytes = e.stored_bytes + octet_length($6)
    FROM x WHERE e.id = x.id AND EXISTS (SELECT 1 FROM ins)
)
SELECT EXISTS (SELECT 1 FROM x), ins.name IS NOT NULL, (SELECT at_bound FROM room), (SELECT too_large FROM room),
    coalesce(ins.name, s.name), coalesce(ins.result, s.result), coalesce(ins.started_at, s.started_at),
    coalesce(ins.recorded_at, s.recorded_at), coalesce(ins.attempt, s.attempt)
FROM (SELECT 1) one
LEFT JOIN ins ON true
LEFT JOIN latch_steps s ON ins.name IS NULL AND s.execution_id = $1 AND s.name = $5
    AND EXISTS (SELECT 1 FROM x)`

	sqlGetStep = `SELECT name, result, started_at, recorded_at, attempt FROM latch_steps
WHERE execution_id = $1 AND name = $2`

	// Steps: the execution (of the tenant $2, '' = any) and a page of its
	// journal in record order: the steps after seq $3 ($4 of them, NULL
	// = all), each cut when the sizes before it on the page reach $5
	// bytes (0 = no bound), the sizes read from the values' lengths, and
	// the results joined for the steps not cut only. One row with a NULL
	// step for an empty page, none for no execution.
	sqlSteps = `
SELECT g.seq, g.cut, s.name, s.result, s.started_at, s.recorded_at, s.attempt
FROM latch_executions e
LEFT JOIN LATERAL (
    SELECT seq, name, $5 > 0 AND coalesce(sum(size) OVER (ORDER BY seq
        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) >= $5 AS cut
    FROM (SELECT seq, name, octet_length(name) + octet_length(result) AS size FROM latch_steps
          WHERE execution_id = e.id AND seq > $3 ORDER BY seq LIMIT $4) p
) g ON true
LEFT JOIN latch_steps s ON NOT g.cut AND s.execution_id = e.id AND s.name = g.name
WHERE e.id = $1 AND ($2 = '' OR e.tenant = $2)
ORDER BY g.seq`

	// The journals of claimed executions, read after the claim: together up
	// to $3 bytes, the executions in the claim's order (ord) and each
	// journal in record order, cut as sqlSteps cuts a page. Each execution
	// still under the claim's lease (id $1[i], token $2[i]) with its steps,
	// one row with NULL name for none; a step cut has a NULL result, and
	// only the first cut one of each execution is read; an execution force
	// deleted since the claim has no row.
	sqlJournals = `
WITH e AS (
    SELECT x.id, c.ord FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS c(id, tok, ord)
    JOIN latch_executions x ON x.id = c.id::uuid AND x.lease_token::text = c.tok
), w AS (
    SELECT s.execution_id, s.name, s.seq,
        coalesce(sum(octet_length(s.name) + octet_length(s.result)) OVER (ORDER BY e.ord, s.seq
            ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) >= $3 AS cut
    FROM e JOIN latch_steps s ON s.execution_id = e.id
), k AS (
    SELECT execution_id, name, cut FROM (
        SELECT w.*, row_number() OVER (PARTITION BY execution_id, cut ORDER BY seq) AS rn FROM w) r
    WHERE NOT cut OR rn = 1
)
SELECT e.id::text, k.cut, k.name, s.result FROM e
LEFT JOIN k ON k.execution_id = e.id
LEFT JOIN latch_steps s ON NOT k.cut AND s.execution_id = e.id AND s.name = k.name`
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
		res                 store.RecordStepResult
		fenced, full, large bool
	)
	err = s.write(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		b := &pgx.Batch{}
		b.Queue(sqlRecordStepLock, f.id)
		b.Queue(sqlRecordStep, f.id, f.token, f.tenant, t, p.Name, result, startedAt, p.StepBound(), p.ByteBound())
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
		err := br.QueryRow().Scan(&fenced, &res.Recorded, &full, &large, &name, &result, &st.startedAt, &recordedAt, &attempt)
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if err != nil || !fenced || full || large {
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
	if large {
		return nil, fmt.Errorf("execution %s: a step of %d bytes passes the journal's bound of %d: %w", p.ExecutionID,
			store.StepSize(p.Name, p.Result), p.ByteBound(), store.ErrJournalTooLarge)
	}
	return &res, nil
}

// Steps implements store.Store: one read (sqlSteps).
func (s *Store) Steps(ctx context.Context, p *store.StepsParams) (*store.StepsPage, error) {
	if err := p.Paging(); err != nil {
		return nil, err
	}
	id, ok := parseID(p.ID)
	if !ok {
		return nil, fmt.Errorf("execution %q: %w", p.ID, store.ErrNotFound)
	}
	var limit *int
	if n := p.ReadLimit(); n > 0 {
		limit = &n
	}
	rows, err := s.pool.Query(ctx, sqlSteps, id, p.Tenant, p.After, limit, p.MaxBytes)
	if err != nil {
		return nil, fmt.Errorf("postgres: steps: %w", interpretError(err))
	}
	found, done := false, false
	page := &store.StepsPage{Items: []*store.Step{}}
	var (
		seq, last    *int64
		cut          *bool
		name, result *string
		startedAt    *time.Time
		recordedAt   *time.Time
		attempt      *int
	)
	_, err = pgx.ForEachRow(rows, []any{&seq, &cut, &name, &result, &startedAt, &recordedAt, &attempt}, func() error {
		found = true
		switch {
		case seq == nil || done: // an empty page, or past its end
		case *cut || p.Cut(len(page.Items), 0):
			page.Next, done = *last, true
		default:
			st := stepRow{name: *name, result: *result, startedAt: startedAt, recordedAt: *recordedAt, attempt: *attempt}
			x := st.step()
			page.Items = append(page.Items, &x)
			v := *seq
			last = &v
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: steps: %w", interpretError(err))
	}
	if !found {
		return nil, fmt.Errorf("execution %s: %w", p.ID, store.ErrNotFound)
	}
	return page, nil
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
// journal with it: its lease is void (every call under it is lease_lost)
// and is answered marked StepsPartial with no steps, so that its worker
// reads the journal before it runs a step, finds the execution gone and
// runs none again. It is not dropped: the claim committed, and others may
// have seen the execution running under it (a Get, a dedup answer) before
// the delete, so an answer without it has no linearization (Contention in
// test/lincheck caught that).
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
	rows, err := s.pool.Query(ctx, sqlJournals, ids, tokens, store.ClaimJournalBytes)
	if err != nil {
		return nil, err
	}
	alive := map[string]bool{}
	var id string
	var cut *bool
	var name, result *string
	_, err = pgx.ForEachRow(rows, []any{&id, &cut, &name, &result}, func() error {
		alive[id] = true
		if name == nil { // no step left: only a deleted execution loses them
			return nil
		}
		l := &cs[at[id]].lease
		if *cut {
			l.StepsPartial = true
			return nil
		}
		if l.Steps == nil {
			l.Steps = store.Journal{}
		}
		l.Steps[*name] = json.RawMessage(*result)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := range cs {
		if c := &cs[i]; c.hasSteps && !alive[c.lease.ExecutionID] {
			c.lease.Steps, c.lease.StepsPartial = nil, true
		}
	}
	return cs, nil
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
