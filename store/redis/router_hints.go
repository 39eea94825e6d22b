package redis

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/store"
)

// Hints: which tenants may have work of a kind, and from when.
//
// A loop over every tenant would cost every idle tenant a call per tick, so
// the router keeps, in the home namespace, one sorted set per kind of work
// (hint(what)): tenant names scored by the earliest time, in µs, at which
// the tenant may have such work. A score is a lower bound, never the
// truth: a tenant out of a hint set has no such work, a tenant in it may
// have none. The rules that keep that so:
//
//   - After a script that may have given a tenant such work commits, the
//     router lowers the tenant's score (ZADD LT), in Go, after the reply.
//   - When a pass finds a tenant without work (or done), it re-derives the
//     tenant's hint from the tenant's index: its first time, or no hint
//     when it is empty (refresh), as a compare and set against the count
//     of lowerings (hintGen). A script that commits work before the read
//     is seen by it; one that commits after it lowers the hint, and either
//     the lowering comes after the write or it makes the write fail.
//   - A call whose work must be seen by a pass that starts once the work
//     is visible, before the call answers (a suspension's wake: Wake
//     answers every due one), also lowers the hint before its script and
//     holds it down until after its lowering (hold): a refresh that read
//     the index before the script committed cannot write in between.
//   - A process that dies between a script and its hint write only delays
//     the work: every process re-derives every tenant's hints from its
//     namespace every 10 s or so, in one background goroutine, and at once
//     after a node was out of reach (a failover of the home's primary may
//     lose hint writes whose work the tenants' primaries kept) or a hint
//     write failed (router_repair.go); Prune does too.
const (
	hintClaim   = "claim"   // ready work, or scheduled work from its run_at
	hintPromote = "promote" // scheduled work (sched, due), from its run_at (Promote)
	hintRescue  = "rescue"  // leases, from their expiry (Rescue)
	hintWake    = "wake"    // suspensions, from their wake_at (Wake)
	hintFire    = "fire"    // enabled schedules, from their next run (ListSchedules DueBy)
)

var allHints = []string{hintClaim, hintPromote, hintRescue, hintWake, hintFire}

// lower lowers tenant t's hints of the kinds given to at (µs), each with
// its lowering counted (hintGen) in the same MULTI. It runs after the
// script it follows has answered, on a context its caller cannot cancel;
// a failure is not the caller's (the script committed): repairHints makes
// up for it.
func (r *Router) lower(ctx context.Context, t string, at int64, whats ...string) {
	ctx = context.WithoutCancel(ctx)
	at = max(at, 0)
	if _, err := r.home.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		for _, w := range whats {
			p.ZAddLT(ctx, r.home.k.hint(w), goredis.Z{Score: float64(at), Member: t})
			p.Incr(ctx, r.home.k.hintGen(w, t))
		}
		return nil
	}); err != nil {
		r.wantRepair()
	}
}

// holdFor bounds a hold: one whose process died before releasing it stops
// holding its hint down after this long.
const holdFor = time.Minute

// hold lowers tenant t's hint of kind what to at (µs) before a script that
// may give the tenant such work, counts the lowering, and holds the hint
// there: no refresh writes it (hint_set.lua) until release, which the
// caller runs after the script and its own lowering. It answers the
// hold's token, "" when the write failed (the repair goroutine makes up
// for it; the call goes on: the lowering after the script still comes).
func (r *Router) hold(ctx context.Context, t string, at int64, what string) string {
	ctx = context.WithoutCancel(ctx)
	token := rand.Text()
	hold := r.home.k.hintHold(what, t)
	if _, err := r.home.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.ZAddLT(ctx, r.home.k.hint(what), goredis.Z{Score: float64(max(at, 0)), Member: t})
		p.Incr(ctx, r.home.k.hintGen(what, t))
		p.ZAdd(ctx, hold, goredis.Z{Score: float64(time.Now().Add(holdFor).UnixMilli()), Member: token})
		p.PExpire(ctx, hold, holdFor)
		return nil
	}); err != nil {
		r.wantRepair()
		return ""
	}
	return token
}

// release ends a hold, counted as a lowering: a refresh that read the
// tenant's index before the held call's script committed fails its write
// whenever it comes.
func (r *Router) release(ctx context.Context, t, what, token string) {
	if token == "" {
		return
	}
	ctx = context.WithoutCancel(ctx)
	if _, err := r.home.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.ZRem(ctx, r.home.k.hintHold(what, t), token)
		p.Incr(ctx, r.home.k.hintGen(what, t))
		return nil
	}); err != nil {
		r.wantRepair() // the hold lapses after holdFor
	}
}

