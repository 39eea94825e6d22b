package engine

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/latch-run/latch/schedule"
	"github.com/latch-run/latch/store"
)

// Defaults of SchedulerConfig.
const (
	DefaultSchedulerInterval = time.Second
	// MaxCatchupGrace bounds how late a tick may fire and still count as
	// on time (see Scheduler).
	MaxCatchupGrace = time.Minute
)

// SchedulerConfig configures a Scheduler. Zero fields take the stated
// defaults.
type SchedulerConfig struct {
	// Store holds the schedules. Required.
	Store store.Store
	// Interval is the longest wait between passes: a schedule changed by
	// another server is seen within it. A pass also runs when the next
	// known tick comes, and on Kick. Default DefaultSchedulerInterval (1s).
	Interval time.Duration
	// Limit is the most due schedules one pass reads; a pass repeats while
	// it comes back full. Default DefaultBatchLimit (1000).
	Limit int
	// Logger receives fired ticks and failures. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock passed to the store. Default time.Now.
	Now func() time.Time
	// OnFire, if set, is called after each tick this scheduler fired or
	// dropped (for metrics): outcome is "admitted", "skipped",
	// "deduplicated", "dropped", "quota_exceeded" or "storage_exceeded".
	OnFire func(outcome string)
}

// Scheduler fires the due ticks of every tenant's schedules. Every server
// runs one, and no leader is elected: each due tick is handed to
// store.FireSchedule, which moves the schedule on only if it still expects
// that tick and admits the tick under its dedup key, so any number of
// schedulers produce one execution per tick (I6). If the server that would
// have fired a tick dies, another fires it at its next pass.
//
// Late ticks: a tick is on time while the scheduler reaches it within its
// grace, the schedule's interval at that tick capped at MaxCatchupGrace.
// A tick found later was missed (every server was down, or the tenant's
// quota refused it until then): with catchup one it fires at once, as the
// one run for every tick missed since, and the schedule moves to its next
// tick after now; with catchup none it is dropped and the schedule moves on
// the same way.
type Scheduler struct {
	cfg  SchedulerConfig
	log  *slog.Logger
	life lifecycle
	kick chan struct{}
}

var _ Service = (*Scheduler)(nil)

// NewScheduler returns a Scheduler configured by cfg with its defaults
// applied.
func NewScheduler(cfg SchedulerConfig) *Scheduler {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultSchedulerInterval
	}
	if cfg.Limit <= 0 {
		cfg.Limit = DefaultBatchLimit
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Scheduler{
		cfg:  cfg,
		log:  cfg.Logger.With("component", "scheduler"),
		life: lifecycle{name: "scheduler"},
		kick: make(chan struct{}, 1),
	}
}

// Start runs a first pass at once, then one whenever a tick comes due, on
// Kick, and at least every Interval.
func (s *Scheduler) Start(ctx context.Context) error {
	if s.cfg.Store == nil {
		return errNoStore("scheduler")
	}
	return s.life.start(ctx, func(soft, _ context.Context, ready func()) error {
		ready()
		s.loop(soft)
		return nil
	})
}

// Stop ends the loop, interrupting a pass in progress (each tick is one
// atomic store call, so an interrupted pass fires whole ticks or none).
func (s *Scheduler) Stop(ctx context.Context) error { return s.life.stop(ctx) }

// Kick makes the scheduler run a pass now: a schedule was just created or
// changed on this server.
func (s *Scheduler) Kick() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *Scheduler) loop(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-s.kick:
		}
		wait, err := s.RunOnce(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Error("scheduler pass failed", "err", err)
			wait = s.cfg.Interval
		}
		resetTimer(timer, wait)
	}
}

