package engine

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/latch-run/latch/store"
)

// Defaults of RescuerConfig.
const (
	DefaultRescueInterval = 5 * time.Second
	DefaultBatchLimit     = 1000
)

// RescuerConfig configures a Rescuer. Zero fields take the stated defaults.
type RescuerConfig struct {
	// Store is the store to keep. Required.
	Store store.Store
	// Interval between passes. Default DefaultRescueInterval (5s). A pass
	// also runs at Start.
	Interval time.Duration
	// Limit is the most executions one store call handles; a pass repeats
	// the call while it comes back full. Default DefaultBatchLimit (1000).
	Limit int
	// Logger receives the counts. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock passed to the store. Default time.Now.
	Now func() time.Time
	// OnRescue, if set, is called after each pass that ended expired
	// leases, with what this rescuer did to them (for metrics): requeued,
	// failed or cancelled. It must not block.
	OnRescue func(store.RescueResult)
}

// Rescuer recovers executions whose worker died: each pass calls
// store.Rescue (expired leases go back to queued, or to failed or cancelled)
// and store.Promote (scheduled executions whose run_at came become queued).
// With it, an execution is claimable again within its lease plus one
// Interval (invariant I9). Any number of rescuers may run on one store.
type Rescuer struct {
	cfg  RescuerConfig
	log  *slog.Logger
	life lifecycle
}

var _ Service = (*Rescuer)(nil)

// NewRescuer returns a Rescuer configured by cfg with its defaults applied.
func NewRescuer(cfg RescuerConfig) *Rescuer {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultRescueInterval
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
	return &Rescuer{cfg: cfg, log: cfg.Logger.With("component", "rescuer"), life: lifecycle{name: "rescuer"}}
}

// Start runs a first pass at once, then one every Interval.
func (r *Rescuer) Start(ctx context.Context) error {
	if r.cfg.Store == nil {
		return errNoStore("rescuer")
	}
	return r.life.start(ctx, func(soft, _ context.Context, ready func()) error {
		ready()
		every(soft, r.cfg.Interval, true, r.pass)
		return nil
	})
}

// Stop ends the loop, interrupting a pass in progress (its store calls are
// atomic, so an interrupted pass changes nothing).
func (r *Rescuer) Stop(ctx context.Context) error { return r.life.stop(ctx) }

// RunOnce runs one pass now and returns its totals.
func (r *Rescuer) RunOnce(ctx context.Context) (store.RescueResult, store.PromoteResult, error) {
	var promoted store.PromoteResult
	rescued, rerr := r.rescue(ctx)
	r.observe(rescued) // on an error too: the batches before it committed
	if rerr != nil && ctx.Err() != nil {
		return rescued, promoted, rerr
	}
	// A failed Rescue does not hold Promote back: a store that spreads
	// tenants (the Redis tenant router) may fail for one tenant and still
	// have done, and still do, the others' work.
	for {
		res, err := r.cfg.Store.Promote(ctx, &store.PromoteParams{Now: r.cfg.Now(), Limit: r.cfg.Limit})
		if res != nil {
			promoted.Promoted += res.Promoted
		}
		if err != nil {
			return rescued, promoted, errors.Join(rerr, err)
		}
		if res.Promoted < r.cfg.Limit {
			break
		}
	}
	return rescued, promoted, rerr
}

// rescue calls store.Rescue until a batch comes back short, and returns
// the totals.
func (r *Rescuer) rescue(ctx context.Context) (store.RescueResult, error) {
	var rescued store.RescueResult
	for {
		res, err := r.cfg.Store.Rescue(ctx, &store.RescueParams{Now: r.cfg.Now(), Limit: r.cfg.Limit})
		if res != nil { // a partial pass's totals come with its error
			rescued.Requeued += res.Requeued
			rescued.Failed += res.Failed
			rescued.Cancelled += res.Cancelled
		}
		if err != nil {
			return rescued, err
		}
		if res.Requeued+res.Failed+res.Cancelled < r.cfg.Limit {
			return rescued, nil
		}
	}
}

func (r *Rescuer) pass(ctx context.Context) {
	rescued, promoted, err := r.RunOnce(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Error("rescue pass failed", "err", err)
		}
		return
	}
	level := slog.LevelDebug
	if rescued.Requeued+rescued.Failed+rescued.Cancelled+promoted.Promoted > 0 {
		level = slog.LevelInfo
	}
	r.log.Log(ctx, level, "rescue pass", "requeued", rescued.Requeued, "failed", rescued.Failed,
		"cancelled", rescued.Cancelled, "promoted", promoted.Promoted)
}

// observe reports rescued to OnRescue, when there is something to report.
func (r *Rescuer) observe(rescued store.RescueResult) {
	if r.cfg.OnRescue != nil && rescued.Requeued+rescued.Failed+rescued.Cancelled > 0 {
		r.cfg.OnRescue(rescued)
	}
}
