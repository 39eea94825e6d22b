package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latch-run/latch/store"
)

// Schedule statements. A schedule is one row of latch_schedules; its
// Running is read from the executions (sqlRunning), never stored.
const (
	// scheduleColumns lists a schedule's columns in the order scanSchedule
	// reads them, for the alias s.
	scheduleColumns = `s.tenant, s.name, s.cron, s.every, s.timezone, s.kind, s.payload, s.queue, s.priority,
    s.max_attempts, s.timeout_seconds, s.rate_key, s.overlap, s.catchup, s.enabled, s.next_run_at,
    s.last_run_at, coalesce(s.last_execution_id::text, ''), s.created_at, s.updated_at, ` + sqlRunning

	// sqlRunning: an execution of schedule s (of its tenant) is running.
	sqlRunning = `EXISTS (SELECT 1 FROM latch_executions x
    WHERE x.tenant = s.tenant AND x.schedule = s.name AND x.status = 'running')`

	// Create or replace, in one statement: the primary key decides between
	// the two, and a replace runs on the row's newest version, locked. A
	// replace keeps LastRunAt, LastExecutionID and CreatedAt, and keeps
	// NextRunAt when the schedule was and stays enabled with the same timing
	// (store.Schedule.SameTiming: cron, every and time zone). xmax is 0 only
	// in a row version this statement inserted (the update of a conflicting
	// row leaves the lock it took in it), which tells Created. The foreign
	// key refuses an unknown tenant.
	sqlPutSchedule = `
INSERT INTO latch_schedules AS s (tenant, name, cron, every, timezone, kind, payload, queue, priority,
    max_attempts, timeout_seconds, rate_key, overlap, catchup, enabled, next_run_at, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $17)
ON CONFLICT (tenant, name) DO UPDATE SET cron = excluded.cron, every = excluded.every,
    timezone = excluded.timezone, kind = excluded.kind, payload = excluded.payload,
    queue = excluded.queue, priority = excluded.priority, max_attempts = excluded.max_attempts,
    timeout_seconds = excluded.timeout_seconds, rate_key = excluded.rate_key,
    overlap = excluded.overlap, catchup = excluded.catchup, enabled = excluded.enabled,
    next_run_at = CASE WHEN s.enabled AND excluded.enabled AND s.cron = excluded.cron
                            AND s.every = excluded.every AND s.timezone = excluded.timezone
                       THEN s.next_run_at ELSE excluded.next_run_at END,
    updated_at = excluded.updated_at
RETURNING s.xmax = 0, ` + scheduleColumns

	// Whether the schedule exists, and how many the tenant has.
	sqlCountSchedules = `
SELECT EXISTS (SELECT 1 FROM latch_schedules WHERE tenant = $1 AND name = $2),
       (SELECT count(*) FROM latch_schedules WHERE tenant = $1)`

	sqlGetSchedule = `SELECT ` + scheduleColumns + ` FROM latch_schedules s WHERE s.tenant = $1 AND s.name = $2`

	// FireSchedule's first step: the schedule's row, locked until the
	// commit. Fires of one schedule run one after the other from here.
	sqlLockSchedule = sqlGetSchedule + ` FOR UPDATE OF s`

	// The schedule's row names its tenant (a foreign key): the tenant is
	// there while the schedule is locked.
	sqlTenantDisabled = `SELECT disabled FROM latch_tenants WHERE name = $1`

	sqlDeleteSchedule = `DELETE FROM latch_schedules WHERE tenant = $1 AND name = $2`

	// A Drop: the next tick, nothing fired.
	sqlAdvanceSchedule = `UPDATE latch_schedules SET next_run_at = $3 WHERE tenant = $1 AND name = $2`

	// Record a fired tick $3 and its execution $4: the latest tick wins (a
	// late regular fire does not move LastRunAt back behind a trigger), and
	// a regular fire moves NextRunAt to $5 (NULL: a trigger leaves it).
	sqlRecordTick = `
UPDATE latch_schedules SET
    last_execution_id = CASE WHEN last_run_at IS NULL OR last_run_at <= $3 THEN $4::uuid
                             ELSE last_execution_id END,
    last_run_at = CASE WHEN last_run_at IS NULL OR last_run_at <= $3 THEN $3 ELSE last_run_at END,
    next_run_at = coalesce($5, next_run_at)
WHERE tenant = $1 AND name = $2`

	// The overlap-skip check: one execution of the schedule (of its tenant)
	// that is not terminal, held FOR SHARE until the commit. Under READ
	// COMMITTED a row another transaction is changing is waited for and
	// re-checked on its newest version, so one that is finishing right now
	// is seen finished once that commits, or, found live, cannot finish
	// before this transaction commits (Complete, Fail, Cancel, Rescue and
	// Delete all lock it): the answer holds at the commit (doc.go).
	sqlLiveExecution = `SELECT id FROM latch_executions
WHERE tenant = $1 AND schedule = $2 AND status IN ('scheduled', 'queued', 'running', 'suspended')
LIMIT 1 FOR SHARE`
)