// RunOnce fires every tick due now and returns how long to wait until the
// next pass: until the earliest tick due within Interval, else Interval.
func (s *Scheduler) RunOnce(ctx context.Context) (time.Duration, error) {
	for {
		now := s.cfg.Now()
		horizon := now.Add(s.cfg.Interval)
		due, listErr := s.cfg.Store.ListSchedules(ctx, &store.ListSchedulesParams{DueBy: horizon, Limit: s.cfg.Limit})
		if listErr != nil && (len(due) == 0 || ctx.Err() != nil) {
			return 0, listErr
		}
		// A listing with an error as well (a store that spreads tenants
		// failed for some: the Redis tenant router) still fires what it
		// listed, then reports the error.
		wait := s.cfg.Interval
		moved := 0
		for _, sc := range due {
			if sc.NextRunAt.After(now) {
				// Listed in order: this and the rest lie ahead.
				wait = max(sc.NextRunAt.Sub(now), time.Millisecond)
				break
			}
			advanced, err := s.fire(ctx, sc, now)
			if err != nil {
				if ctx.Err() != nil {
					return 0, ctx.Err()
				}
				s.log.Error("firing a schedule's tick failed", "tenant", sc.Tenant, "schedule", sc.Name,
					"tick", sc.NextRunAt, "err", err)
			}
			if advanced {
				moved++
			}
		}
		// A full page of due schedules may hide more behind it; read again
		// while this pass moves some on (refused ones stay due).
		if listErr != nil {
			return wait, listErr
		}
		if len(due) < s.cfg.Limit || due[len(due)-1].NextRunAt.After(now) || moved == 0 {
			return wait, nil
		}
	}
}

// fire hands one due tick of sc to the store and reports whether the
// schedule is no longer due (this server or another moved it on).
func (s *Scheduler) fire(ctx context.Context, sc *store.Schedule, now time.Time) (bool, error) {
	spec, err := schedule.Parse(sc.Cron, sc.Every, sc.Timezone)
	if err != nil {
		// Stored by a server that accepted what this one does not: leave
		// the schedule to it, loudly.
		s.log.Error("schedule does not parse on this server; not firing it", "tenant", sc.Tenant,
			"schedule", sc.Name, "err", err)
		return false, nil
	}
	tick := sc.NextRunAt
	next := spec.Next(now)
	missed := now.Sub(tick) > Grace(spec, tick)
	drop := missed && sc.Catchup == store.CatchupNone
	res, err := s.cfg.Store.FireSchedule(ctx, &store.FireScheduleParams{
		Tenant: sc.Tenant, Name: sc.Name, Tick: tick, Expected: tick, Next: next, Drop: drop, Now: now,
	})
	switch {
	case errors.Is(err, store.ErrQuotaExceeded):
		s.log.Warn("schedule tick refused: the tenant is at its max_inflight; retrying at the next pass",
			"tenant", sc.Tenant, "schedule", sc.Name, "tick", tick)
		s.observe("quota_exceeded")
		return false, nil
	case errors.Is(err, store.ErrStorageExceeded):
		s.log.Warn("schedule tick refused: the tenant is at its storage budget (max_stored_bytes); retrying at the next pass",
			"tenant", sc.Tenant, "schedule", sc.Name, "tick", tick)
		s.observe("storage_exceeded")
		return false, nil
	case errors.Is(err, store.ErrNotFound):
		return true, nil // deleted since the list
	case err != nil:
		return false, err
	}
	switch {
	case res.Advanced && drop:
		s.log.Info("missed schedule tick dropped (catchup none)", "tenant", sc.Tenant, "schedule", sc.Name,
			"tick", tick, "next_run_at", next)
		s.observe("dropped")
	case res.Execution == nil:
		// Another server fired it first, or the schedule changed.
	case res.Deduplicated:
		s.observe("deduplicated")
	default:
		s.log.Info("schedule tick fired", "tenant", sc.Tenant, "schedule", sc.Name, "tick", tick,
			"execution_id", res.Execution.ID, "status", res.Execution.Status, "late", missed)
		if res.Execution.Status == store.StatusSkipped {
			s.observe("skipped")
		} else {
			s.observe("admitted")
		}
	}
	return true, nil
}

func (s *Scheduler) observe(outcome string) {
	if s.cfg.OnFire != nil {
		s.cfg.OnFire(outcome)
	}
}

// Grace is how late tick may fire and still be on time: the schedule's
// interval at that tick, at most MaxCatchupGrace.
func Grace(spec *schedule.Spec, tick time.Time) time.Duration {
	return min(spec.Next(tick).Sub(tick), MaxCatchupGrace)
}
