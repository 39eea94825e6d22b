package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/latch-run/latch/store"
)

// Signals (I11) live in flow_signals, in arrival order per execution (seq).
// A buffered signal is consumed by one wait, oldest of its name first. A
// signal with an idempotency key keeps its row, and the first answer, until
// the execution goes.

// Signal implements store.Store.
func (s *Store) Signal(ctx context.Context, p *store.SignalParams) (*store.SignalResult, error) {
	if err := store.CheckSignalName(p.Name); err != nil {
		return nil, err
	}
	t := now(p.Now)
	var res store.SignalResult
	woke := false
	err := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		res, woke = store.SignalResult{}, false
		query := `SELECT status, waiting_for, suspend_step, attempt,
			wait_count IS NOT NULL OR wait_since IS NOT NULL FROM executions WHERE id = ?`
		args := []any{p.ExecutionID}
		if p.Tenant != "" {
			query += ` AND tenant = ?`
			args = append(args, p.Tenant)
		}
		var status string
		var waiting, step sql.NullString
		var attempt int
		var fanIn bool
		err := tx.QueryRowContext(ctx, query, args...).Scan(&status, &waiting, &step, &attempt, &fanIn)
		if errors.Is(err, sql.ErrNoRows) {
			return false, fmt.Errorf("execution %s: %w", p.ExecutionID, store.ErrNotFound)
		}
		if err != nil {
			return false, fmt.Errorf("sqlite: signal: %w", err)
		}
		if p.IdempotencyKey != "" {
			err := tx.QueryRowContext(ctx, `SELECT delivered FROM flow_signals
				WHERE execution_id = ? AND idempotency_key = ?`, p.ExecutionID, p.IdempotencyKey).Scan(&res.Delivered)
			if err == nil {
				return false, nil // a repeat: the first answer, nothing changed
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return false, fmt.Errorf("sqlite: signal: %w", err)
			}
		}
		if store.Status(status).Terminal() {
			return false, fmt.Errorf("execution %s is %s: %w", p.ExecutionID, status, store.ErrNotActive)
		}
		// The data counts in the storage budget, whether it ends a wait or
		// waits, checked after the flow's own bounds as on every backend (a
		// refusal rolls the transaction back).
		data := jsonOrNull(p.Data)
		// A fan-in wait (children.go) is ended by its children only, and a
		// wait for an event (events.go) by a publish, never by a signal of
		// the same name (a signal may be named "event:x").
		if status == string(store.StatusSuspended) && waiting.Valid && waiting.String == p.Name && !fanIn {
			st := store.Step{Name: step.String, Result: data, RecordedAt: t, Attempt: attempt}
			if _, _, err := recordStep(ctx, tx, p.ExecutionID, &st, journalBounds{bytes: p.ByteBound()}); err != nil {
				return false, err
			}
			if err := charge(ctx, tx, p.ExecutionID, store.StoredSize(data), false); err != nil {
				return false, err
			}
			if err := resumeAt(ctx, tx, p.ExecutionID, t); err != nil {
				return false, err
			}
			res.Delivered, woke = true, true
			if p.IdempotencyKey == "" {
				return true, nil // consumed at once: nothing to keep
			}
		} else {
			if err := bufferRoom(ctx, tx, p.ExecutionID, p.BufferBound()); err != nil {
				return false, err
			}
			if err := charge(ctx, tx, p.ExecutionID, store.StoredSize(data), false); err != nil {
				return false, err
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO flow_signals (execution_id, seq, name, data, consumed,
			idempotency_key, delivered, created_at)
			SELECT ?, COALESCE(MAX(seq), 0) + 1, ?, ?, ?, ?, ?, ? FROM flow_signals WHERE execution_id = ?`,
			p.ExecutionID, p.Name, string(data), res.Delivered, nullString(p.IdempotencyKey), res.Delivered,
			ns(t), p.ExecutionID); err != nil {
			return false, fmt.Errorf("sqlite: signal: %w", err)
		}
		return woke, nil
	})
	if err != nil {
		return nil, err
	}
	if woke {
		s.feed.Publish(p.ExecutionID)
	}
	return &res, nil
}

// bufferRoom is ErrSignalBufferFull when execution id keeps limit signals
// or more. The transaction holds SQLite's one write lock, so the count and
// the insert after it are one step.
func bufferRoom(ctx context.Context, tx *sql.Tx, id string, limit int) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM flow_signals INDEXED BY flow_signals_pending
		WHERE execution_id = ? AND consumed = 0`, id).Scan(&n); err != nil {
		return fmt.Errorf("sqlite: count signals: %w", err)
	}
	if n >= limit {
		return fmt.Errorf("execution %s keeps %d signals, its bound %d: %w", id, n, limit, store.ErrSignalBufferFull)
	}
	return nil
}

// sqlOldestSignal reads an execution's oldest buffered signal of a name.
// INDEXED BY: without statistics the planner walks all the execution's
// signals, the consumed ones kept for their keys included.
const sqlOldestSignal = `SELECT seq, data, idempotency_key FROM flow_signals INDEXED BY flow_signals_pending
	WHERE execution_id = ? AND name = ? AND consumed = 0 ORDER BY seq LIMIT 1`

// consumeSignal consumes the oldest buffered signal named name of execution
// id and returns its data; nil if none is buffered. A consumed signal's row
// is kept only for its idempotency key.
func consumeSignal(ctx context.Context, tx *sql.Tx, id, name string) (json.RawMessage, error) {
	var seq int64
	var data string
	var key sql.NullString
	err := tx.QueryRowContext(ctx, sqlOldestSignal, id, name).
		Scan(&seq, &data, &key)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: consume signal: %w", err)
	}
	query := `DELETE FROM flow_signals WHERE execution_id = ? AND seq = ?`
	if key.Valid {
		query = `UPDATE flow_signals SET consumed = 1 WHERE execution_id = ? AND seq = ?`
	}
	if _, err := tx.ExecContext(ctx, query, id, seq); err != nil {
		return nil, fmt.Errorf("sqlite: consume signal: %w", err)
	}
	return json.RawMessage(data), nil
}
