package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// Overlap is what a schedule's tick does while an earlier execution of the
// same schedule is not terminal.
type Overlap string

// The overlap policies of docs/api.md ("Schedules").
const (
	// OverlapSkip records the tick's execution as skipped (terminal, no
	// quota slot, never runs) while an earlier one is not terminal.
	OverlapSkip Overlap = "skip"
	// OverlapQueue admits the tick; it waits its turn behind the earlier
	// ones (the schedule's concurrency key, limit 1: never two running).
	OverlapQueue Overlap = "queue"
	// OverlapAllow admits and runs the tick regardless.
	OverlapAllow Overlap = "allow"
)

// Valid reports whether o is one of the defined policies.
func (o Overlap) Valid() bool {
	return o == OverlapSkip || o == OverlapQueue || o == OverlapAllow
}

// Catchup is what a schedule does about ticks missed while no server ran it.
type Catchup string

// The catch-up policies of docs/api.md ("Schedules").
const (
	// CatchupNone drops missed ticks: the schedule resumes at its next tick.
	CatchupNone Catchup = "none"
	// CatchupOne runs one execution, at once, for all the missed ticks.
	CatchupOne Catchup = "one"
)

// Valid reports whether c is one of the defined policies.
func (c Catchup) Valid() bool { return c == CatchupNone || c == CatchupOne }

// Schedule is a tenant's recurring submission. The store keeps it and fires
// its ticks atomically (FireSchedule); it does not read Cron, Every or
// Timezone — the engine computes tick times (package schedule) and hands
// them in.
type Schedule struct {
	Tenant   string
	Name     string
	Cron     string        // 5 or 6 fields; "" when Every is set
	Every    time.Duration // 0 when Cron is set
	Timezone string        // IANA name of Cron's zone; "UTC" by default

	// What each tick submits.
	Kind           string
	Payload        json.RawMessage // canonical JSON, never nil
	Queue          string
	Priority       int
	MaxAttempts    int // 0 = DefaultMaxAttempts
	TimeoutSeconds int // 0 = DefaultTimeoutSeconds
	RateKey        string

	Overlap Overlap
	Catchup Catchup
	Enabled bool

	// NextRunAt is the next tick the scheduler will fire, once it is due
	// (meaningful only while Enabled).
	NextRunAt time.Time
	// LastRunAt and LastExecutionID describe the latest tick fired (a
	// trigger included), whatever became of it (a skipped tick included).
	LastRunAt       *time.Time
	LastExecutionID string
	// Running is computed on read: an execution of this schedule is running.
	Running bool

	CreatedAt time.Time
	UpdatedAt time.Time
}

// SameTiming reports whether s and o tick at the same times.
func (s *Schedule) SameTiming(o *Schedule) bool {
	return s.Cron == o.Cron && s.Every == o.Every && s.Timezone == o.Timezone
}

// ScheduleDedupKey is the dedup key of a schedule's tick (docs/api.md): any number
// of servers firing the tick admit one execution.
func ScheduleDedupKey(name string, tick time.Time) string {
	return "schedule:" + name + ":" + strconv.FormatInt(tick.Unix(), 10)
}

// ScheduleTriggerDedupKey is the dedup key of a trigger (an off-cycle tick)
// sent with an idempotency key: scoped to the schedule, and kept like any
// dedup key (the tenant's dedup TTL), so a repeat of the request answers the
// first one's execution. The key is hashed: the result is bounded in length
// whatever the client sent, and cannot end like another schedule's key
// (names may hold ':') or a regular tick's (digits).
func ScheduleTriggerDedupKey(name, idempotencyKey string) string {
	sum := sha256.Sum256([]byte(idempotencyKey))
	return "schedule:" + name + ":trigger:" + hex.EncodeToString(sum[:])
}

// ScheduleConcurrencyKey is the concurrency key (limit 1) of the executions
// of a schedule with overlap skip or queue: never two of them run at once
// (I6), enforced by Claim like any concurrency key (I4).
func ScheduleConcurrencyKey(name string) string {
	return "schedule:" + name
}

// TickSubmission is the submission s fires for a tick under dedupKey
// (FireScheduleParams.DedupKey): the schedule's settings and name, and for
// overlap skip and queue the schedule's concurrency key with limit 1.
func TickSubmission(s *Schedule, dedupKey string) Submission {
	sub := Submission{
		Kind:           s.Kind,
		Queue:          s.Queue,
		Priority:       s.Priority,
		Payload:        s.Payload,
		DedupKey:       dedupKey,
		MaxAttempts:    s.MaxAttempts,
		TimeoutSeconds: s.TimeoutSeconds,
		RateKey:        s.RateKey,
		Schedule:       s.Name,
	}
	if s.Overlap != OverlapAllow {
		sub.ConcurrencyKey = ScheduleConcurrencyKey(s.Name)
		sub.ConcurrencyLimit = 1
	}
	return sub
}

