package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/latch-run/latch/store"
)

// DefaultWakeInterval is the Waker's default time between passes: a due
// sleep or a timed-out wait is claimable again within about this long.
const DefaultWakeInterval = time.Second

// WakerConfig configures a Waker. Zero fields take the stated defaults.
type WakerConfig struct {
	// Store is the store whose suspended flows to wake. Required.
	Store store.Store
	// Interval between passes. Default DefaultWakeInterval (1s).
	Interval time.Duration
	// Limit is the most executions one store call wakes; a pass repeats
	// the call while it comes back full. Default DefaultBatchLimit (1000).
	Limit int
	// Logger receives the counts. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock passed to the store. Default time.Now.
	Now func() time.Time
}

// Waker ends the suspensions whose time has come (store.Wake): a flow's
// sleep that is over, a wait whose timeout passed. It is the timer side of
// flows (docs/flows.md); signals end waits themselves. It runs apart from
// the Rescuer because a sleep's end should be seen within a second, while
// rescuing every second would be needless work. Any number of wakers may
// run on one store: each suspension ends once, by one of them or by a
// signal.
type Waker struct {
	cfg  WakerConfig
	log  *slog.Logger
	life lifecycle
}

var _ Service = (*Waker)(nil)

// NewWaker returns a Waker configured by cfg with its defaults applied.
func NewWaker(cfg WakerConfig) *Waker {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultWakeInterval
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
	return &Waker{cfg: cfg, log: cfg.Logger.With("component", "waker"), life: lifecycle{name: "waker"}}
}

// Start runs a first pass at once, then one every Interval.
func (w *Waker) Start(ctx context.Context) error {
	if w.cfg.Store == nil {
		return errNoStore("waker")
	}
	return w.life.start(ctx, func(soft, _ context.Context, ready func()) error {
		ready()
		every(soft, w.cfg.Interval, true, w.pass)
		return nil
	})
}

// Stop ends the loop, interrupting a pass in progress (each store call is
// atomic).
func (w *Waker) Stop(ctx context.Context) error { return w.life.stop(ctx) }

// RunOnce runs one pass now and returns how many executions it woke.
func (w *Waker) RunOnce(ctx context.Context) (int, error) {
	woken := 0
	for {
		res, err := w.cfg.Store.Wake(ctx, &store.WakeParams{Now: w.cfg.Now(), Limit: w.cfg.Limit})
		if err != nil {
			return woken, err
		}
		woken += res.Woken
		if res.Woken < w.cfg.Limit {
			return woken, nil
		}
	}
}

func (w *Waker) pass(ctx context.Context) {
	n, err := w.RunOnce(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		w.log.Error("wake pass failed", "err", err)
	case n > 0:
		w.log.Debug("wake pass", "woken", n)
	}
}
