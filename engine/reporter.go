package engine

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/latch-run/latch/internal/buildinfo"
	"github.com/latch-run/latch/internal/storewrap"
	"github.com/latch-run/latch/store"
)

// Bounds of what a Reporter keeps between reports, so that a store that
// refuses reports for long costs bounded memory.
const (
	// MaxReportWorkers is the most workers one report carries; beyond,
	// the ones seen longest ago are left out (they are seen again at their
	// next claim).
	MaxReportWorkers = 1000
	// MaxReportBuckets is the most (tenant, minute) activity counts a
	// Reporter keeps unreported; beyond, the oldest minutes are dropped
	// (logged). Counts older than store.ActivityKept are dropped too: Prune
	// would remove them at once.
	MaxReportBuckets = 10000
	// DefaultPrompt is ReporterConfig.Prompt's default.
	DefaultPrompt = time.Second
)

// ReporterConfig configures a Reporter. Zero fields take the stated
// defaults.
type ReporterConfig struct {
	// Store receives the reports (store.Store.ReportServer). Required.
	Store store.Store
	// ServerID names this server in its reports. Default host:pid:random
	// (NewServerID).
	ServerID string
	// Host is the machine's name. Default os.Hostname().
	Host string
	// Version is this build's. Default the program's module version from
	// the build info, else its VCS revision (buildinfo.Build.Short): "devel"
	// only when it has neither.
	Version string
	// Interval between reports. Default store.ReportEvery.
	Interval time.Duration
	// Prompt is how soon a report follows the claim of a worker the
	// store was not told of by this server: its first claim, a claim
	// whose queues or kinds changed, or its first after a pause of half
	// store.WorkerAlive. So a worker that starts counts as live for
	// Explain and the console within Prompt, not at the next Interval.
	// Such reports are at least Prompt apart, however many new workers
	// claim meanwhile; a worker that keeps claiming with the same filters
	// adds none (each claim only updates memory). Default DefaultPrompt;
	// < 0: none, reports only every Interval.
	Prompt time.Duration
	// Logger receives failed reports. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock of the reports, of LastSeenAt and of the activity
	// minutes. Default time.Now. The interval is measured in real time.
	Now func() time.Time
}

// Reporter is what a server writes about itself (store.ServerReport): that
// it is alive, the workers that claimed through it, and the runs started
// and failed through it, by tenant and minute. It counts what a
// storewrap.Wrap'ped store tells it (Observe: every Claim, every Fail), so
// the in-process workers' claims and the HTTP workers' are counted alike,
// and every Interval it writes one report with what it counted since the
// previous one. A report that fails keeps its counts for the next one:
// nothing is lost while the store is away for a while, and what is kept is
// bounded (MaxReportWorkers, MaxReportBuckets).
type Reporter struct {
	cfg       ReporterConfig
	log       *slog.Logger
	life      lifecycle
	startedAt time.Time

	mu       sync.Mutex
	workers  map[workerKey]workerSeen
	activity map[activityKey]*store.ActivityCount
	dropped  bool // activity dropped for the bounds since the last log of it
	// told is what the store was told of each worker by this server's
	// reports that succeeded; news is set when a worker claimed that it
	// does not show (Prompt), and kick then wakes the loop.
	told map[workerKey]workerSeen
	news bool
	kick chan struct{} // buffered 1
}

type workerKey struct{ id, tenant string }

// workerSeen is when a worker last claimed and the filters of that claim.
type workerSeen struct {
	at            time.Time
	queues, kinds []string
}

type activityKey struct {
	tenant string
	minute time.Time
}

var _ Service = (*Reporter)(nil)

// NewReporter returns a Reporter configured by cfg with its defaults
// applied.
func NewReporter(cfg ReporterConfig) *Reporter {
	if cfg.ServerID == "" {
		cfg.ServerID = NewServerID()
	}
	if cfg.Host == "" {
		cfg.Host = hostname()
	}
	if cfg.Version == "" {
		cfg.Version = buildinfo.Current().Short()
	}
	if cfg.Interval <= 0 {
		cfg.Interval = store.ReportEvery
	}
	if cfg.Prompt == 0 {
		cfg.Prompt = DefaultPrompt
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Reporter{
		cfg:       cfg,
		log:       cfg.Logger.With("component", "reporter", "server_id", cfg.ServerID),
		life:      lifecycle{name: "reporter"},
		startedAt: cfg.Now(),
		workers:   map[workerKey]workerSeen{},
		activity:  map[activityKey]*store.ActivityCount{},
		told:      map[workerKey]workerSeen{},
		kick:      make(chan struct{}, 1),
	}
}

// NewServerID returns a server id unique to this process: host:pid:random.
func NewServerID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s:%d:%s", hostname(), os.Getpid(), hex.EncodeToString(b[:]))
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "unknown"
	}
	return h
}

