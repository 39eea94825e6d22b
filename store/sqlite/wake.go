package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/latch-run/latch/store"
)

// sqlDue reads the suspensions due at a time, earliest first.
const sqlDue = `SELECT id, suspend_step, waiting_for, attempt, wait_count IS NOT NULL FROM executions
	WHERE status = 'suspended' AND wake_at <= ? ORDER BY wake_at LIMIT ?`

// Wake implements store.Store: the due suspensions (executions_wake), read
// and ended in one transaction. A suspension Signal ended before is no
// longer suspended, and so is not read: each ends once.
func (s *Store) Wake(ctx context.Context, p *store.WakeParams) (*store.WakeResult, error) {
	t := now(p.Now)
	limit := store.BatchLimit(p.Limit)
	var ids []string
	err := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		ids = nil
		rows, err := tx.QueryContext(ctx, sqlDue, ns(t), limit)
		if err != nil {
			return false, fmt.Errorf("sqlite: wake: %w", err)
		}
		type due struct {
			id, step, waiting string
			wait, fanIn       bool
			attempt           int
		}
		var list []due
		for rows.Next() {
			var d due
			var step, waiting sql.NullString
			if err := rows.Scan(&d.id, &step, &waiting, &d.attempt, &d.fanIn); err != nil {
				rows.Close()
				return false, fmt.Errorf("sqlite: wake: %w", err)
			}
			d.step, d.waiting, d.wait = step.String, waiting.String, waiting.Valid
			list = append(list, d)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return false, fmt.Errorf("sqlite: wake: %w", err)
		}
		for _, d := range list {
			if spawn, ok := store.ChildrenWaitStep(d.waiting); ok && d.fanIn {
				// A fan-in wait's timeout: its children as they are now.
				if err := endFanIn(ctx, tx, d.id, d.step, spawn, d.attempt, true, store.MaxJournalBytes, t); err != nil {
					return false, err
				}
				ids = append(ids, d.id)
				continue
			}
			result := json.RawMessage("null") // a sleep's end
			if d.wait {
				result = store.TimedOut
			}
			st := store.Step{Name: d.step, Result: result, RecordedAt: t, Attempt: d.attempt}
			if _, _, err := recordStep(ctx, tx, d.id, &st, journalBounds{}); err != nil {
				return false, err
			}
			if err := resumeAt(ctx, tx, d.id, t); err != nil {
				return false, err
			}
			ids = append(ids, d.id)
		}
		return len(ids) > 0, nil
	})
	if err != nil {
		return nil, err
	}
	s.feed.Publish(ids...)
	return &store.WakeResult{Woken: len(ids)}, nil
}