// PutSchedule implements store.Store: one statement (sqlPutSchedule).
func (s *Store) PutSchedule(ctx context.Context, p *store.PutScheduleParams) (*store.PutScheduleResult, error) {
	sc := p.Schedule
	if err := store.ValidateSchedule(&sc); err != nil {
		return nil, err
	}
	payload := string(sc.Payload)
	if payload == "" {
		payload = "{}"
	}
	res := &store.PutScheduleResult{}
	args := []any{sc.Tenant, sc.Name, sc.Cron, int64(sc.Every), sc.Timezone, sc.Kind, payload,
		sc.Queue, sc.Priority, sc.MaxAttempts, sc.TimeoutSeconds, sc.RateKey, string(sc.Overlap),
		string(sc.Catchup), sc.Enabled, micro(sc.NextRunAt), now(p.Now)}
	scan := func(row pgx.Row) (err error) {
		res.Schedule, err = scanSchedule(prefixed{row, []any{&res.Created}})
		return err
	}
	if p.MaxSchedules > 0 {
		return res, s.putScheduleBounded(ctx, sc.Tenant, sc.Name, p.MaxSchedules, scan, args)
	}
	if err := s.putRecord(ctx, "schedule", sc.Tenant, scan, sqlPutSchedule, args...); err != nil {
		return nil, err
	}
	return res, nil
}

// putScheduleBounded is PutSchedule under a bound on the tenant's
// schedules, in one transaction: the tenant's creations take one advisory
// lock, so each counts after the commit of the one before (READ COMMITTED
// reads anew at each statement) and two cannot both see room for one. A
// delete takes no lock: it only lowers the count, so at worst a create
// that races it is refused as if it came just before.
func (s *Store) putScheduleBounded(ctx context.Context, tenant, name string, limit int, scan func(pgx.Row) error, args []any) error {
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) (bool, error) {
		if err := lockPairs(ctx, tx, lockSpaceScheduleSet, false, []string{tenant}, []string{""}); err != nil {
			return false, err
		}
		var exists bool
		var n int
		if err := tx.QueryRow(ctx, sqlCountSchedules, tenant, name).Scan(&exists, &n); err != nil {
			return false, err
		}
		if !exists && n >= limit {
			return false, fmt.Errorf("tenant %q has %d schedules: %w", tenant, n, store.ErrScheduleLimit)
		}
		return false, scan(tx.QueryRow(ctx, sqlPutSchedule, args...))
	})
	if pgCode(err) == codeForeignKeyViolation {
		return fmt.Errorf("tenant %q: %w", tenant, store.ErrNotFound)
	}
	return err
}

// GetSchedule implements store.Store.
func (s *Store) GetSchedule(ctx context.Context, p *store.GetScheduleParams) (*store.Schedule, error) {
	return getRecord(ctx, s.pool, scanSchedule, "schedule", p.Name, sqlGetSchedule, p.Tenant, p.Name)
}

