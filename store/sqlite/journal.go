package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/latch-run/latch/store"
)

// The journal (I10): an execution's recorded steps, in flow_steps, in record
// order (seq). executions.steps counts them and gives the next seq, so a
// claim reads the journal of the executions that have one only.

// RecordStep implements store.Store.
func (s *Store) RecordStep(ctx context.Context, p *store.RecordStepParams) (*store.RecordStepResult, error) {
	if err := store.CheckStepName(p.Name); err != nil {
		return nil, err
	}
	t := now(p.Now)
	var res store.RecordStepResult
	err := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		l, err := fence(ctx, tx, p.ExecutionID, p.Tenant, p.Token, t)
		if err != nil {
			return false, err
		}
		st := store.Step{Name: p.Name, Result: jsonOrNull(p.Result), StartedAt: p.StartedAt,
			RecordedAt: t, Attempt: l.attempt}
		prev, recorded, err := recordStep(ctx, tx, p.ExecutionID, &st, journalBounds{p.StepBound(), p.ByteBound()})
		if err != nil {
			return false, err
		}
		if recorded {
			if err := charge(ctx, tx, p.ExecutionID, store.StoredSize(st.Result), false); err != nil {
				return false, err
			}
		}
		res = store.RecordStepResult{Step: *prev, Recorded: recorded}
		// A step makes nothing claimable: no one need be woken.
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// journalBounds are the bounds a record checks: steps and bytes, each 0 for
// none.
type journalBounds struct{ steps, bytes int }

// recordStep records st in execution id's journal unless a step of its name
// is recorded already: the first record wins. It returns the step as
// recorded, and whether this call recorded it. A new name is refused with
// ErrTooManySteps when the journal holds b.steps steps, and with
// ErrJournalTooLarge when its size would pass b.bytes; a zero bound checks
// nothing (the end of a suspension, whose Suspend checked for room).
func recordStep(ctx context.Context, tx *sql.Tx, id string, st *store.Step, b journalBounds) (*store.Step, bool, error) {
	prev, err := getStep(ctx, tx, id, st.Name)
	if prev != nil || err != nil {
		return prev, false, err
	}
	if err := byteRoom(ctx, tx, id, store.StepSize(st.Name, st.Result), b.bytes); err != nil {
		return nil, false, err
	}
	limit := b.steps
	var seq int64
	err = tx.QueryRowContext(ctx, `UPDATE executions SET steps = steps + 1 WHERE id = ? AND (? = 0 OR steps < ?)
		RETURNING steps`, id, limit, limit).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, fmt.Errorf("execution %s is at its bound of %d steps: %w", id, limit, store.ErrTooManySteps)
	}
	if err != nil {
		return nil, false, fmt.Errorf("sqlite: record step: %w", err)
	}
	var started sql.NullInt64
	if !st.StartedAt.IsZero() {
		started = sql.NullInt64{Int64: ns(st.StartedAt), Valid: true}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO flow_steps (execution_id, seq, name, result, started_at,
		recorded_at, attempt) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		id, seq, st.Name, string(st.Result), started, ns(st.RecordedAt), st.Attempt); err != nil {
		return nil, false, fmt.Errorf("sqlite: record step: %w", err)
	}
	rec := *st
	rec.StartedAt, rec.RecordedAt = nullTimeValue(started), fromNS(ns(st.RecordedAt))
	return &rec, true, nil
}

// stepRoom is ErrTooManySteps when execution id's journal holds limit
// steps or more.
func stepRoom(ctx context.Context, tx *sql.Tx, id string, limit int) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT steps FROM executions WHERE id = ?`, id).Scan(&n); err != nil {
		return fmt.Errorf("sqlite: count steps: %w", err)
	}
	if n >= limit {
		return fmt.Errorf("execution %s holds %d steps, its bound %d: %w", id, n, limit, store.ErrTooManySteps)
	}
	return nil
}

// byteRoom is ErrJournalTooLarge when a step of size n would make execution
// id's journal pass limit bytes; limit 0 checks nothing. The sizes are read
// from the records' headers (octet_length), not their contents; SQLite's
// one writer makes the sum and the insert that follows one step.
func byteRoom(ctx context.Context, tx *sql.Tx, id string, n, limit int) error {
	if limit == 0 {
		return nil
	}
	have, err := journalSize(ctx, tx, id)
	if err != nil {
		return err
	}
	if have+n > limit {
		return fmt.Errorf("execution %s holds %d bytes of steps, a step of %d passes its bound %d: %w",
			id, have, n, limit, store.ErrJournalTooLarge)
	}
	return nil
}

// journalSize is the size of execution id's journal, store.StepSize of
// each step, read from the records' headers.
func journalSize(ctx context.Context, tx *sql.Tx, id string) (int, error) {
	var have int
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(sum(octet_length(name) + octet_length(result)), 0)
		FROM flow_steps WHERE execution_id = ?`, id).Scan(&have); err != nil {
		return 0, fmt.Errorf("sqlite: journal size: %w", err)
	}
	return have, nil
}

