package redis

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/latch-run/latch/internal/batch"
)

// Group commit. The hot operations (Admit, Complete) accept a group of
// calls in one script run. A grouper hands concurrent calls to a few
// dispatcher goroutines; each dispatcher takes the first waiting call,
// gathers the others already waiting (up to a bound) and sends them as one
// script run, which decides them in arrival order, each call all or
// nothing, exactly as if they had been sent one by one. It is the SQLite
// backend's group commit: Redis's per-script costs are paid once per group
// instead of once per call.
//
// The queue, the dispatchers and what a caller whose context ends gets are
// package batch's: a caller whose context ends before its call is taken
// into a group gets the context's error and its call is not sent; once
// taken, the call is decided with the group and its caller gets the answer.
// A group runs under the Store's context, which Close ends.
//
// The group protocol (lua/lib.lua, each_call): KEYS holds the script's
// fixed keys, then each call's keys; ARGV[1] is NS, ARGV[2] the number of
// calls, then for each call the number of its keys, the number of its
// arguments, and its arguments. The script answers {version, reply_1, ...,
// reply_n}.
type grouper struct {
	name      string
	script    *luaScript
	fixedKeys []string
	ns        string

	run func(ctx context.Context, op string, sc *luaScript, keys []string, args ...any) ([]any, error)
	b   *batch.Batcher[groupCall, groupDone]
}

type groupCall struct {
	keys   []string
	args   []any
	weight int // items, for the group bound
}

type groupDone struct {
	reply   []any // this call's reply
	all     []any // the whole answer, for replies that refer to others
	version int64
}

// Group bounds: a group takes the calls waiting when its dispatcher is
// free, up to these limits (a single larger call still goes alone), so
// that one script never holds Redis for long. 32 calls rather than 128:
// when many callers arrive at once (64 submits of one key), the first
// answers come back while the rest are still at Redis, which lowers the
// contended latency and raises the drain without costing submits (the
// A/B is in docs/benchmarks.md, latch vs Asynq).
//
// When no other call is waiting, a dispatcher yields once before sending
// (batch.Config.Yield): the callers that the previous group's answer has
// just woken are often runnable but not yet run, and a moment lets them
// join this group. Each script run costs Redis far more than an item in it
// (a one-item Admit about four times an item's share of one of 16,
// measured), so the larger groups it makes take less of Redis.
const (
	groupDispatchers = 2
	maxGroupCalls    = 32
	maxGroupWeight   = 256
)

func (s *Store) newGrouper(name string, script *luaScript, fixedKeys ...string) *grouper {
	g := &grouper{name: name, script: script, fixedKeys: fixedKeys, ns: s.k.ns, run: s.run}
	g.b = batch.New(batch.Config[groupCall, groupDone]{Exec: g.send,
		Max: maxGroupCalls, MaxWeight: maxGroupWeight, Weight: func(c groupCall) int { return c.weight },
		Lanes: groupDispatchers, Yield: true, Context: s.bg})
	return g
}

// close answers the calls not yet sent errClosed, once the groups being
// run are answered.
func (g *grouper) close() { g.b.Close() }

// do sends one call and waits for its share of the group's answer.
func (g *grouper) do(ctx context.Context, weight int, keys []string, args ...any) (groupDone, error) {
	d, err := g.b.Do(ctx, groupCall{keys: keys, args: args, weight: weight})
	if errors.Is(err, batch.ErrClosed) {
		return d, errClosed
	}
	return d, err
}

var groupArgs = sync.Pool{New: func() any { return new([]any) }}

// send runs a group as one script run.
func (g *grouper) send(ctx context.Context, grp *batch.Group[groupCall, groupDone]) {
	keys := append([]string(nil), g.fixedKeys...)
	ap := groupArgs.Get().(*[]any)
	args := append((*ap)[:0], g.ns, len(grp.Items))
	for _, c := range grp.Items {
		keys = append(keys, c.keys...)
		args = append(args, len(c.keys), len(c.args))
		args = append(args, c.args...)
	}
	// The Store's context, not any caller's: one caller giving up must not
	// abandon the others' calls, which the script decides all together.
	arr, err := g.run(ctx, g.name, g.script, keys, args...)
	clear(args)
	*ap = args[:0]
	groupArgs.Put(ap)
	if err == nil && len(arr) != 1+len(grp.Items) {
		err = fmt.Errorf("redis: %s: %d replies for %d calls", g.name, len(arr)-1, len(grp.Items))
	}
	if err != nil {
		grp.Fail(err)
		return
	}
	for i := range grp.Items {
		reply, ok := arr[1+i].([]any)
		if !ok {
			grp.Out[i].Err = errors.New("redis: " + g.name + ": unexpected reply")
			continue
		}
		grp.Out[i].Val = groupDone{reply: reply, all: arr, version: asInt(arr[0])}
	}
}