// ListSchedules implements store.Store. The due ones come from the index
// latch_schedules_due.
func (s *Store) ListSchedules(ctx context.Context, p *store.ListSchedulesParams) ([]*store.Schedule, error) {
	limit := p.ListLimit()
	query := `SELECT ` + scheduleColumns + ` FROM latch_schedules s WHERE true`
	args := []any{limit}
	if p.Tenant != "" {
		args = append(args, p.Tenant)
		query += fmt.Sprintf(` AND s.tenant = $%d`, len(args))
	}
	if p.DueBy.IsZero() {
		args = append(args, p.After.Tenant, p.After.Name)
		query += fmt.Sprintf(` AND (s.tenant, s.name) > ($%d, $%d) ORDER BY s.tenant, s.name`, len(args)-1, len(args))
	} else {
		args = append(args, micro(p.DueBy))
		query += fmt.Sprintf(` AND s.enabled AND s.next_run_at <= $%d AND NOT EXISTS (SELECT 1 FROM latch_tenants t
			WHERE t.name = s.tenant AND t.disabled) ORDER BY s.next_run_at, s.tenant, s.name`, len(args))
	}
	rows, err := s.pool.Query(ctx, query+` LIMIT $1`, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list schedules: %w", interpretError(err))
	}
	defer rows.Close()
	var out []*store.Schedule
	for rows.Next() {
		sc, err := scanSchedule(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: list schedules: %w", interpretError(err))
		}
		out = append(out, sc)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list schedules: %w", interpretError(err))
	}
	return out, nil
}

// DeleteSchedule implements store.Store: one statement. The executions the
// schedule fired stay as they are.
func (s *Store) DeleteSchedule(ctx context.Context, p *store.DeleteScheduleParams) error {
	return s.deleteRecord(ctx, "schedule", p.Name, sqlDeleteSchedule, p.Tenant, p.Name)
}

// FireSchedule implements store.Store, as one transaction:
//
//  1. the schedule's row is locked (FOR UPDATE): fires of one schedule,
//     on any number of servers, run one after the other, and each sees
//     what the previous one committed. A regular fire then compare-and-sets
//     on NextRunAt; a Drop only advances it.
//  2. fireTick decides the tick under the schedule's exclusive lock (see
//     lockPairs): the tick's dedup key is bound as Admit binds it, then the
//     overlap check, then the admission (the quota), all in this
//     transaction.
//  3. the tick is recorded on the schedule.
//
// A refusal (ErrQuotaExceeded) rolls all of it back: the tick stays due.
func (s *Store) FireSchedule(ctx context.Context, p *store.FireScheduleParams) (*store.FireScheduleResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	t := now(p.Now)
	var res *store.FireScheduleResult
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) (bool, error) {
		res = &store.FireScheduleResult{}
		sc, err := scanSchedule(tx.QueryRow(ctx, sqlLockSchedule, p.Tenant, p.Name))
		if errors.Is(err, pgx.ErrNoRows) {
			return false, fmt.Errorf("schedule %q: %w", p.Name, store.ErrNotFound)
		}
		if err != nil {
			return false, err
		}
		var next *time.Time
		if !p.Trigger {
			if !sc.Enabled || !sc.NextRunAt.Equal(micro(p.Expected)) {
				return false, nil // moved on by another server, or changed, paused or replaced
			}
			var disabled bool
			if err := tx.QueryRow(ctx, sqlTenantDisabled, p.Tenant).Scan(&disabled); err != nil || disabled {
				return false, err // the tick waits for the tenant to be enabled
			}
			n := micro(p.Next)
			next, res.Advanced = &n, true
			if p.Drop {
				_, err := tx.Exec(ctx, sqlAdvanceSchedule, p.Tenant, p.Name, n)
				return false, err
			}
		}
		x, dedup, changed, err := fireTick(ctx, tx, sc, p.DedupKey(), t)
		if err != nil {
			return false, err
		}
		if _, err := tx.Exec(ctx, sqlRecordTick, p.Tenant, p.Name, micro(p.Tick), x.ID, next); err != nil {
			return false, err
		}
		res.Execution, res.Deduplicated = x, dedup
		return changed, nil
	})
	if err != nil {
		return nil, err
	}
	return s.feed.Fired(res, nil)
}

