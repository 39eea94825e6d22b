package redis

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"
)

// Hint repair: one goroutine per Router (started by OpenRouter, ended by
// Close) re-derives every tenant's hints from its namespace (repairHints)
// every repairEvery (jittered ±20%), and at once when a call may have left
// a hint missing (wantRepair: a node out of reach, a hint write that
// failed, a call whose script may have committed without its reply).
// Repairs never overlap (repairMu: Prune's, which runs inline, waits for a
// running one), and no Claim or pass ever runs one inline. So a hint a
// process failed to write, or died before writing (a crash between a
// script and its hint write), is back within about repairEvery in any
// process of the namespace that is running.
const repairEvery = 10 * time.Second

// wantRepair asks the repair goroutine for a repair now.
func (r *Router) wantRepair() {
	r.needRepair.Store(true)
	select {
	case r.repairKick <- struct{}{}:
	default: // one is already asked for
	}
}

// repairLoop is the repair goroutine.
func (r *Router) repairLoop(ctx context.Context) {
	defer close(r.repairDone)
	jitter := func() time.Duration {
		return time.Duration(float64(repairEvery) * (0.8 + 0.4*rand.Float64()))
	}
	timer := time.NewTimer(jitter())
	defer timer.Stop()
	retry := false
	for {
		if !retry {
			select {
			case <-ctx.Done():
				return
			case <-r.repairKick:
			case <-timer.C:
			}
		}
		r.needRepair.Store(false)
		if err := r.repairHints(ctx); err != nil && ctx.Err() == nil {
			r.needRepair.Store(true)
		}
		if retry = r.needRepair.Load(); retry {
			// Failed (a node still out of reach), or asked for again
			// meanwhile: once more in a second, and no sooner. A failed
			// repair's own calls ask for another at once (clusterHook),
			// which would otherwise repeat it without a pause.
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			select {
			case <-r.repairKick: // asked for meanwhile: the retry is it
			default:
			}
			continue
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(jitter())
	}
}

// repairHints re-derives every tenant's hints from its namespace, each as
// refresh does (a compare and set against the count of lowerings read
// before the index), in three pipelined steps: the counts (home), the
// indexes (every tenant's namespace, one pipeline per node), the writes
// (home). A tenant whose reads fail keeps its hints; its error is joined
// to the answer.
func (r *Router) repairHints(ctx context.Context) error {
	r.repairMu.Lock()
	defer r.repairMu.Unlock()
	names, err := r.tenants(ctx)
	if err != nil || len(names) == 0 {
		return err
	}
	var errs []error
	for from := 0; from < len(names); from += repairBatch {
		errs = append(errs, r.repairBatch(ctx, names[from:min(len(names), from+repairBatch)]))
		if ctx.Err() != nil {
			break
		}
	}
	return errors.Join(errs...)
}

// repairBatch is the number of tenants repairHints repairs at once.
const repairBatch = 256

func (r *Router) repairBatch(ctx context.Context, names []string) error {
	h := r.home
	gens := make([]*goredis.StringCmd, len(names)*len(allHints))
	if _, err := h.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, t := range names {
			for j, w := range allHints {
				gens[i*len(allHints)+j] = p.Get(ctx, h.k.hintGen(w, t))
			}
		}
		return nil
	}); err != nil && !errors.Is(err, goredis.Nil) {
		return fmt.Errorf("redis: hint repair: %w", interpretError(err))
	}
	type reads struct {
		ready                          *goredis.IntCmd
		sched, due, running, wake, nxt *goredis.ZSliceCmd
	}
	rd := make([]reads, len(names))
	_, _ = h.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, t := range names {
			v := r.view(t)
			first := func(key string) *goredis.ZSliceCmd { return p.ZRangeWithScores(ctx, key, 0, 0) }
			rd[i] = reads{ready: p.ZCard(ctx, v.k.readyTenant(t)), sched: first(v.k.sched()), due: first(v.k.due()),
				running: first(v.k.running()), wake: first(v.k.wake()), nxt: first(v.k.nextRun())}
		}
		return nil
	})
	type write struct {
		t, what, gen, score string
	}
	var writes []write
	var errs []error
	for i, t := range names {
		x := rd[i]
		if err := errors.Join(x.ready.Err(), x.sched.Err(), x.due.Err(), x.running.Err(), x.wake.Err(), x.nxt.Err()); err != nil {
			errs = append(errs, fmt.Errorf("tenant %s: redis: hint repair: %w", t, interpretError(err)))
			continue
		}
		first := func(c *goredis.ZSliceCmd) (int64, bool) {
			if zs := c.Val(); len(zs) > 0 {
				return int64(math.Round(zs[0].Score)), true
			}
			return 0, false
		}
		sa, sok := first(x.sched)
		da, dok := first(x.due)
		for j, w := range allHints {
			var at int64
			var ok bool
			switch w {
			case hintClaim:
				if x.ready.Val() > 0 {
					at, ok = 0, true
				} else {
					at, ok = sa, sok
				}
			case hintPromote:
				switch {
				case sok && dok:
					at, ok = min(sa, da), true
				case sok:
					at, ok = sa, true
				default:
					at, ok = da, dok
				}
			case hintRescue:
				at, ok = first(x.running)
			case hintWake:
				at, ok = first(x.wake)
			case hintFire:
				at, ok = first(x.nxt)
			}
			score := ""
			if ok {
				score = itoa(at)
			}
			g := gens[i*len(allHints)+j]
			if g.Err() != nil && !errors.Is(g.Err(), goredis.Nil) {
				errs = append(errs, fmt.Errorf("tenant %s: redis: hint repair: %w", t, interpretError(g.Err())))
				continue
			}
			writes = append(writes, write{t, w, g.Val(), score})
		}
	}
	// The writes: hint_set.lua each (home's slot), 16 at a time.
	var g errgroup.Group
	g.SetLimit(16)
	werrs := make([]error, len(writes))
	for i, w := range writes {
		g.Go(func() error {
			_, err := h.run(ctx, "hint", scriptHintSet, []string{h.k.hint(w.what), h.k.hintGen(w.what, w.t), h.k.hintHold(w.what, w.t)},
				h.k.ns, w.t, w.gen, w.score, time.Now().UnixMilli())
			if err != nil {
				werrs[i] = fmt.Errorf("tenant %s: %w", w.t, err)
			}
			return nil
		})
	}
	_ = g.Wait()
	return errors.Join(append(errs, werrs...)...)
}