// getStep reads the step of execution id named name; nil if none is
// recorded.
func getStep(ctx context.Context, tx *sql.Tx, id, name string) (*store.Step, error) {
	st, err := scanStep(tx.QueryRowContext(ctx, `SELECT name, result, started_at, recorded_at, attempt
		FROM flow_steps WHERE execution_id = ? AND name = ?`, id, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: read step: %w", err)
	}
	return st, nil
}

func scanStep(row scanner) (*store.Step, error) {
	var st store.Step
	var result string
	var started sql.NullInt64
	var recorded int64
	if err := row.Scan(&st.Name, &result, &started, &recorded, &st.Attempt); err != nil {
		return nil, err
	}
	st.Result, st.StartedAt, st.RecordedAt = json.RawMessage(result), nullTimeValue(started), fromNS(recorded)
	return &st, nil
}

// readJournal reads the journal a lease of execution id carries: its
// steps in record order up to left bytes (a page of Steps), whether that is
// less than the whole journal, and their size. left 0 reads nothing: the
// lease is partial.
func readJournal(ctx context.Context, q rowsQuerier, id string, left int) (j store.Journal, partial bool, size int, err error) {
	if left <= 0 {
		return nil, true, 0, nil
	}
	page, err := readSteps(ctx, q, &store.StepsParams{ID: id, MaxBytes: left})
	if err != nil {
		return nil, false, 0, err
	}
	j = make(store.Journal, len(page.Items))
	for _, st := range page.Items {
		j[st.Name] = st.Result
		size += store.StepSize(st.Name, st.Result)
	}
	return j, page.Next != 0, size, nil
}

// Steps implements store.Store: one statement, so the execution and its
// page are read from one snapshot. The execution's row comes first (one
// row, with NULL step columns, when the page is empty); the page's steps
// are read by their sizes first, and only those it keeps by their results
// (stepsQuery).
func (s *Store) Steps(ctx context.Context, p *store.StepsParams) (*store.StepsPage, error) {
	if err := p.Paging(); err != nil {
		return nil, err
	}
	return readSteps(ctx, s.read, p)
}

// rowsQuerier is a *sql.DB or a *sql.Tx.
type rowsQuerier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// readSteps reads the page p of a journal with q.
func readSteps(ctx context.Context, q rowsQuerier, p *store.StepsParams) (*store.StepsPage, error) {
	query, args := stepsQuery(p)
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: steps: %w", interpretError(err))
	}
	defer rows.Close()
	found := false
	type row struct {
		seq int64
		cut bool
		st  *store.Step
	}
	var read []row
	for rows.Next() {
		found = true
		var seq sql.NullInt64
		var cut sql.NullBool
		var name, result sql.NullString
		var started, recorded, attempt sql.NullInt64
		if err := rows.Scan(&seq, &cut, &name, &result, &started, &recorded, &attempt); err != nil {
			return nil, fmt.Errorf("sqlite: steps: %w", interpretError(err))
		}
		if !seq.Valid {
			continue
		}
		r := row{seq: seq.Int64, cut: cut.Bool}
		if !r.cut {
			r.st = &store.Step{Name: name.String, Result: json.RawMessage(result.String),
				StartedAt: nullTimeValue(started), RecordedAt: fromNS(recorded.Int64), Attempt: int(attempt.Int64)}
		}
		read = append(read, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: steps: %w", interpretError(err))
	}
	// The rows come as the join made them; the page is in seq order.
	slices.SortFunc(read, func(a, b row) int { return cmp.Compare(a.seq, b.seq) })
	page := &store.StepsPage{Items: []*store.Step{}}
	for i, r := range read {
		if r.cut || p.Cut(i, 0) {
			page.Next = read[i-1].seq
			break
		}
		page.Items = append(page.Items, r.st)
	}
	if !found {
		return nil, fmt.Errorf("execution %s: %w", p.ID, store.ErrNotFound)
	}
	return page, nil
}

// stepsQuery reads an execution's row joined to a page of its journal in
// record order: page holds the seq of each step after After (ReadLimit of
// them) and whether the steps before it on the page reach MaxBytes (cut),
// from their sizes only; the results are joined for the steps not cut.
// The tenant's term is kept off every index (+): the execution is then
// found by its primary key, one row at most; the page's rows, a few
// hundred at most but for a lease's read, are put in seq order by the
// caller rather than in a temporary tree.
func stepsQuery(p *store.StepsParams) (query string, args []any) {
	limit := p.ReadLimit()
	if limit == 0 {
		limit = -1
	}
	query = `WITH page AS (
		SELECT seq, ? > 0 AND coalesce(sum(octet_length(name) + octet_length(result)) OVER (ORDER BY seq
			ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) >= ? AS cut
		FROM (SELECT seq, name, result FROM flow_steps WHERE execution_id = ? AND seq > ? ORDER BY seq LIMIT ?))
	SELECT g.seq, g.cut, s.name, s.result, s.started_at, s.recorded_at, s.attempt
	FROM executions e LEFT JOIN page g ON true LEFT JOIN flow_steps s ON NOT g.cut AND s.execution_id = e.id AND s.seq = g.seq
	WHERE e.id = ?`
	args = []any{p.MaxBytes, p.MaxBytes, p.ID, p.After, limit, p.ID}
	if p.Tenant != "" {
		query += ` AND +e.tenant = ?`
		args = append(args, p.Tenant)
	}
	return query, args
}

// deleteFlow removes the journals and signals of the executions where
// selects (a condition on execution_id, with arg).
func deleteFlow(ctx context.Context, tx *sql.Tx, where string, arg any) error {
	for _, table := range []string{"flow_steps", "flow_signals", "event_consumed"} {
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE `+where, arg); err != nil {
			return fmt.Errorf("sqlite: delete %s: %w", table, err)
		}
	}
	return nil
}

// jsonOrNull is v, or null for none.
func jsonOrNull(v json.RawMessage) json.RawMessage {
	if len(v) == 0 {
		return json.RawMessage("null")
	}
	return v
}

// nullTimeValue is v as a time, zero for NULL.
func nullTimeValue(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return fromNS(v.Int64)
}
