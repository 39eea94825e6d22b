package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/latch-run/latch/store"
)

// sqlWake ends the suspensions due by $1, up to $2, oldest wake_at first
// (latch_executions_wake): each step is recorded (null after a sleep,
// store.TimedOut after a wait, $3) and the execution queued again at $1,
// a resume. The rows are locked in (wake_at, id) order, waiting for any
// that a Signal, Cancel or Delete holds: skipping them (SKIP LOCKED) would
// leave a due suspension for a later Wake whenever a signal that is only
// being kept touched it, and Wake promises every due one. A row that
// changed meanwhile is re-checked on its newest version (still suspended
// and due), so a suspension ends once (suspend.go); two Wakes lock in one
// order, so they do not deadlock. A wait for an event times out here too
// (TimedOut): a publish that matches it locks it first (events.go), so
// the wait ends once. Fan-in waits (wait_count set) are sqlWakeFanIn's.
const sqlWake = `
WITH x AS (
    SELECT id, suspend_step, waiting_for, attempt FROM latch_executions
    WHERE status = 'suspended' AND wake_at <= $1 AND wait_count IS NULL
    ORDER BY wake_at, id LIMIT $2
    FOR UPDATE
), ins AS (
    INSERT INTO latch_steps (execution_id, name, result, recorded_at, attempt)
    SELECT x.id, x.suspend_step, CASE WHEN x.waiting_for IS NULL THEN 'null' ELSE $3 END, $1, x.attempt
    FROM x
    ON CONFLICT (execution_id, name) DO NOTHING
)
UPDATE latch_executions e SET status = 'queued', run_at = $1, resume = true, has_steps = true,
    wake_at = NULL, waiting_for = NULL, suspend_step = NULL, wait_key = NULL, wait_since = NULL
FROM x WHERE e.id = x.id
RETURNING e.id::text`

// sqlWakeFanIn locks the fan-in waits due by $1, up to $2, as sqlWake
// locks its suspensions; wakeFanIn ends each in Go (store.FanInStep).
const sqlWakeFanIn = `SELECT id, coalesce(suspend_step, ''), coalesce(waiting_for, '') FROM latch_executions
WHERE status = 'suspended' AND wake_at <= $1 AND wait_count IS NOT NULL
ORDER BY wake_at, id LIMIT $2
FOR UPDATE`

// Wake implements store.Store: one statement for the sleeps and the waits
// for a signal, then one transaction for the fan-in waits, whose steps
// (every child as it is now, TimedOut) are built from their children.
// Woken executions are claimable at once, so it wakes waiting workers as a
// submit does.
func (s *Store) Wake(ctx context.Context, p *store.WakeParams) (*store.WakeResult, error) {
	t := now(p.Now)
	limit := store.BatchLimit(p.Limit)
	var ids []string
	err := s.write(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		rows, err := c.Query(ctx, sqlWake, t, limit, string(store.TimedOut))
		if err != nil {
			return err
		}
		ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: wake: %w", interpretError(err))
	}
	if rest := limit - len(ids); rest > 0 {
		var fanIns []string
		err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) (bool, error) {
			var err error
			fanIns, err = wakeFanIn(ctx, tx, t, rest)
			return len(fanIns) > 0, err
		})
		if err != nil {
			return nil, fmt.Errorf("postgres: wake: %w", err)
		}
		ids = append(ids, fanIns...)
	}
	if len(ids) > 0 {
		s.changes.announce()
		s.feed.Publish(ids...)
	}
	return &store.WakeResult{Woken: len(ids)}, nil
}

// wakeFanIn ends the fan-in waits due at t, up to limit, timed out.
func wakeFanIn(ctx context.Context, tx pgx.Tx, t time.Time, limit int) ([]string, error) {
	rows, err := tx.Query(ctx, sqlWakeFanIn, t, limit)
	if err != nil {
		return nil, err
	}
	type due struct {
		id               uuid.UUID
		step, waitingFor string
	}
	var dues []due
	var d due
	if _, err := pgx.ForEachRow(rows, []any{&d.id, &d.step, &d.waitingFor}, func() error {
		dues = append(dues, d)
		return nil
	}); err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(dues))
	for _, d := range dues {
		spawn, _ := store.ChildrenWaitStep(d.waitingFor)
		if err := endFanIn(ctx, tx, d.id, spawn, d.step, t, true, store.MaxJournalBytes); err != nil {
			return nil, err
		}
		ids = append(ids, d.id.String())
	}
	return ids, nil
}
