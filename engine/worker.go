package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/latch-run/latch/internal/backoff"
	"github.com/latch-run/latch/internal/tracing"
	"github.com/latch-run/latch/store"
)

// Handler runs one attempt of a job. It returns the result as JSON (nil means
// null) or an error: wrap it with Permanent to fail without retrying, or with
// RetryAfter to choose the retry delay. ctx carries the execution's timeout
// and is cancelled, with a cause, when the user cancels the execution
// (ErrCancelled), the lease is lost (ErrLeaseLost) or the worker shuts down
// hard (ErrShutdown); a handler should return promptly when it is.
type Handler func(ctx context.Context, job *Job) (json.RawMessage, error)

// Job is the attempt a Handler runs.
type Job struct {
	ID          string
	Tenant      string
	Kind        string
	Queue       string
	Payload     json.RawMessage // canonical JSON, never nil
	Attempt     int             // 1 for the first attempt
	MaxAttempts int

	flow *flow // nil for a Job not made by a Worker
}

// Defaults of WorkerConfig.
const (
	DefaultSlots         = 10
	DefaultLeaseDuration = 30 * time.Second
	DefaultPollInterval  = time.Second
	DefaultCancelGrace   = 5 * time.Second
	DefaultCancelCheck   = time.Second
)

// WorkerConfig configures a Worker. Zero fields take the stated defaults.
type WorkerConfig struct {
	// Store is where executions are claimed from. Required.
	Store store.Store

	// WorkerID names this worker in leases. Default: hostname-pid-random.
	WorkerID string

	// Slots is how many handlers run at once. Default DefaultSlots (10).
	// A slot frees when its handler returns: the write that records the
	// outcome goes on beside the next handlers, and the worker claims only
	// while at most Slots such writes are in flight, so it holds at most
	// 2*Slots leases.
	Slots int

	// TenantSlots is each tenant's share of the slots, so that one
	// tenant's long-running work cannot hold every slot while another
	// tenant's waits. A tenant below its share starts work in any free
	// slot; one at its share may borrow free slots but never the last, which
	// stays for a tenant below its share. So a tenant alone uses Slots-1
	// slots and drains nearly as fast as with all of them, while another
	// tenant's work starts in the slot left free however long the first
	// one's handlers run. Default max(Slots/2, 1); Slots or more lets one
	// tenant use every slot. A tenant that may not start now is left out
	// of the worker's claims (store.ClaimParams.ExcludeTenants): its work
	// stays queued as it is — its order, runs, attempts and rate tokens
	// untouched — and starts when a slot frees, here or on another worker
	// with room. Only when one claim brings more of a tenant than it may
	// start are the extra leases released unstarted (their starts given
	// back, store.ReleaseParams.Unstarted).
	TenantSlots int

	// Queues limits claims to these queues. Empty: every queue.
	Queues []string

	// Kinds limits claims to these kinds. Empty: the kinds registered with
	// Handle (never every kind). An execution of a listed kind with no
	// handler fails permanently.
	Kinds []string

	// LeaseDuration is the length of each lease and of each extension by a
	// heartbeat. Default DefaultLeaseDuration (30s).
	LeaseDuration time.Duration

	// HeartbeatInterval is the time between heartbeats of a running
	// attempt; it must be shorter than LeaseDuration. Default
	// LeaseDuration/3.
	HeartbeatInterval time.Duration

	// PollInterval is the time between claims while nothing wakes the
	// worker. A store that implements store.Notifier wakes it at once on
	// new work; polling still finds executions whose run_at came due.
	// While it waits, a worker on a store.ClaimRider leaves its next claim
	// with the store, to run in the commit of the next submission it can
	// lease. Default DefaultPollInterval (1s).
	PollInterval time.Duration

	// CancelCheckInterval is how often a running attempt reads its
	// execution to learn of a user's cancel (or a force delete) sooner than
	// the next heartbeat would tell it: one read per running attempt per
	// interval. Default DefaultCancelCheck (1s); negative turns the check
	// off, leaving heartbeats to deliver cancels.
	CancelCheckInterval time.Duration

	// CancelGrace is how long a hard Stop waits for cancelled handlers to
	// return. A handler that ignores its context past it is abandoned: its
	// lease is released, whatever it returns later is not written, and
	// Stop reports it. Default DefaultCancelGrace (5s).
	CancelGrace time.Duration

	// Backoff is the retry delay after failed attempt n (n >= 1). Default
	// backoff.Delay: exponential with jitter, from 1s up to 10 minutes.
	Backoff func(attempt int) time.Duration

	// Logger receives the worker's logs. Default slog.Default().
	Logger *slog.Logger

	// Now is the clock used for every store call. Default time.Now. Timers
	// (heartbeats, polling, timeouts) use real time.
	Now func() time.Time

	// OnClaim, if set, is called after each claim that leased executions,
	// with how many it leased (for metrics), those released unstarted
	// because the worker was stopping, or because one claim brought more
	// of a tenant than its share (TenantSlots) let start, included. It runs on the claim loop and must not
	// block.
	OnClaim func(n int)

	// OnRun, if set, is called once for each attempt the worker ran, when
	// its outcome is written or given up on (for metrics). It runs on the
	// attempt's goroutine before its slot's accounting ends, and must not
	// block.
	OnRun func(r *Run)

	// TracerProvider, if set, traces the worker's claims, runs, flow
	// steps and settling writes (docs/tracing.md); each run joins the
	// trace of its execution's TraceParent. nil: no spans, but a
	// handler's context still carries the execution's trace context.
	TracerProvider trace.TracerProvider
}

