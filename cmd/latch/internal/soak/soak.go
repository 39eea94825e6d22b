package soak

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/latch-run/latch/engine"
	"github.com/latch-run/latch/schedule"
	"github.com/latch-run/latch/store"
)

// runner is one soak.
type runner struct {
	cfg    Config
	st     store.Store
	tenant string // also the name of the queue its executions go to
	queue  string

	jn     *journal
	found  *findings
	gauge  *gauge
	recent recent
	mon    *monitor

	loadStart           time.Time
	submitLat, startLat latency

	submits, acknowledged, deduplicated, refused atomic.Int64
	cancels, cancelledAtOnce, cancelRequested    atomic.Int64
	starts                                       atomic.Int64
}

// Run runs a soak and checks it. The error is for a soak that could not
// run (no tenant could be made, the journal could not be written); what
// the soak found is in the Result. Cancelling ctx ends the load early; the
// drain and the checks still run, bounded by Config.DrainTimeout.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	found := newFindings()
	r := &runner{cfg: cfg, st: cfg.Store, found: found, gauge: newGauge(found)}
	r.mon = &monitor{r: r}
	var b [3]byte
	_, _ = rand.Read(b[:])
	r.tenant = "soak-" + time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
	r.queue = r.tenant
	if err := r.setup(ctx); err != nil {
		r.teardown(context.WithoutCancel(ctx))
		return nil, err
	}
	jn, err := openJournal(cfg.TempDir)
	if err != nil {
		r.teardown(context.WithoutCancel(ctx))
		return nil, err
	}
	defer jn.remove()
	r.jn = jn

	fmt.Fprintf(cfg.Out, "soak: tenant %s, %s at %d submits/s, %d worker slots, %d submitters; a line every %s\n",
		r.tenant, cfg.Duration, cfg.Rate, cfg.Workers, cfg.Clients, cfg.ReportEvery)

	res := &Result{Tenant: r.tenant, Store: reflect.TypeOf(cfg.Store).String(), Rate: cfg.Rate}
	// The baseline: the store is open and used, nothing of the soak runs.
	runtime.GC()
	res.GoroutinesBefore = runtime.NumGoroutine()
	stacksBefore := goroutineStacks()

	engines, sched := r.engine()
	if err := engines.Start(ctx); err != nil {
		r.teardown(context.WithoutCancel(ctx))
		return nil, err
	}
	if err := sched.Start(ctx); err != nil {
		_ = engines.Stop(context.Background())
		r.teardown(context.WithoutCancel(ctx))
		return nil, err
	}
	r.loadStart = time.Now()
	stopMon := make(chan struct{})
	monDone := make(chan struct{})
	go func() { defer close(monDone); r.mon.run(stopMon) }()

	res.Load = r.load(ctx)
	res.Interrupted = ctx.Err() != nil
	close(stopMon)
	<-monDone
	r.mon.report(r.mon.take(false)) // the last, partial interval

	// Wind down: no new ticks, let the work finish, stop the workers.
	bg := context.WithoutCancel(ctx)
	if err := stopWithin(sched, 10*time.Second); err != nil {
		found.add("errors", "stopping the scheduler: %v", err)
	}
	drainStart := time.Now()
	res.Drained = r.drain(bg)
	res.Drain = time.Since(drainStart)
	if !res.Drained {
		fmt.Fprintf(cfg.Out, "soak: executions still unfinished %s after the load; stopping anyway\n", cfg.DrainTimeout)
	}
	if err := stopWithin(engines, 15*time.Second); err != nil {
		found.add("errors", "stopping the workers: %v", err)
	}
	r.teardown(bg)
	res.GoroutinesAfter = settleGoroutines(res.GoroutinesBefore)
	if res.GoroutinesAfter > res.GoroutinesBefore+goroutineMargin {
		grown := goroutineStacks().grown(stacksBefore)
		found.add("goroutines", "%d goroutines %s after everything stopped, %d before the engine started (margin %d); grown: %v",
			res.GoroutinesAfter, goroutineSettle, res.GoroutinesBefore, goroutineMargin, grown)
	}

	res.Samples = r.mon.all()
	res.Warnings = r.mon.trend()
	if err := r.check(bg, res); err != nil {
		return nil, err
	}
	res.WriteSummary(cfg.Out)
	return res, nil
}