// SkippedPayload is the payload of a skipped tick: JSON null, "not
// stored". The tick would have run with its schedule's payload, which the
// schedule holds.
var SkippedPayload = json.RawMessage("null")

// NewSkippedExecution is the record of a tick dropped by overlap skip: the
// tick's execution built as Admit would, then ended skipped at now. It holds
// no quota slot and never runs; its dedup key is kept like any other's.
// It keeps no copy of the schedule's payload (SkippedPayload): a schedule
// skipping every second would otherwise store its payload once a second.
func NewSkippedExecution(id, tenant string, sub *Submission, now time.Time) *Execution {
	e := NewExecution(id, tenant, sub, now)
	e.Status = StatusSkipped
	e.Payload, e.StoredBytes = SkippedPayload, 0
	e.RunAt = now.UTC()
	fin := now.UTC()
	e.FinishedAt = &fin
	return e
}

// PutScheduleParams are the arguments of Store.PutSchedule. Schedule holds
// the tenant, the name and every setting; its NextRunAt is the first tick
// after Now for these settings (the caller computes it). Its LastRunAt,
// LastExecutionID, Running, CreatedAt and UpdatedAt are ignored.
type PutScheduleParams struct {
	Schedule Schedule
	// MaxSchedules, when > 0, bounds the tenant's schedules: a Put that
	// would create one more than that fails with ErrScheduleLimit, the
	// count and the insert being one atomic step. A replace is never
	// refused. 0 = no bound.
	MaxSchedules int
	Now          time.Time
}

// SetScheduleEnabledParams are the arguments of Store.SetScheduleEnabled.
type SetScheduleEnabledParams struct {
	Tenant  string
	Name    string
	Enabled bool
	// NextRunAt is the first tick after Now by the schedule's timing: the
	// resumed schedule's next tick. Ignored when pausing.
	NextRunAt time.Time
	// Cron, Every and Timezone are the timing NextRunAt was computed from
	// (the caller read it from the schedule). A resume applies only while
	// the schedule still has this timing (SameTiming): when a replace
	// changed it in between, the resume changes nothing and answers the
	// schedule as it is now, still paused, for the caller to compute its
	// next tick again. So a resume never stores a next tick of a timing
	// the schedule no longer has. Ignored when pausing.
	Cron     string
	Every    time.Duration
	Timezone string
	Now      time.Time
}

// ResumeParams are the arguments of the resume of s as it was read: its
// next tick next (by s's timing), at now.
func ResumeParams(s *Schedule, next, now time.Time) *SetScheduleEnabledParams {
	return &SetScheduleEnabledParams{Tenant: s.Tenant, Name: s.Name, Enabled: true, NextRunAt: next,
		Cron: s.Cron, Every: s.Every, Timezone: s.Timezone, Now: now}
}

// ResumeSchedule resumes the tenant's schedule name in st: enabled, its
// next tick the first after now() by its timing; the ticks missed while
// paused are not run. A schedule already enabled is answered unchanged. It
// writes nothing but enabled and the next tick (SetScheduleEnabled), so a
// replace at the same time is never undone; the next tick is computed from
// the schedule as read, and the store applies it only while the schedule
// still has that timing: when a replace changed it in between, the store
// answers the schedule as it is, still paused, and the tick is computed
// again from it. next computes a timing's first tick after a time
// (schedule.NextTick, which this package, of the standard library only,
// does not import). ErrNotFound when the tenant has no such schedule.
func ResumeSchedule(ctx context.Context, st Store, tenant, name string, now func() time.Time,
	next func(cron string, every time.Duration, timezone string, after time.Time) (time.Time, error)) (*Schedule, error) {
	sc, err := st.GetSchedule(ctx, &GetScheduleParams{Tenant: tenant, Name: name})
	for err == nil && !sc.Enabled {
		if err = ctx.Err(); err != nil {
			return nil, err // replaces changing the timing faster than the store answers
		}
		t := now()
		tick, terr := next(sc.Cron, sc.Every, sc.Timezone, t)
		if terr != nil { // stored settings the API accepted
			return nil, fmt.Errorf("store: resume schedule %q of tenant %q: %w", name, tenant, terr)
		}
		sc, err = st.SetScheduleEnabled(ctx, ResumeParams(sc, tick, t))
	}
	if err != nil {
		return nil, err
	}
	return sc, nil
}

// PutScheduleResult is the schedule as stored, and whether Put created it.
type PutScheduleResult struct {
	Schedule *Schedule
	Created  bool
}

