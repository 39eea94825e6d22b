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

// scheduleColumns are read by scanSchedule. running is computed: an
// execution of the schedule (of its tenant) is running, a seek on the
// executions_schedule index.
const scheduleColumns = `tenant, name, cron, every, timezone, kind, payload, queue, priority,
	max_attempts, timeout_seconds, rate_key, overlap, catchup, enabled, next_run_at, last_run_at,
	last_execution_id, created_at, updated_at,
	EXISTS (SELECT 1 FROM executions e WHERE e.tenant = schedules.tenant
		AND e.schedule = schedules.name AND e.status = 'running')`

func scanSchedule(row scanner) (*store.Schedule, error) {
	var (
		s                     store.Schedule
		every                 int64
		payload, overlap, cu  string
		nextRun, created, upd int64
		lastRun               sql.NullInt64
		lastExec              sql.NullString
		enabled, running      bool
	)
	err := row.Scan(&s.Tenant, &s.Name, &s.Cron, &every, &s.Timezone, &s.Kind, &payload, &s.Queue,
		&s.Priority, &s.MaxAttempts, &s.TimeoutSeconds, &s.RateKey, &overlap, &cu, &enabled,
		&nextRun, &lastRun, &lastExec, &created, &upd, &running)
	if err != nil {
		return nil, err
	}
	s.Every, s.Payload = durationNS(every), json.RawMessage(payload)
	s.Overlap, s.Catchup, s.Enabled, s.Running = store.Overlap(overlap), store.Catchup(cu), enabled, running
	s.NextRunAt, s.LastRunAt, s.LastExecutionID = fromNS(nextRun), nullTime(lastRun), lastExec.String
	s.CreatedAt, s.UpdatedAt = fromNS(created), fromNS(upd)
	return &s, nil
}

// getSchedule reads one schedule; ErrNotFound if the tenant has none of
// that name.
func getSchedule(ctx context.Context, q querier, tenant, name string) (*store.Schedule, error) {
	return getOne(ctx, q, scanSchedule, fmt.Sprintf("schedule %q", name), "get schedule",
		`SELECT `+scheduleColumns+` FROM schedules WHERE tenant = ? AND name = ?`, tenant, name)
}