// unsure notes a call's failure that may have come after its script
// committed (a lost reply, a server timeout: anything but a refusal), so
// that its hints may be missing: the repair goroutine repairs them now. The
// caller's own end (context.Canceled, DeadlineExceeded: a client that went
// away) asks for no repair: the periodic one bounds what it may have left.
func (r *Router) unsure(err error) {
	if err != nil && !refusal(err) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		r.wantRepair()
	}
}

// refusal reports whether err is a business rule's refusal, which a script
// answers having written nothing.
func refusal(err error) bool {
	for _, e := range []error{store.ErrNotFound, store.ErrExists, store.ErrQuotaExceeded, store.ErrDedupKeyReused,
		store.ErrLeaseLost, store.ErrNotTerminal, store.ErrNotActive, store.ErrTooManySteps,
		store.ErrJournalTooLarge, store.ErrSignalBufferFull, store.ErrNotFailed, store.ErrScheduleLimit, store.ErrInvalid, store.ErrTooManyChildren,
		store.ErrTooManySubscriptions, store.ErrStorageExceeded} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// next reads when tenant t may next have work of kind what, from its
// namespace's index; ok false when it has none.
func (r *Router) next(ctx context.Context, t, what string) (at int64, ok bool, err error) {
	v := r.view(t)
	first := func(key string) (int64, bool, error) {
		zs, err := v.rdb.ZRangeWithScores(ctx, key, 0, 0).Result()
		if err != nil || len(zs) == 0 {
			return 0, false, err
		}
		return int64(math.Round(zs[0].Score)), true, nil
	}
	switch what {
	case hintClaim:
		n, err := v.rdb.ZCard(ctx, v.k.readyTenant(t)).Result()
		if err != nil || n > 0 {
			return 0, err == nil, err
		}
		return first(v.k.sched())
	case hintPromote:
		// Scheduled ones in sched, or in due once a claim found them due.
		a, okA, err := first(v.k.sched())
		if err != nil {
			return 0, false, err
		}
		b, okB, err := first(v.k.due())
		switch {
		case err != nil || !okB:
			return a, okA, err
		case !okA:
			return b, true, nil
		}
		return min(a, b), true, nil
	case hintRescue:
		return first(v.k.running())
	case hintWake:
		return first(v.k.wake())
	case hintFire:
		return first(v.k.nextRun())
	}
	return 0, false, fmt.Errorf("redis: unknown hint %q", what)
}

// refresh re-derives tenant t's hint of kind what from the tenant's index
// (its first time, or no hint when it is empty), as a compare and set: the
// write (hint_set.lua) happens only if no lowering was counted since the
// count was read, before the index, so the hint is never, even for a
// moment, without work a finished call gave the tenant. A refresh that
// loses the race leaves the hint as it is, a lower bound still. (No
// connection is held across the reads: on one node, a WATCH held while
// reading could exhaust the pool.)
func (r *Router) refresh(ctx context.Context, t, what string) error {
	r.refreshes.Add(1)
	ctx = context.WithoutCancel(ctx)
	gen := r.home.k.hintGen(what, t)
	g0, err := r.home.rdb.Get(ctx, gen).Result()
	if err != nil && !errors.Is(err, goredis.Nil) {
		return fmt.Errorf("redis: hint: %w", interpretError(err))
	}
	at, ok, err := r.next(ctx, t, what)
	if err != nil {
		return fmt.Errorf("redis: hint: %w", interpretError(err))
	}
	score := ""
	if ok {
		score = itoa(at)
	}
	_, err = r.home.run(ctx, "hint", scriptHintSet, []string{r.home.k.hint(what), gen, r.home.k.hintHold(what, t)},
		r.home.k.ns, t, g0, score, time.Now().UnixMilli())
	return err
}

// hinted returns the tenants whose hint of kind what is not after at (µs),
// earliest first, at most limit (0: all).
func (r *Router) hinted(ctx context.Context, what string, at int64, limit int) ([]string, error) {
	names, err := r.home.rdb.ZRangeArgs(ctx, goredis.ZRangeArgs{Key: r.home.k.hint(what), ByScore: true,
		Start: "-inf", Stop: strconv.FormatInt(at, 10), Count: int64(limit)}).Result()
	if err != nil {
		return nil, fmt.Errorf("redis: hint: %w", interpretError(err))
	}
	return names, nil
}
