package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/latch-run/latch/store"
)

// SetScheduleEnabled's update: it changes the row only when its enabled
// flag differs, so a repeat is no change; a resume takes the next run given,
// and only while the timing is the one it was computed from.
const sqlSetScheduleEnabled = `UPDATE latch_schedules
SET enabled = $3, next_run_at = CASE WHEN $3 THEN $4 ELSE next_run_at END, updated_at = $5
WHERE tenant = $1 AND name = $2 AND enabled <> $3
  AND (NOT $3 OR (cron = $6 AND every = $7 AND timezone = $8))`

// SetScheduleEnabled implements store.Store: the update, then the schedule
// read back, in one transaction.
func (s *Store) SetScheduleEnabled(ctx context.Context, p *store.SetScheduleEnabledParams) (*store.Schedule, error) {
	var sc *store.Schedule
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) (bool, error) {
		if _, err := tx.Exec(ctx, sqlSetScheduleEnabled, p.Tenant, p.Name, p.Enabled, micro(p.NextRunAt), now(p.Now),
			p.Cron, int64(p.Every), p.Timezone); err != nil {
			return false, err
		}
		var err error
		sc, err = getRecord(ctx, tx, scanSchedule, "schedule", p.Name, sqlGetSchedule, p.Tenant, p.Name)
		return false, err
	})
	if err != nil {
		return nil, err
	}
	return sc, nil
}
