package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/latch-run/latch/store"
)

// sqlWake ends the suspensions due by $1, up to $2, oldest wake_at first
// (latch_executions_wake): each step is recorded (null after a sleep,
// store.TimedOut after a wait, $3) and the execution queued again at $1,
// a resume. The rows are locked with SKIP LOCKED: one that a Signal,
// Cancel or Delete holds is left to it and looked at by the next Wake, and
// one that changed since the snapshot is re-checked on its newest version
// (still suspended and due), so a suspension ends once (suspend.go).
const sqlWake = `
WITH x AS (
    SELECT id, suspend_step, waiting_for, attempt FROM latch_executions
    WHERE status = 'suspended' AND wake_at <= $1
    ORDER BY wake_at LIMIT $2
    FOR UPDATE SKIP LOCKED
), ins AS (
    INSERT INTO latch_steps (execution_id, name, result, recorded_at, attempt)
    SELECT x.id, x.suspend_step, CASE WHEN x.waiting_for IS NULL THEN 'null' ELSE $3 END, $1, x.attempt
    FROM x
    ON CONFLICT (execution_id, name) DO NOTHING
)
UPDATE latch_executions e SET status = 'queued', run_at = $1, resume = true, has_steps = true,
    wake_at = NULL, waiting_for = NULL, suspend_step = NULL
FROM x WHERE e.id = x.id
RETURNING e.id::text`

// Wake implements store.Store: one statement. Woken executions are
// claimable at once, so it wakes waiting workers as a submit does.
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
	if len(ids) > 0 {
		s.changes.announce()
		s.feed.Publish(ids...)
	}
	return &store.WakeResult{Woken: len(ids)}, nil
}