// ServerID returns the id this server reports under.
func (r *Reporter) ServerID() string { return r.cfg.ServerID }

// Observe counts a store call: a Claim answered (the worker is seen under
// the claim's tenant scope, "" for in-process workers and the admin key,
// claiming the claim's queues and kinds; each lease is a start of its
// execution's tenant) and a Fail answered (a
// failure of the execution's tenant). Give it to storewrap.Wrap on the
// store the workers and the API use.
func (r *Reporter) Observe(c *storewrap.Call) {
	if c.Err != nil {
		return
	}
	switch c.Op {
	case "Claim":
		p, _ := c.Params.(*store.ClaimParams)
		res, _ := c.Result.(*store.ClaimResult)
		if p != nil && res != nil {
			r.claimed(p.WorkerID, p.Tenant, p.Queues, p.Kinds, res.Leases)
		}
	case "Fail":
		if e, _ := c.Result.(*store.Execution); e != nil {
			r.Failed(e.Tenant)
		}
	case "Release":
		// A lease given back unstarted (a worker stopping, or its tenant
		// at its share of the slots) was no start.
		if p, _ := c.Params.(*store.ReleaseParams); p != nil && p.Unstarted {
			r.unstarted(p.Tenant)
		}
	}
}

// unstarted takes back the start of a lease of tenant released unstarted.
func (r *Reporter) unstarted(tenant string) {
	now := r.cfg.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.count(tenant, now); c.Starts > 0 {
		c.Starts--
	}
}

// Claimed counts a claim by workerID under the tenant scope tenant, of
// every queue and kind: the worker is seen now, and each lease is a start.
func (r *Reporter) Claimed(workerID, tenant string, leases []store.Lease) {
	r.claimed(workerID, tenant, nil, nil, leases)
}

// claimed is Claimed of a claim filtered to queues and kinds (none: every
// one), which the report gives as what the worker claims, sorted.
func (r *Reporter) claimed(workerID, tenant string, queues, kinds []string, leases []store.Lease) {
	now := r.cfg.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	k, seen := workerKey{workerID, tenant}, workerSeen{at: now, queues: filter(queues), kinds: filter(kinds)}
	r.workers[k] = seen
	r.bound(now, false)
	if r.cfg.Prompt >= 0 && !r.news && r.untold(k, seen) {
		r.news = true
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}
	for i := range leases {
		r.count(leases[i].Tenant, now).Starts++
	}
}

// untold reports whether the store was not told of worker k as seen: not
// at all, with other filters, or last at least half store.WorkerAlive
// before it (so it may be about to drop out). r.mu is held.
func (r *Reporter) untold(k workerKey, seen workerSeen) bool {
	told, ok := r.told[k]
	return !ok || !slices.Equal(told.queues, seen.queues) || !slices.Equal(told.kinds, seen.kinds) ||
		seen.at.Sub(told.at) >= store.WorkerAlive/2
}

// filter is a claim filter as reported: sorted, each value once, nil for
// none.
func filter(vals []string) []string {
	if len(vals) == 0 {
		return nil
	}
	return slices.Compact(slices.Sorted(slices.Values(vals)))
}

// Failed counts a run of tenant that ended in Fail.
func (r *Reporter) Failed(tenant string) {
	now := r.cfg.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.count(tenant, now).Failures++
}

// count is the bucket of tenant at now's minute. r.mu is held.
func (r *Reporter) count(tenant string, now time.Time) *store.ActivityCount {
	k := activityKey{tenant, store.MinuteOf(now)}
	c := r.activity[k]
	if c == nil {
		c = &store.ActivityCount{Tenant: tenant, Minute: k.minute}
		r.activity[k] = c
		r.bound(now, false)
	}
	return c
}

// bound drops what is beyond the bounds: the oldest minutes beyond
// MaxReportBuckets, the workers seen longest ago beyond MaxReportWorkers,
// and, with sweep, the minutes older than store.ActivityKept. r.mu is
// held.
func (r *Reporter) bound(now time.Time, sweep bool) {
	if len(r.activity) > MaxReportBuckets {
		oldest := slices.SortedFunc(maps.Keys(r.activity), func(a, b activityKey) int {
			return a.minute.Compare(b.minute)
		})
		for _, k := range oldest[:len(r.activity)-MaxReportBuckets] {
			delete(r.activity, k)
		}
		r.dropped = true
	}
	if sweep {
		for k := range r.activity {
			if k.minute.Before(now.Add(-store.ActivityKept)) {
				delete(r.activity, k)
				r.dropped = true
			}
		}
	}
	if len(r.workers) > MaxReportWorkers {
		byAge := slices.SortedFunc(maps.Keys(r.workers), func(a, b workerKey) int {
			return r.workers[a].at.Compare(r.workers[b].at)
		})
		for _, k := range byAge[:len(r.workers)-MaxReportWorkers] {
			delete(r.workers, k)
		}
	}
}

