package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/latch-run/latch/store"
)

// Signal statements (I11). Signals of one execution are decided one after
// the other on its row lock (suspend.go), so seq, taken under it, is their
// arrival order.
const (
	// The execution, locked: $1 id, $2 tenant ('' = any).
	// A fan-in wait (wait_count set) and a wait for an event (wait_since
	// set) wait for no signal, whatever their waiting_for reads.
	sqlSignalLock = `SELECT status, CASE WHEN wait_count IS NULL AND wait_since IS NULL THEN coalesce(waiting_for, '') END
FROM latch_executions
WHERE id = $1 AND ($2 = '' OR tenant = $2) FOR UPDATE`

	// The step a wait's end records, and the journal's bytes.
	sqlSignalRoom = `SELECT suspend_step, ` + sqlJournalBytes + ` FROM latch_executions WHERE id = $1`

	// The first answer to a signal with idempotency key $2.
	sqlSignalAnswered = `SELECT delivered FROM latch_signals WHERE execution_id = $1 AND idempotency_key = $2`

	// Keep signal $3 with data $4 ($2 now, $5 idempotency key) for a later
	// wait, unless the execution keeps $6 signals already (no row then).
	// It runs after the lock, so its count sees every signal kept or
	// consumed before.
	sqlSignalBuffer = `INSERT INTO latch_signals (execution_id, name, data, consumed, delivered, idempotency_key, sent_at)
SELECT $1, $3, $4, false, false, $5, $2
WHERE (SELECT count(*) FROM latch_signals WHERE execution_id = $1 AND NOT consumed) < $6`

	// End the wait with the signal: its step is recorded with the data and
	// the execution queued again at $2, a resume. A signal with a key
	// keeps its row, consumed, for its answer.
	sqlSignalDeliver = `
WITH sg AS (
    INSERT INTO latch_signals (execution_id, name, data, consumed, delivered, idempotency_key, sent_at)
    SELECT $1, $3, $4, true, true, $5, $2 WHERE $5::text IS NOT NULL
), ins AS (
    INSERT INTO latch_steps (execution_id, name, result, recorded_at, attempt)
    SELECT id, suspend_step, $4, $2, attempt FROM latch_executions WHERE id = $1
    ON CONFLICT (execution_id, name) DO NOTHING
)
UPDATE latch_executions SET status = 'queued', run_at = $2, resume = true, has_steps = true,
    wake_at = NULL, waiting_for = NULL, suspend_step = NULL
WHERE id = $1`
)

// Signal implements store.Store, as one transaction: the execution is
// locked, then a repeat of an idempotency key is answered as the first
// time, and a new signal ends the execution's wait for it or is buffered.
func (s *Store) Signal(ctx context.Context, p *store.SignalParams) (*store.SignalResult, error) {
	if err := store.CheckSignalName(p.Name); err != nil {
		return nil, err
	}
	t := now(p.Now)
	id, ok := parseID(p.ExecutionID)
	if !ok {
		return nil, fmt.Errorf("execution %q: %w", p.ExecutionID, store.ErrNotFound)
	}
	data := "null"
	if p.Data != nil {
		data = string(p.Data)
	}
	key := strPtr(p.IdempotencyKey)
	var res store.SignalResult
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) (bool, error) {
		res = store.SignalResult{}
		var status string
		var waiting *string
		err := tx.QueryRow(ctx, sqlSignalLock, id, p.Tenant).Scan(&status, &waiting)
		if errors.Is(err, pgx.ErrNoRows) {
			return false, fmt.Errorf("execution %s: %w", p.ExecutionID, store.ErrNotFound)
		}
		if err != nil {
			return false, err
		}
		if key != nil {
			err := tx.QueryRow(ctx, sqlSignalAnswered, id, *key).Scan(&res.Delivered)
			if err == nil {
				return false, nil
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return false, err
			}
		}
		if store.Status(status).Terminal() {
			return false, fmt.Errorf("execution %s is %s: %w", p.ExecutionID, status, store.ErrNotActive)
		}
		// The data counts in the storage budget, whether it ends a wait or
		// waits, checked after the flow's own bounds as on every backend (a
		// refusal rolls the transaction back).
		if store.Status(status) != store.StatusSuspended || waiting == nil || *waiting != p.Name {
			tag, err := tx.Exec(ctx, sqlSignalBuffer, id, t, p.Name, data, key, p.BufferBound())
			if err == nil && tag.RowsAffected() == 0 {
				err = fmt.Errorf("execution %s keeps %d signals, its bound: %w", p.ExecutionID, p.BufferBound(),
					store.ErrSignalBufferFull)
			}
			if err != nil {
				return false, err
			}
			return false, charge(ctx, tx, id, int64(len(data)))
		}
		var step string
		var size int
		if err := tx.QueryRow(ctx, sqlSignalRoom, id).Scan(&step, &size); err != nil {
			return false, err
		}
		if n := store.StepSize(step, []byte(data)); size+n > p.ByteBound() {
			return false, fmt.Errorf("execution %s holds %d bytes of steps, the wait's step of %d passes its bound %d: %w",
				p.ExecutionID, size, n, p.ByteBound(), store.ErrJournalTooLarge)
		}
		if err := charge(ctx, tx, id, int64(len(data))); err != nil {
			return false, err
		}
		res.Delivered = true
		_, err = tx.Exec(ctx, sqlSignalDeliver, id, t, p.Name, data, key)
		return true, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: signal: %w", err)
	}
	if res.Delivered {
		s.feed.Publish(p.ExecutionID)
	}
	return &res, nil
}
