package redis

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
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
// A caller whose context ends before its call is sent is dropped from the
// group; one whose context ends while the group runs gets the context's
// error, and its call is either wholly done or not at all (as with any
// request whose answer is lost).
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

	run  func(ctx context.Context, op string, sc *luaScript, keys []string, args ...any) ([]any, error)
	bg   context.Context
	q    chan *groupCall
	quit <-chan struct{}
}

type groupCall struct {
	ctx    context.Context
	keys   []string
	args   []any
	weight int // items, for the group bound
	done   chan groupDone
}

type groupDone struct {
	reply   []any // this call's reply
	all     []any // the whole answer, for replies that refer to others
	version int64
	err     error
}

// Group bounds: a group takes the calls waiting when its dispatcher is
// free, up to these limits (a single larger call still goes alone), so
// that one script never holds Redis for long. 32 calls rather than 128:
// when many callers arrive at once (64 submits of one key), the first
// answers come back while the rest are still at Redis. In an interleaved
// A/B (bench/asynq: four pairs of submit and contended runs, three of
// drains) that took the contended p50 from 795 to 713 µs and draining
// from 26,100 to 27,200/s, with submits level.
const (
	groupDispatchers = 2
	maxGroupCalls    = 32
	maxGroupWeight   = 256
)

func (s *Store) newGrouper(name string, script *luaScript, fixedKeys ...string) *grouper {
	g := &grouper{name: name, script: script, fixedKeys: fixedKeys, ns: s.k.ns,
		run: s.run, bg: s.bg, q: make(chan *groupCall), quit: s.quit}
	for range groupDispatchers {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			g.loop()
		}()
	}
	return g
}

// do sends one call and waits for its share of the group's answer.
func (g *grouper) do(ctx context.Context, weight int, keys []string, args ...any) (groupDone, error) {
	c := &groupCall{ctx: ctx, keys: keys, args: args, weight: weight, done: make(chan groupDone, 1)}
	select {
	case g.q <- c:
	case <-ctx.Done():
		return groupDone{}, ctx.Err()
	case <-g.quit:
		return groupDone{}, errClosed
	}
	select {
	case d := <-c.done:
		return d, d.err
	case <-ctx.Done():
		return groupDone{}, ctx.Err()
	case <-g.quit:
		return groupDone{}, errClosed
	}
}

func (g *grouper) loop() {
	for {
		var group []*groupCall
		select {
		case c := <-g.q:
			group = append(group, c)
		case <-g.quit:
			return
		}
		weight := group[0].weight
		// When no other call is waiting, yield once before sending: the
		// callers that the previous group's answer has just woken are
		// often runnable but not yet run, and a moment lets them join
		// this group. Each script run costs Redis far more than an item
		// in it (a one-item Admit about four times an item's share of
		// one of 16, measured), and this alone took the runs of 16
		// concurrent submitters from about 5 calls each to 7.
		yielded := false
	gather:
		for len(group) < maxGroupCalls && weight < maxGroupWeight {
			select {
			case c := <-g.q:
				group = append(group, c)
				weight += c.weight
			default:
				if yielded {
					break gather
				}
				runtime.Gosched()
				yielded = true
			}
		}
		g.send(group)
	}
}

var groupArgs = sync.Pool{New: func() any { return new([]any) }}

func (g *grouper) send(group []*groupCall) {
	live := group[:0]
	for _, c := range group {
		if err := c.ctx.Err(); err != nil {
			c.done <- groupDone{err: err}
			continue
		}
		live = append(live, c)
	}
	if len(live) == 0 {
		return
	}
	keys := append([]string(nil), g.fixedKeys...)
	ap := groupArgs.Get().(*[]any)
	args := append((*ap)[:0], g.ns, len(live))
	for _, c := range live {
		keys = append(keys, c.keys...)
		args = append(args, len(c.keys), len(c.args))
		args = append(args, c.args...)
	}
	// Not any caller's context: one caller giving up must not abandon the
	// others' calls, which the script decides all together.
	arr, err := g.run(g.bg, g.name, g.script, keys, args...)
	clear(args)
	*ap = args[:0]
	groupArgs.Put(ap)
	if err == nil && len(arr) != 1+len(live) {
		err = fmt.Errorf("redis: %s: %d replies for %d calls", g.name, len(arr)-1, len(live))
	}
	for i, c := range live {
		if err != nil {
			c.done <- groupDone{err: err}
			continue
		}
		reply, ok := arr[1+i].([]any)
		if !ok {
			c.done <- groupDone{err: errors.New("redis: " + g.name + ": unexpected reply")}
			continue
		}
		c.done <- groupDone{reply: reply, all: arr, version: asInt(arr[0])}
	}
}