// ValidateSchedule checks what a store relies on in a schedule: a name, a
// kind, one of Cron and Every, defined policies. The API validates more
// (the cron syntax, the time zone, lengths) before it gets here.
func ValidateSchedule(s *Schedule) error {
	switch {
	case s.Tenant == "" || s.Name == "":
		return fmt.Errorf("%w: schedule needs a tenant and a name", ErrInvalid)
	case s.Kind == "":
		return fmt.Errorf("%w: schedule %q needs a kind", ErrInvalid, s.Name)
	case (s.Cron == "") == (s.Every == 0):
		return fmt.Errorf("%w: schedule %q needs exactly one of cron and every", ErrInvalid, s.Name)
	case s.Every < 0:
		return fmt.Errorf("%w: schedule %q: negative every", ErrInvalid, s.Name)
	case !s.Overlap.Valid():
		return fmt.Errorf("%w: schedule %q: overlap %q", ErrInvalid, s.Name, s.Overlap)
	case !s.Catchup.Valid():
		return fmt.Errorf("%w: schedule %q: catchup %q", ErrInvalid, s.Name, s.Catchup)
	case s.NextRunAt.IsZero():
		return fmt.Errorf("%w: schedule %q needs a next run time", ErrInvalid, s.Name)
	}
	return nil
}

// GetScheduleParams are the arguments of Store.GetSchedule.
type GetScheduleParams struct {
	Tenant string
	Name   string
}

// ListSchedulesParams filter Store.ListSchedules.
type ListSchedulesParams struct {
	Tenant string // "" = every tenant
	// DueBy, when set, lists only enabled schedules whose NextRunAt is not
	// after it (the scheduler's query), earliest NextRunAt first.
	DueBy time.Time
	Limit int // 0 or less = DefaultScheduleListLimit
	// After, without DueBy, lists only the schedules after it in tenant
	// then name order: the next page after a page that ended there. The
	// zero value starts at the beginning.
	After ScheduleRef
}

// ScheduleRef names a schedule: its tenant and its name.
type ScheduleRef struct {
	Tenant string
	Name   string
}

// DefaultScheduleListLimit is how many schedules ListSchedules returns when
// its Limit is 0.
const DefaultScheduleListLimit = 1000

// ListLimit is the most schedules ListSchedules returns for p.
func (p *ListSchedulesParams) ListLimit() int {
	if p.Limit <= 0 {
		return DefaultScheduleListLimit
	}
	return p.Limit
}

// DeleteScheduleParams are the arguments of Store.DeleteSchedule.
type DeleteScheduleParams struct {
	Tenant string
	Name   string
}

// FireScheduleParams are the arguments of Store.FireSchedule.
type FireScheduleParams struct {
	Tenant string
	Name   string
	// Tick is the tick fired; for a regular fire its Unix seconds name the
	// tick's dedup key (ScheduleDedupKey).
	Tick time.Time
	// Trigger fires an off-cycle tick: whether or not the schedule is
	// enabled, leaving NextRunAt as it is (Expected and Next are ignored).
	// Each trigger is a tick of its own, admitted without a dedup key: two
	// triggers of one second are two executions, and neither is merged
	// with the regular tick of that second.
	Trigger bool
	// IdempotencyKey, for a Trigger only, names the trigger request: its
	// execution is admitted under ScheduleTriggerDedupKey(Name,
	// IdempotencyKey), so a repeat while that key lives answers the first
	// trigger's execution (Deduplicated) and fires nothing.
	IdempotencyKey string
	// Expected is the NextRunAt the caller read. A regular (not Trigger)
	// fire happens only while the schedule is enabled and its NextRunAt
	// still equals Expected; NextRunAt then becomes Next. Otherwise another
	// server has moved the schedule on, or it was changed, paused or
	// replaced, and nothing happens.
	Expected time.Time
	Next     time.Time
	// Drop advances NextRunAt to Next without firing (ticks missed with
	// catchup none).
	Drop bool
	Now  time.Time
}

// FireScheduleResult is what FireSchedule did. Execution is the tick's
// execution (nil when nothing fired): newly admitted, recorded as skipped
// (overlap skip), or the one the tick's dedup key already maps to
// (Deduplicated). Advanced reports whether NextRunAt moved.
type FireScheduleResult struct {
	Execution    *Execution
	Deduplicated bool
	Advanced     bool
}

// DedupKey is the dedup key the fired tick is admitted under: the regular
// tick's (ScheduleDedupKey), a keyed trigger's (ScheduleTriggerDedupKey), or
// none for a trigger without an idempotency key.
func (p *FireScheduleParams) DedupKey() string {
	switch {
	case !p.Trigger:
		return ScheduleDedupKey(p.Name, p.Tick)
	case p.IdempotencyKey != "":
		return ScheduleTriggerDedupKey(p.Name, p.IdempotencyKey)
	}
	return ""
}

// Validate checks the parameters.
func (p *FireScheduleParams) Validate() error {
	switch {
	case p.Tenant == "" || p.Name == "":
		return fmt.Errorf("%w: fire needs a tenant and a schedule name", ErrInvalid)
	case p.Tick.IsZero():
		return fmt.Errorf("%w: fire needs a tick", ErrInvalid)
	case !p.Trigger && p.IdempotencyKey != "":
		return fmt.Errorf("%w: only a trigger takes an idempotency key", ErrInvalid)
	case !p.Trigger && (p.Expected.IsZero() || !p.Next.After(p.Expected)):
		return fmt.Errorf("%w: fire needs the expected tick and a later next tick", ErrInvalid)
	}
	return nil
}