// fireTick decides the tick of schedule sc, whose row the transaction
// holds, as FireSchedule's steps 2 to 4 say, and returns its execution:
// the one the tick's dedup key maps to (dedup), a skipped one (overlap skip
// while one of the schedule's executions is not terminal) or the one
// admitted. changed reports whether an execution was inserted.
//
// The schedule's lock is taken exclusive before anything is read, and
// every admission of an execution of the schedule holds it shared until it
// commits (lockSchedules): an execution of the schedule inserted by a
// transaction that has not committed yet cannot exist while this one
// checks. With the row lock, this makes the overlap check exact.
func fireTick(ctx context.Context, tx pgx.Tx, sc *store.Schedule, dedupKey string, t time.Time) (x *store.Execution, dedup, changed bool, err error) {
	if err := lockSchedules(ctx, tx, sc.Tenant, []string{sc.Name}, false); err != nil {
		return nil, false, false, err
	}
	sub := store.TickSubmission(sc, dedupKey)
	items := []item{prepare(sc.Tenant, &sub, t)}
	if err := items[0].err; err != nil {
		return nil, false, false, err
	}
	// 2. The tick's dedup key, bound as Admit binds it: a key that maps to
	// a live execution makes that execution the tick's, whatever it holds.
	// A trigger without a key binds none: it is a tick of its own.
	a, err := bindAdmission(ctx, tx, sc.Tenant, items, t, true)
	if err != nil {
		return nil, false, false, err
	}
	if a.dec[0] == decHit { // the hit counted on the execution (dedup.go)
		return a.res.Items[0].Execution, true, false, nil
	}
	// 3. Overlap skip: the key, now bound to the tick's id, maps to the
	// skipped record, which holds no quota unit.
	if sc.Overlap == store.OverlapSkip {
		live, err := liveExecution(ctx, tx, sc.Tenant, sc.Name)
		if err != nil {
			return nil, false, false, err
		}
		if live {
			items[0].exec = store.NewSkippedExecution(items[0].exec.ID, sc.Tenant, &sub, t)
			if err := insertExecutions(ctx, tx, sc.Tenant, items, []int{0}, t); err != nil {
				return nil, false, false, err
			}
			return items[0].exec, false, true, nil
		}
	}
	// 4. Admitted as Admit admits: the quota, then the insert.
	res, changed, err := a.finish(ctx, tx)
	if err != nil {
		return nil, false, false, err
	}
	if err := res.Items[0].Err; err != nil {
		return nil, false, false, err
	}
	return res.Items[0].Execution, false, changed, nil
}

// liveExecution reports whether an execution of the tenant's schedule is
// not terminal, holding it so until the commit (sqlLiveExecution).
func liveExecution(ctx context.Context, tx pgx.Tx, tenant, name string) (bool, error) {
	var id any
	err := tx.QueryRow(ctx, sqlLiveExecution, tenant, name).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

func scanSchedule(row pgx.Row) (*store.Schedule, error) {
	var (
		sc                        store.Schedule
		every                     int64
		payload, overlap, catchup string
	)
	err := row.Scan(&sc.Tenant, &sc.Name, &sc.Cron, &every, &sc.Timezone, &sc.Kind, &payload, &sc.Queue,
		&sc.Priority, &sc.MaxAttempts, &sc.TimeoutSeconds, &sc.RateKey, &overlap, &catchup, &sc.Enabled,
		&sc.NextRunAt, &sc.LastRunAt, &sc.LastExecutionID, &sc.CreatedAt, &sc.UpdatedAt, &sc.Running)
	if err != nil {
		return nil, err
	}
	sc.Every, sc.Payload = time.Duration(every), []byte(payload)
	sc.Overlap, sc.Catchup = store.Overlap(overlap), store.Catchup(catchup)
	sc.NextRunAt, sc.CreatedAt, sc.UpdatedAt = sc.NextRunAt.UTC(), sc.CreatedAt.UTC(), sc.UpdatedAt.UTC()
	sc.LastRunAt = utcPtr(sc.LastRunAt)
	return &sc, nil
}