// setup creates the tenant, its rate limit and its schedules.
func (r *runner) setup(ctx context.Context) error {
	now := time.Now()
	keep := max(store.DefaultRetention, 2*r.cfg.Duration+24*time.Hour)
	if _, err := r.st.CreateTenant(ctx, &store.CreateTenantParams{
		Name: r.tenant, DedupTTL: keep, Retention: keep, Now: now,
	}); err != nil {
		return fmt.Errorf("soak: create tenant %s: %w", r.tenant, err)
	}
	rl := r.cfg.rateLimit()
	rl.Tenant = r.tenant
	if _, err := r.st.PutRateLimit(ctx, &store.PutRateLimitParams{Limit: rl, Now: now}); err != nil {
		return fmt.Errorf("soak: rate limit: %w", err)
	}
	for _, s := range []struct {
		name    string
		every   time.Duration
		overlap store.Overlap
	}{{SkipSchedule, time.Second, store.OverlapSkip}, {QueueSchedule, 2 * time.Second, store.OverlapQueue}} {
		spec, err := schedule.Parse("", s.every, "UTC")
		if err != nil {
			return fmt.Errorf("soak: schedule %s: %w", s.name, err)
		}
		p := payload{Class: classSched, Sched: s.name}
		if _, err := r.st.PutSchedule(ctx, &store.PutScheduleParams{Schedule: store.Schedule{
			Tenant: r.tenant, Name: s.name, Every: s.every, Timezone: "UTC",
			Kind: Kind, Payload: p.encode(), Queue: r.queue, MaxAttempts: 3,
			Overlap: s.overlap, Catchup: store.CatchupOne, Enabled: true, NextRunAt: spec.Next(now),
		}, Now: now}); err != nil {
			return fmt.Errorf("soak: schedule %s: %w", s.name, err)
		}
	}
	return nil
}

// teardown removes the schedules and the rate limit, so that no server
// sharing the store fires the soak's ticks after it. The tenant and its
// executions stay, for inspection. Missing ones (a setup that failed
// halfway) are no error.
func (r *runner) teardown(ctx context.Context) {
	for _, name := range []string{SkipSchedule, QueueSchedule} {
		err := r.st.DeleteSchedule(ctx, &store.DeleteScheduleParams{Tenant: r.tenant, Name: name})
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			r.found.add("errors", "deleting schedule %s: %v", name, err)
		}
	}
	err := r.st.DeleteRateLimit(ctx, &store.DeleteRateLimitParams{Tenant: r.tenant, Key: RateKey})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		r.found.add("errors", "deleting the rate limit: %v", err)
	}
}

// engine builds what `latch serve` runs, less the pruner (the soak's
// tenant keeps everything for the checks): two workers sharing the slots
// and a rescuer, and apart, so it stops first, the scheduler.
func (r *runner) engine() (*engine.Group, *engine.Scheduler) {
	log := newErrorLogs(r.cfg.Logger, r.found)
	var services []engine.Service
	for i, slots := range []int{r.cfg.Workers / 2, r.cfg.Workers - r.cfg.Workers/2} {
		w := engine.NewWorker(engine.WorkerConfig{
			Store: r.st, WorkerID: fmt.Sprintf("%s-w%d", r.tenant, i+1), Slots: slots,
			Queues: []string{r.queue}, Logger: log,
		})
		w.Handle(Kind, r.handle)
		services = append(services, w)
	}
	services = append(services, engine.NewRescuer(engine.RescuerConfig{Store: r.st, Interval: time.Second, Logger: log}))
	return engine.NewGroup(services...), engine.NewScheduler(engine.SchedulerConfig{Store: r.st, Logger: log})
}

// stopWithin stops s softly, hard after d.
func stopWithin(s engine.Service, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return s.Stop(ctx)
}

// drain waits until none of the tenant's executions is scheduled, queued
// or running, at most Config.DrainTimeout, and reports whether it came.
func (r *runner) drain(ctx context.Context) bool {
	deadline := time.Now().Add(r.cfg.DrainTimeout)
	for {
		n, err := r.unfinished(ctx)
		switch {
		case err != nil:
			r.found.add("errors", "listing unfinished executions: %v", err)
		case n == 0:
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// unfinished counts the tenant's scheduled, queued, running and suspended
// executions, up to one of each. A page may be empty and still have a
// Next (List examines at most ListParams.Scan executions a call): only
// the end of the paging says there is none.
func (r *runner) unfinished(ctx context.Context) (int, error) {
	n := 0
	for _, s := range []store.Status{store.StatusScheduled, store.StatusQueued, store.StatusRunning, store.StatusSuspended} {
		p := store.ListParams{Tenant: r.tenant, Status: s, Limit: 1}
		for {
			page, err := r.st.List(ctx, &p)
			if err != nil {
				return 0, err
			}
			if len(page.Items) > 0 || page.Next == "" {
				n += len(page.Items)
				break
			}
			p.After = page.Next
		}
	}
	return n, nil
}