// Worker claims executions from a store and runs their handlers, at most
// Slots at a time. Register handlers with Handle, then Start; Stop to end.
type Worker struct {
	cfg      WorkerConfig
	notifier store.Notifier   // nil when the store cannot push wake-ups
	rider    store.ClaimRider // nil when the store's submissions cannot carry claims
	tracer   trace.Tracer     // nil: tracing off
	log      *slog.Logger
	life     lifecycle

	mu       sync.Mutex
	handlers map[string]Handler
	frozen   bool // set by Start: the registry no longer changes

	kinds    []string        // what Claim asks for, fixed at Start
	jobs     context.Context // parent of every handler's context: the hard stop level
	running  atomic.Int64    // handlers running: they hold a slot each
	share    *share          // handlers running per tenant (TenantSlots)
	settling atomic.Int64    // attempts whose handler returned, their outcome being written
	wg       sync.WaitGroup  // one per running attempt
	freed    chan struct{}   // a slot was freed (buffered 1)
	abandon  chan struct{}   // closed when a hard stop gives up on handlers
	abandons atomic.Int64    // handlers abandoned
}

var _ Service = (*Worker)(nil)

// NewWorker returns a Worker configured by cfg with its defaults applied.
// Configuration errors are reported by Start.
func NewWorker(cfg WorkerConfig) *Worker {
	if cfg.WorkerID == "" {
		cfg.WorkerID = defaultWorkerID()
	}
	if cfg.Slots <= 0 {
		cfg.Slots = DefaultSlots
	}
	if cfg.TenantSlots <= 0 {
		cfg.TenantSlots = max(cfg.Slots/2, 1)
	}
	if cfg.LeaseDuration <= 0 {
		cfg.LeaseDuration = DefaultLeaseDuration
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = cfg.LeaseDuration / 3
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.CancelCheckInterval == 0 {
		cfg.CancelCheckInterval = DefaultCancelCheck
	}
	if cfg.CancelGrace <= 0 {
		cfg.CancelGrace = DefaultCancelGrace
	}
	if cfg.Backoff == nil {
		cfg.Backoff = backoff.Delay
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Queues = slices.Clone(cfg.Queues)
	cfg.Kinds = slices.Clone(cfg.Kinds)
	w := &Worker{
		cfg:      cfg,
		log:      cfg.Logger.With("component", "worker", "worker_id", cfg.WorkerID),
		life:     lifecycle{name: "worker"},
		handlers: make(map[string]Handler),
		freed:    make(chan struct{}, 1),
		share:    newShare(cfg.TenantSlots, cfg.Slots),
		abandon:  make(chan struct{}),
	}
	w.notifier, _ = cfg.Store.(store.Notifier)
	w.rider, _ = cfg.Store.(store.ClaimRider)
	w.tracer = tracing.Tracer(cfg.TracerProvider)
	return w
}

// ID returns the worker's id, as recorded in its leases.
func (w *Worker) ID() string { return w.cfg.WorkerID }

// Handle registers h for kind, replacing an earlier handler for it. Handlers
// are registered before Start; Handle panics afterwards, or when kind is
// empty or h is nil.
func (w *Worker) Handle(kind string, h Handler) {
	if kind == "" || h == nil {
		panic("engine: Handle needs a kind and a handler")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.frozen {
		panic(fmt.Sprintf("engine: Handle(%q) after Start", kind))
	}
	w.handlers[kind] = h
}

// Kinds returns the registered kinds, sorted.
func (w *Worker) Kinds() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(maps.Keys(w.handlers))
}

// Start starts claiming. It fails when the configuration is unusable: no
// store, no handler, or a heartbeat interval not shorter than the lease.
func (w *Worker) Start(ctx context.Context) error {
	if w.cfg.Store == nil {
		return errors.New("engine: worker: no Store")
	}
	if w.cfg.HeartbeatInterval >= w.cfg.LeaseDuration {
		return fmt.Errorf("engine: worker: HeartbeatInterval %v is not shorter than LeaseDuration %v",
			w.cfg.HeartbeatInterval, w.cfg.LeaseDuration)
	}
	w.mu.Lock()
	if len(w.handlers) == 0 {
		w.mu.Unlock()
		return errors.New("engine: worker: no handler registered")
	}
	w.frozen = true
	w.kinds = w.cfg.Kinds
	if len(w.kinds) == 0 {
		w.kinds = slices.Sorted(maps.Keys(w.handlers))
	}
	w.mu.Unlock()
	return w.life.start(ctx, w.run)
}

// Stop stops claiming and waits for running handlers to return. When ctx is
// done first, it cancels them with cause ErrShutdown and releases their
// leases so another worker runs them at once (the start still counts in
// Attempt, but a released execution always runs again). A lease whose claim
// answers after Stop is released before its handler starts, and its start
// is given back (store.ReleaseParams.Unstarted).
// Stop returns once every attempt is settled; it reports an error only when
// a handler ignored its cancelled context past CancelGrace.
func (w *Worker) Stop(ctx context.Context) error {
	return w.life.stop(ctx)
}

// run is the worker's body: claim until soft stop, then drain.
func (w *Worker) run(soft, hard context.Context, ready func()) error {
	// The handlers' contexts are cancelled by run itself once a hard stop
	// is logged, so the log counts the handlers it cancels: cancelled by
	// the stop directly, they would begin returning before the count.
	jobs, cancelJobs := context.WithCancelCause(context.WithoutCancel(hard))
	defer cancelJobs(ErrShutdown)
	w.jobs = jobs
	ready()
	w.log.Info("worker started", "slots", w.cfg.Slots, "tenant_slots", w.cfg.TenantSlots, "kinds", w.kinds, "queues", w.cfg.Queues,
		"wakeups", w.notifier != nil)
	w.claimLoop(soft)

	idle := make(chan struct{})
	go func() { w.wg.Wait(); close(idle) }()
	select {
	case <-idle:
		w.log.Info("worker stopped")
		return nil
	case <-hard.Done():
	}
	// Hard stop: every handler's context is cancelled with ErrShutdown.
	w.log.Warn("worker stopping hard: cancelling running handlers", "running", w.running.Load())
	cancelJobs(ErrShutdown)
	grace := time.NewTimer(w.cfg.CancelGrace)
	defer grace.Stop()
	select {
	case <-idle:
		w.log.Info("worker stopped")
		return nil
	case <-grace.C:
	}
	close(w.abandon)
	<-idle
	n := w.abandons.Load()
	w.log.Error("worker stopped, abandoning handlers that ignored cancellation", "abandoned", n)
	return fmt.Errorf("engine: worker: %d handler(s) did not return within %v of being cancelled; their leases were released",
		n, w.cfg.CancelGrace)
}

// claimLoop claims work until ctx (the soft stop level) is done.
func (w *Worker) claimLoop(ctx context.Context) {
	poll := time.NewTimer(0)
	defer poll.Stop()
	failures := 0
	crowded := 0 // claims in a row that leased only work of tenants at their share
	for {
		// A select below may pick a wake-up over a stop that came at the
		// same moment; never start a claim once stopping.
		if ctx.Err() != nil {
			return
		}
		var changed <-chan struct{}
		if w.notifier != nil {
			// Taken before the claim, so a change that lands after the
			// claim's snapshot still wakes us.
			changed = w.notifier.Changed()
		}
		free := w.free()
		asked, claimed, passed := 0, 0, 0
		var retryAt time.Time
		var excluded []string
		if free > 0 {
			asked, excluded = w.share.batch(free), w.share.excluded()
			n, over, next, err := w.claim(ctx, asked, excluded)
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				failures++
				w.log.Error("claim failed", "err", err, "failures", failures)
			default:
				failures = 0
			}
			claimed, passed, retryAt = n, over, next
		}
		if claimed == 0 && passed > 0 {
			crowded++
		} else {
			crowded = 0
		}
		if crowded == 1 {
			// The claim moved the passed tenants' turns past every other
			// tenant's (I12): ask once more at once, for another tenant's
			// work.
			continue
		}
		var freed <-chan struct{}
		if len(excluded) > 0 {
			// The claim passed tenants at their share: a freed slot may
			// let one of them start.
			freed = w.freed
		}
		if crowded > 1 {
			// Only tenants at their share have work ready: wait for a slot
			// to free or the poll, not for the notices of the releases just
			// made.
			changed, freed = nil, w.freed
		}

		wait := w.cfg.PollInterval
		if failures > 0 {
			// The store is struggling: back off, up to 30 polls.
			wait = min(wait*time.Duration(1<<min(failures-1, 5)), 30*w.cfg.PollInterval)
		} else if !retryAt.IsZero() {
			// The claim deferred rate-limited work: come back when its
			// bucket has a token, not a whole poll later.
			wait = max(min(wait, retryAt.Sub(w.cfg.Now())), time.Millisecond)
		}
		resetTimer(poll, wait)
		if claimed > 0 && claimed == asked && asked < free {
			// A full batch smaller than the free slots (share.batch):
			// more may be ready, and there is room for it.
			continue
		}
		if claimed == free {
			// Every slot is busy (or the batch filled them): more work
			// may be waiting, so claim again as soon as a slot frees.
			select {
			case <-ctx.Done():
				return
			case <-w.freed:
			}
			continue
		}
		// While it waits, the worker's next claim rides with the store's
		// next submission, if the store can carry it (store.ClaimRider).
		var ride store.Ride
		var ran <-chan struct{}
		if w.rider != nil && failures == 0 && crowded == 0 {
			if n := w.free(); n > 0 {
				if ride = w.rider.RideClaim(w.claimParams(w.share.batch(n), w.share.excluded()), w.cfg.Now); ride != nil {
					ran = ride.Ran()
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-changed: // nil without a notifier: never ready
		case <-freed: // nil unless tenants were passed or crowded
		case <-poll.C:
		case <-ran: // nil without a ride
		}
		if ride != nil {
			w.endRide(ctx, ride)
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// endRide withdraws a parked claim, or starts what it leased as claim
// does (releasing it all when the worker is stopping).
func (w *Worker) endRide(ctx context.Context, ride store.Ride) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.LeaseDuration)
	defer cancel()
	start := time.Now()
	res, err := ride.Stop(cctx)
	if err != nil {
		w.log.Error("claim failed", "err", fmt.Errorf("engine: claim: %w", err))
		return
	}
	if res != nil {
		w.startLeases(ctx, cctx, start, res.Leases)
	}
}

// claim leases up to max executions, none of the excluded tenants (at
// their share with only the last slot free: share.excluded), and starts
// their handlers, releasing unstarted those of tenants the share refuses
// (TenantSlots) — only when one claim brings more of a tenant than it may
// start. It returns how many it started, how many it released so, and the
// store's ClaimResult.RetryAt.
func (w *Worker) claim(ctx context.Context, max int, excluded []string) (started, passed int, retryAt time.Time, err error) {
	// A claim that commits must reach us even if Stop comes meanwhile, or its
	// leases would sit until they expire: claim on a context Stop does not
	// cancel, and release what arrives after Stop.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.LeaseDuration)
	defer cancel()
	start := time.Now()
	p := w.claimParams(max, excluded)
	p.Now = w.cfg.Now()
	res, err := w.cfg.Store.Claim(cctx, p)
	if err != nil {
		return 0, 0, time.Time{}, fmt.Errorf("engine: claim: %w", err)
	}
	started, passed = w.startLeases(ctx, cctx, start, res.Leases)
	return started, passed, res.RetryAt, nil
}

// claimParams is what the worker claims: up to max, none of excluded.
func (w *Worker) claimParams(max int, excluded []string) *store.ClaimParams {
	return &store.ClaimParams{
		WorkerID:       w.cfg.WorkerID,
		Queues:         w.cfg.Queues,
		Kinds:          w.kinds,
		Max:            max,
		LeaseDuration:  w.cfg.LeaseDuration,
		ExcludeTenants: excluded,
	}
}

// startLeases starts the handlers of leases claimed (from start), releasing
// unstarted those of tenants the share refuses, or all of them when ctx
// (the soft stop level) is done; cctx is for those releases. It returns
// how many it started and how many it released so.
func (w *Worker) startLeases(ctx, cctx context.Context, start time.Time, leases []store.Lease) (started, passed int) {
	if n := len(leases); n > 0 && w.cfg.OnClaim != nil {
		w.cfg.OnClaim(n)
	}
	w.traceClaim(start, leases)
	if ctx.Err() != nil {
		for i := range leases {
			w.releaseUnstarted(cctx, &leases[i])
		}
		return 0, 0
	}
	for i := range leases {
		lease := leases[i]
		if !w.share.take(lease.Tenant) {
			w.releaseUnstarted(cctx, &lease)
			passed++
			continue
		}
		w.running.Add(1)
		started++
		w.wg.Go(func() { w.execute(&lease) })
	}
	if n := len(leases); n > 0 {
		w.log.Debug("claimed", "count", n, "passed", passed)
	}
	return started, passed
}

// releaseUnstarted gives back a lease whose handler never started.
func (w *Worker) releaseUnstarted(ctx context.Context, lease *store.Lease) {
	_, err := w.cfg.Store.Release(ctx, &store.ReleaseParams{
		ExecutionID: lease.ExecutionID,
		Tenant:      lease.Tenant,
		Token:       lease.Token,
		Unstarted:   true,
		Now:         w.cfg.Now(),
	})
	if err != nil {
		w.log.Warn("releasing a lease claimed while stopping failed; it will be rescued when it expires",
			"execution_id", lease.ExecutionID, "tenant", lease.Tenant, "err", err)
	}
}

// free is how many executions the worker may claim now: its free slots,
// while the outcomes being written number at most Slots (so a store that
// is slow to take them slows the claims too).
func (w *Worker) free() int {
	running, settling := int(w.running.Load()), int(w.settling.Load())
	return max(min(w.cfg.Slots-running, 2*w.cfg.Slots-running-settling), 0)
}

// slotFreed is called when the slot of a handler of tenant frees.
func (w *Worker) slotFreed(tenant string) {
	w.share.give(tenant)
	w.running.Add(-1)
	w.signalFreed()
}

// signalFreed wakes a claim loop waiting for room.
func (w *Worker) signalFreed() {
	select {
	case w.freed <- struct{}{}:
	default:
	}
}

func defaultWorkerID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "worker"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// resetTimer makes t fire after d. Since Go 1.23 a reset timer never
// delivers a stale value.
func resetTimer(t *time.Timer, d time.Duration) {
	t.Reset(d)
}