// Start writes a first report at once, then one every Interval; Stop
// writes a last one with what was counted since.
func (r *Reporter) Start(ctx context.Context) error {
	if r.cfg.Store == nil {
		return errNoStore("reporter")
	}
	return r.life.start(ctx, func(soft, hard context.Context, ready func()) error {
		ready()
		r.loop(soft)
		// The last counts, within Stop's grace.
		ctx, cancel := context.WithTimeout(hard, r.cfg.Interval)
		defer cancel()
		r.pass(ctx)
		return nil
	})
}

// Stop ends the loop after a last report.
func (r *Reporter) Stop(ctx context.Context) error { return r.life.stop(ctx) }

// loop reports at once, then every Interval, and Prompt after the last
// report when a worker the store was not told of claimed, until ctx is
// done.
func (r *Reporter) loop(ctx context.Context) {
	r.pass(ctx)
	last := time.Now()
	tick := time.NewTicker(r.cfg.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-r.kick:
			if wait := r.cfg.Prompt - time.Since(last); wait > 0 {
				t := time.NewTimer(wait) // the claims of the next Prompt join this report
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
			}
			r.mu.Lock()
			news := r.news
			r.mu.Unlock()
			if !news { // a report since told the store
				continue
			}
			tick.Reset(r.cfg.Interval)
		}
		r.pass(ctx)
		last = time.Now()
	}
}

func (r *Reporter) pass(ctx context.Context) {
	if err := r.ReportOnce(ctx); err != nil && ctx.Err() == nil {
		r.log.Error("server report failed; its counts are kept for the next one", "err", err)
	}
}

// ReportOnce writes one report now with what was counted since the last
// report that succeeded. When it fails, the counts are kept for the next
// one.
func (r *Reporter) ReportOnce(ctx context.Context) error {
	now := r.cfg.Now()
	r.mu.Lock()
	workers, activity := r.workers, r.activity
	r.workers, r.activity = map[workerKey]workerSeen{}, map[activityKey]*store.ActivityCount{}
	r.news = false
	if r.dropped {
		r.log.Warn("server report: activity counts dropped: the store refused reports for too long, " +
			"or too many tenants were active in one interval")
		r.dropped = false
	}
	r.mu.Unlock()

	rep := &store.ServerReport{ID: r.cfg.ServerID, Host: r.cfg.Host, Version: r.cfg.Version,
		StartedAt: r.startedAt, Now: now}
	for k, seen := range workers {
		rep.Workers = append(rep.Workers, store.WorkerSeen{ID: k.id, Tenant: k.tenant, LastSeenAt: seen.at,
			Queues: seen.queues, Kinds: seen.kinds})
	}
	slices.SortFunc(rep.Workers, func(a, b store.WorkerSeen) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.ID, b.ID))
	})
	for _, c := range activity {
		rep.Activity = append(rep.Activity, *c)
	}
	slices.SortFunc(rep.Activity, func(a, b store.ActivityCount) int {
		return cmp.Or(a.Minute.Compare(b.Minute), cmp.Compare(a.Tenant, b.Tenant))
	})
	err := r.cfg.Store.ReportServer(ctx, rep)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		r.remember(workers, now)
		if r.news { // set by claims meanwhile: news still if one is not told of now
			r.news = false
			for k, seen := range r.workers {
				if r.untold(k, seen) {
					r.news = true
					break
				}
			}
		}
		return nil
	}
	// Put the counts back, beside those counted meanwhile; the workers
	// not yet told of are news again.
	for k, seen := range workers {
		if r.cfg.Prompt >= 0 && r.untold(k, seen) {
			r.news = true
		}
	}
	for k, seen := range workers {
		if seen.at.After(r.workers[k].at) {
			r.workers[k] = seen
		}
	}
	for k, c := range activity {
		if have := r.activity[k]; have != nil {
			have.Starts += c.Starts
			have.Failures += c.Failures
		} else {
			r.activity[k] = c
		}
	}
	r.bound(r.cfg.Now(), true)
	return err
}

// remember records that the store was told of workers. What it keeps is
// bounded: beyond 2*MaxReportWorkers, the workers not told of for
// store.WorkerAlive are forgotten, and all of them if that is not enough
// (a forgotten worker's next claim is news: one report more). r.mu is
// held.
func (r *Reporter) remember(workers map[workerKey]workerSeen, now time.Time) {
	for k, seen := range workers {
		if seen.at.After(r.told[k].at) {
			r.told[k] = seen
		}
	}
	if len(r.told) <= 2*MaxReportWorkers {
		return
	}
	for k, seen := range r.told {
		if now.Sub(seen.at) >= store.WorkerAlive {
			delete(r.told, k)
		}
	}
	if len(r.told) > 2*MaxReportWorkers {
		clear(r.told)
	}
}
