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
		prev, recorded, err := recordStep(ctx, tx, p.ExecutionID, &st, p.StepBound())
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

// recordStep records st in execution id's journal unless a step of its name
// is recorded already: the first record wins. It returns the step as
// recorded, and whether this call recorded it. A new name is refused with
// ErrTooManySteps when the journal holds limit steps; limit 0 checks
// nothing (the end of a suspension, whose Suspend checked for room).
func recordStep(ctx context.Context, tx *sql.Tx, id string, st *store.Step, limit int) (*store.Step, bool, error) {
	prev, err := getStep(ctx, tx, id, st.Name)
	if prev != nil || err != nil {
		return prev, false, err
	}
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

// readJournal reads execution id's journal by name; n is its size.
func readJournal(ctx context.Context, tx *sql.Tx, id string, n int) (store.Journal, error) {
	rows, err := tx.QueryContext(ctx, `SELECT name, result FROM flow_steps WHERE execution_id = ?`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	j := make(store.Journal, n)
	for rows.Next() {
		var name, result string
		if err := rows.Scan(&name, &result); err != nil {
			return nil, err
		}
		j[name] = json.RawMessage(result)
	}
	return j, rows.Err()
}

// Steps implements store.Store: one statement, so the execution and its
// journal are read from one snapshot. The execution's row comes first
// (one row, with NULL step columns, when its journal is empty).
func (s *Store) Steps(ctx context.Context, p *store.StepsParams) ([]*store.Step, error) {
	query, args := stepsQuery(p)
	rows, err := s.read.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: steps: %w", interpretError(err))
	}
	defer rows.Close()
	found := false
	steps := []*store.Step{}
	for rows.Next() {
		found = true
		var name, result sql.NullString
		var started, recorded, attempt sql.NullInt64
		if err := rows.Scan(&name, &result, &started, &recorded, &attempt); err != nil {
			return nil, fmt.Errorf("sqlite: steps: %w", interpretError(err))
		}
		if !name.Valid {
			continue
		}
		steps = append(steps, &store.Step{Name: name.String, Result: json.RawMessage(result.String),
			StartedAt: nullTimeValue(started), RecordedAt: fromNS(recorded.Int64), Attempt: int(attempt.Int64)})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: steps: %w", interpretError(err))
	}
	if !found {
		return nil, fmt.Errorf("execution %s: %w", p.ID, store.ErrNotFound)
	}
	return steps, nil
}

// stepsQuery reads an execution's row joined to its journal in record
// order. The tenant's term is kept off every index (+): the execution is
// then found by its primary key, one row at most, so the journal comes in
// seq order from its own primary key, with no sort.
func stepsQuery(p *store.StepsParams) (query string, args []any) {
	query = `SELECT s.name, s.result, s.started_at, s.recorded_at, s.attempt
		FROM executions e LEFT JOIN flow_steps s ON s.execution_id = e.id WHERE e.id = ?`
	args = []any{p.ID}
	if p.Tenant != "" {
		query += ` AND +e.tenant = ?`
		args = append(args, p.Tenant)
	}
	return query + ` ORDER BY s.seq`, args
}

// deleteFlow removes the journals and signals of the executions where
// selects (a condition on execution_id, with arg).
func deleteFlow(ctx context.Context, tx *sql.Tx, where string, arg any) error {
	for _, table := range []string{"flow_steps", "flow_signals"} {
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