// PutSchedule implements store.Store. The old row is read and the new one
// written in one transaction, so a replace decides on the NextRunAt it
// keeps against the row it replaces.
func (s *Store) PutSchedule(ctx context.Context, p *store.PutScheduleParams) (*store.PutScheduleResult, error) {
	t := now(p.Now)
	in := p.Schedule
	if err := store.ValidateSchedule(&in); err != nil {
		return nil, err
	}
	if len(in.Payload) == 0 {
		in.Payload = json.RawMessage("{}")
	}
	res := &store.PutScheduleResult{}
	err := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		if _, err := getTenant(ctx, tx, in.Tenant); err != nil {
			return false, err
		}
		old, err := getSchedule(ctx, tx, in.Tenant, in.Name)
		switch {
		case errors.Is(err, store.ErrNotFound):
			res.Created = true
			if p.MaxSchedules > 0 {
				// The single writer runs this transaction alone: the
				// count holds until the insert.
				var n int
				if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schedules WHERE tenant = ?`,
					in.Tenant).Scan(&n); err != nil {
					return false, fmt.Errorf("sqlite: put schedule: %w", err)
				}
				if n >= p.MaxSchedules {
					return false, fmt.Errorf("tenant %q has %d schedules: %w", in.Tenant, n, store.ErrScheduleLimit)
				}
			}
		case err != nil:
			return false, err
		case old.Enabled && in.Enabled && old.SameTiming(&in):
			in.NextRunAt = old.NextRunAt
		}
		// The upsert leaves last_run_at, last_execution_id and created_at
		// of a replaced row as they are.
		_, err = tx.ExecContext(ctx, `INSERT INTO schedules (tenant, name, cron, every, timezone,
			kind, payload, queue, priority, max_attempts, timeout_seconds, rate_key, overlap, catchup,
			enabled, next_run_at, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (tenant, name) DO UPDATE SET cron = excluded.cron, every = excluded.every,
			timezone = excluded.timezone, kind = excluded.kind, payload = excluded.payload,
			queue = excluded.queue, priority = excluded.priority,
			max_attempts = excluded.max_attempts, timeout_seconds = excluded.timeout_seconds,
			rate_key = excluded.rate_key, overlap = excluded.overlap, catchup = excluded.catchup,
			enabled = excluded.enabled, next_run_at = excluded.next_run_at,
			updated_at = excluded.updated_at`,
			in.Tenant, in.Name, in.Cron, int64(in.Every), in.Timezone, in.Kind, string(in.Payload),
			in.Queue, in.Priority, in.MaxAttempts, in.TimeoutSeconds, in.RateKey, string(in.Overlap),
			string(in.Catchup), in.Enabled, ns(in.NextRunAt), ns(t), ns(t))
		if err != nil {
			return false, fmt.Errorf("sqlite: put schedule: %w", err)
		}
		res.Schedule, err = getSchedule(ctx, tx, in.Tenant, in.Name)
		return false, err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// GetSchedule implements store.Store.
func (s *Store) GetSchedule(ctx context.Context, p *store.GetScheduleParams) (*store.Schedule, error) {
	return interpreted(getSchedule(ctx, s.read, p.Tenant, p.Name))
}

// ListSchedules implements store.Store. With DueBy it walks the
// schedules_due index, else the primary key.
func (s *Store) ListSchedules(ctx context.Context, p *store.ListSchedulesParams) ([]*store.Schedule, error) {
	query, args := listSchedulesQuery(p)
	rows, err := s.read.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list schedules: %w", interpretError(err))
	}
	defer rows.Close()
	var out []*store.Schedule
	for rows.Next() {
		sc, err := scanSchedule(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list schedules: %w", interpretError(err))
		}
		out = append(out, sc)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list schedules: %w", interpretError(err))
	}
	return out, nil
}

// listSchedulesQuery is ListSchedules' query: by tenant then name, or with
// DueBy the due ones earliest first (the primary key, which follows
// next_run_at in schedules_due, orders ties).
func listSchedulesQuery(p *store.ListSchedulesParams) (string, []any) {
	limit := p.ListLimit()
	query := `SELECT ` + scheduleColumns + ` FROM schedules WHERE `
	var args []any
	if p.Tenant != "" {
		query += `tenant = ? AND `
		args = append(args, p.Tenant)
	}
	if p.DueBy.IsZero() {
		query += `(tenant, name) > (?, ?) ORDER BY tenant, name LIMIT ?`
		args = append(args, p.After.Tenant, p.After.Name)
	} else {
		query += `enabled = 1 AND next_run_at <= ? AND NOT EXISTS (SELECT 1 FROM tenants t
			WHERE t.name = schedules.tenant AND t.disabled = 1) ORDER BY next_run_at, tenant, name LIMIT ?`
		args = append(args, ns(p.DueBy))
	}
	return query, append(args, limit)
}

// DeleteSchedule implements store.Store. The executions it fired stay.
func (s *Store) DeleteSchedule(ctx context.Context, p *store.DeleteScheduleParams) error {
	return s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		r, err := tx.ExecContext(ctx, `DELETE FROM schedules WHERE tenant = ? AND name = ?`, p.Tenant, p.Name)
		if err != nil {
			return false, fmt.Errorf("sqlite: delete schedule: %w", err)
		}
		if n, _ := r.RowsAffected(); n == 0 {
			return false, fmt.Errorf("schedule %q: %w", p.Name, store.ErrNotFound)
		}
		return false, nil
	})
}

// SetScheduleEnabled implements store.Store: one UPDATE that changes a
// schedule only when its Enabled flag differs (and, to resume, its timing
// is the one given), then the schedule read back, in one transaction.
func (s *Store) SetScheduleEnabled(ctx context.Context, p *store.SetScheduleEnabledParams) (*store.Schedule, error) {
	t := now(p.Now)
	var sc *store.Schedule
	err := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		var err error
		if p.Enabled {
			_, err = tx.ExecContext(ctx, `UPDATE schedules SET enabled = 1, next_run_at = ?, updated_at = ?
				WHERE tenant = ? AND name = ? AND enabled = 0 AND cron = ? AND every = ? AND timezone = ?`,
				ns(p.NextRunAt), ns(t), p.Tenant, p.Name, p.Cron, int64(p.Every), p.Timezone)
		} else {
			_, err = tx.ExecContext(ctx, `UPDATE schedules SET enabled = 0, updated_at = ?
				WHERE tenant = ? AND name = ? AND enabled = 1`, ns(t), p.Tenant, p.Name)
		}
		if err != nil {
			return false, fmt.Errorf("sqlite: set schedule enabled: %w", err)
		}
		sc, err = getSchedule(ctx, tx, p.Tenant, p.Name)
		return false, err
	})
	if err != nil {
		return nil, err
	}
	return sc, nil
}

// FireSchedule implements store.Store. The whole tick is one IMMEDIATE
// transaction (one step of the writer): the compare-and-set on
// next_run_at, the dedup lookup, the overlap check, the insert of the
// admitted or skipped execution with its dedup mapping and quota slot, and
// the schedule's advance. No other writer, in this process or another
// sharing the file, runs between the check that no execution of the
// schedule is in flight and the insert that depends on it (I6).
func (s *Store) FireSchedule(ctx context.Context, p *store.FireScheduleParams) (*store.FireScheduleResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	t := now(p.Now)
	var res *store.FireScheduleResult
	err := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		res = &store.FireScheduleResult{}
		sc, err := getSchedule(ctx, tx, p.Tenant, p.Name)
		if err != nil {
			return false, err
		}
		if !p.Trigger {
			if !sc.Enabled || !sc.NextRunAt.Equal(p.Expected) {
				return false, nil // moved on by another server, or changed
			}
			if ten, err := getTenant(ctx, tx, p.Tenant); err != nil || ten.Disabled {
				return false, err // the tick waits for the tenant to be enabled
			}
			if p.Drop {
				res.Advanced = true
				return false, advanceSchedule(ctx, tx, sc, p.Next)
			}
		}
		res.Execution, res.Deduplicated, err = fireTick(ctx, tx, sc, p, t)
		if err != nil {
			return false, err
		}
		if err := recordTick(ctx, tx, sc, p.Tick, res.Execution.ID); err != nil {
			return false, err
		}
		if !p.Trigger {
			res.Advanced = true
			if err := advanceSchedule(ctx, tx, sc, p.Next); err != nil {
				return false, err
			}
		}
		return !res.Deduplicated, nil
	})
	if err != nil {
		return nil, err
	}
	return s.feed.Fired(res, nil)
}

// fireTick finds or makes the tick's execution: the one its dedup key maps
// to, a skipped record while an execution of the schedule is in flight
// (overlap skip), else a new admission under the tenant's quota. A full
// quota is returned as an error wrapping ErrQuotaExceeded, and the step
// then rolls back whole.
func fireTick(ctx context.Context, tx *sql.Tx, sc *store.Schedule, p *store.FireScheduleParams, t time.Time) (*store.Execution, bool, error) {
	sub := store.TickSubmission(sc, p.DedupKey())
	if sub.DedupKey != "" { // a trigger without a key is a tick of its own
		e, err := liveDedup(ctx, tx, sc.Tenant, sub.DedupKey, t)
		if err != nil {
			return nil, false, err
		}
		if e != nil {
			return e, true, countDedupHit(ctx, tx, e, t)
		}
	}
	q, err := loadQuota(ctx, tx, sc.Tenant)
	if err != nil {
		return nil, false, err
	}
	if sc.Overlap == store.OverlapSkip {
		busy, err := scheduleInFlight(ctx, tx, sc.Tenant, sc.Name)
		if err != nil {
			return nil, false, err
		}
		if busy {
			e := store.NewSkippedExecution(newID(&sub), sc.Tenant, &sub, t)
			return e, false, insertWithDedup(ctx, tx, e, t, q.dedupTTL)
		}
	}
	a, err := admitNew(ctx, tx, sc.Tenant, &sub, t, &q, 0)
	if err != nil {
		return nil, false, err
	}
	if a.Err != nil {
		return nil, false, fmt.Errorf("schedule %q tick %s: %w", sc.Name, p.Tick.UTC().Format(time.RFC3339), a.Err)
	}
	return a.Execution, false, addInflight(ctx, tx, sc.Tenant, 1, a.Execution.StoredBytes)
}

const sqlScheduleInFlight = `SELECT EXISTS (SELECT 1 FROM executions
	WHERE tenant = ? AND schedule = ? AND status IN ('scheduled', 'queued', 'running', 'suspended'))`

// scheduleInFlight reports whether an execution of the tenant's schedule is
// not terminal: a seek on the executions_schedule index.
func scheduleInFlight(ctx context.Context, tx *sql.Tx, tenant, name string) (bool, error) {
	var busy bool
	err := tx.QueryRowContext(ctx, sqlScheduleInFlight, tenant, name).Scan(&busy)
	if err != nil {
		return false, fmt.Errorf("sqlite: fire schedule: overlap: %w", err)
	}
	return busy, nil
}

// recordTick makes tick and its execution the schedule's last, unless a
// later tick was already fired (a trigger ahead of a catch-up tick).
func recordTick(ctx context.Context, tx *sql.Tx, sc *store.Schedule, tick time.Time, execID string) error {
	if sc.LastRunAt != nil && tick.Before(*sc.LastRunAt) {
		return nil
	}
	_, err := tx.ExecContext(ctx, `UPDATE schedules SET last_run_at = ?, last_execution_id = ?
		WHERE tenant = ? AND name = ?`, ns(tick), execID, sc.Tenant, sc.Name)
	if err != nil {
		return fmt.Errorf("sqlite: fire schedule: %w", err)
	}
	return nil
}

// advanceSchedule moves the schedule's next tick to next.
func advanceSchedule(ctx context.Context, tx *sql.Tx, sc *store.Schedule, next time.Time) error {
	_, err := tx.ExecContext(ctx, `UPDATE schedules SET next_run_at = ? WHERE tenant = ? AND name = ?`,
		ns(next), sc.Tenant, sc.Name)
	if err != nil {
		return fmt.Errorf("sqlite: fire schedule: %w", err)
	}
	return nil
}
