package engine

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/latch-run/latch/store"
)

// DefaultPruneInterval is PrunerConfig.Interval's default.
const DefaultPruneInterval = time.Minute

// PrunerConfig configures a Pruner. Zero fields take the stated defaults.
type PrunerConfig struct {
	// Store is the store to prune. Required.
	Store store.Store
	// Interval between passes; the first comes one Interval after Start.
	// Default DefaultPruneInterval (1 minute).
	Interval time.Duration
	// Limit is the most executions one store call deletes; a pass repeats
	// the call while it comes back full. Default DefaultBatchLimit (1000).
	Limit int
	// Logger receives the counts. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock passed to the store. Default time.Now.
	Now func() time.Time
}

// Pruner applies retention: each pass calls store.Prune, which deletes
// terminal executions older than their tenant's retention and expired dedup
// keys. Any number of pruners may run on one store.
type Pruner struct {
	cfg  PrunerConfig
	log  *slog.Logger
	life lifecycle
}

var _ Service = (*Pruner)(nil)

// NewPruner returns a Pruner configured by cfg with its defaults applied.
func NewPruner(cfg PrunerConfig) *Pruner {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultPruneInterval
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
	return &Pruner{cfg: cfg, log: cfg.Logger.With("component", "pruner"), life: lifecycle{name: "pruner"}}
}

// Start runs a pass every Interval.
func (p *Pruner) Start(ctx context.Context) error {
	if p.cfg.Store == nil {
		return errNoStore("pruner")
	}
	return p.life.start(ctx, func(soft, _ context.Context, ready func()) error {
		ready()
		every(soft, p.cfg.Interval, false, p.pass)
		return nil
	})
}

// Stop ends the loop, interrupting a pass in progress.
func (p *Pruner) Stop(ctx context.Context) error { return p.life.stop(ctx) }

// RunOnce runs one pass now and returns its totals.
func (p *Pruner) RunOnce(ctx context.Context) (store.PruneResult, error) {
	var total store.PruneResult
	for {
		res, err := p.cfg.Store.Prune(ctx, &store.PruneParams{Now: p.cfg.Now(), Limit: p.cfg.Limit})
		if err != nil {
			return total, err
		}
		total.Executions += res.Executions
		total.DedupKeys += res.DedupKeys
		if res.Executions < p.cfg.Limit {
			return total, nil
		}
	}
}

func (p *Pruner) pass(ctx context.Context) {
	res, err := p.RunOnce(ctx)
	if err != nil {
		if ctx.Err() == nil {
			p.log.Error("prune pass failed", "err", err)
		}
		return
	}
	level := slog.LevelDebug
	if res.Executions+res.DedupKeys > 0 {
		level = slog.LevelInfo
	}
	p.log.Log(ctx, level, "prune pass", "executions", res.Executions, "dedup_keys", res.DedupKeys)
}

func errNoStore(loop string) error {
	return errors.New("engine: " + loop + ": no Store")
}
