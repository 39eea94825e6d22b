// Package batch runs concurrent callers' operations in groups: the group
// commit every store backend uses for its hot writes.
//
// A Batcher has one or more lanes. A lane takes the first waiting item,
// then every other item already waiting (up to Config.Max items, and
// Config.MaxWeight), and hands the group to the backend's Exec, which
// decides each item and answers it on its own. A group never waits to fill
// up: an item that finds a lane free goes at once, alone, so grouping adds
// no latency to a quiet store. Items that arrive while a group runs wait
// for the next group.
//
// # A caller whose context ends
//
// An item is taken when a lane puts it into the group it is about to run.
// A caller whose context ends before its item is taken gets the context's
// error, and its item never runs. Once taken, the item runs to its end
// under the Batcher's own context (Config.Context, bounded by
// Config.Timeout), never the caller's, and Do returns the item's true
// outcome even if the caller's context has ended meanwhile: a caller is
// never told "cancelled" of a write that committed, and one caller giving
// up never interrupts the statement it shares with the others.
//
// # Close
//
// Close lets the groups being run finish and answers them. Items queued
// but not taken are answered ErrClosed, and so is every Do after Close: the
// caller may run its operation alone (or report the store closed).
package batch

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// ErrClosed answers an item the Batcher will not run because it is closed.
var ErrClosed = errors.New("batch: closed")

// Config describes a Batcher. Exec and Max are required.
type Config[T, R any] struct {
	// Exec runs one group. It answers item i by setting g.Out[i]; an
	// answer left unset is R's zero value with a nil error. Exec must not
	// keep g once it returns.
	Exec func(ctx context.Context, g *Group[T, R])
	// Max bounds the items of a group.
	Max int
	// MaxWeight, if set, bounds a group's total Weight too: a lane stops
	// gathering once the group weighs MaxWeight or more. The first item
	// always goes, however heavy.
	MaxWeight int
	// Weight is an item's share of MaxWeight (default 1).
	Weight func(T) int
	// Lanes is the number of goroutines forming groups (default 1).
	Lanes int
	// Serial lets one group at a time into Exec: a lane holding its first
	// item waits for the group in Exec to call g.Release (or return), then
	// takes everything that arrived meanwhile.
	Serial bool
	// Yield: when a lane finds no other item waiting, it yields the
	// processor once and looks again before running its group, so that
	// callers just woken by the previous group's answers can join.
	Yield bool
	// Context is Exec's context (default context.Background()): its values
	// reach Exec, and its end ends the group that is running.
	Context context.Context
	// Timeout, if set, bounds each run of Exec.
	Timeout time.Duration
}

// Result is one item's answer.
type Result[R any] struct {
	Val R
	Err error
}

// Group is a group handed to Exec: its items in arrival order and one
// answer for each.
type Group[T, R any] struct {
	Items []T
	Out   []Result[R]

	turn     *sync.Mutex // Serial's; nil otherwise
	released bool
}

// Fail answers every item of the group err.
func (g *Group[T, R]) Fail(err error) {
	for i := range g.Out {
		g.Out[i].Err = err
	}
}

// Release lets the next group go into Exec while this one is answered
// (Serial): call it once the group's outcome is decided. Returning from
// Exec releases too.
func (g *Group[T, R]) Release() {
	if g.turn != nil && !g.released {
		g.released = true
		g.turn.Unlock()
	}
}

// Batcher groups the items of concurrent Do calls. Its zero value is not
// usable: see New.
type Batcher[T, R any] struct {
	cfg     Config[T, R]
	queue   chan *call[T, R]
	turn    sync.Mutex    // Serial: held by the group in Exec
	quit    chan struct{} // closed by Close
	stopped chan struct{} // closed once the lanes are gone and the queue answered
	wg      sync.WaitGroup
	once    sync.Once
}

// An item's states: waiting in the queue, taken by a lane (which will
// answer it), or abandoned by its caller (never run, never answered).
const (
	waiting uint32 = iota
	taken
	abandoned
)

type call[T, R any] struct {
	ctx   context.Context
	item  T
	state atomic.Uint32
	res   Result[R]
	done  chan struct{}
}

// New starts a Batcher's lanes. Close stops them.
func New[T, R any](cfg Config[T, R]) *Batcher[T, R] {
	if cfg.Exec == nil || cfg.Max < 1 {
		panic("batch: Config needs Exec and a Max of at least 1")
	}
	cfg.Lanes = max(cfg.Lanes, 1)
	if cfg.Context == nil {
		cfg.Context = context.Background()
	}
	b := &Batcher[T, R]{cfg: cfg, queue: make(chan *call[T, R], cfg.Max),
		quit: make(chan struct{}), stopped: make(chan struct{})}
	for range cfg.Lanes {
		b.wg.Go(b.lane)
	}
	return b
}

// Do runs item in a group and returns its answer; see the package
// documentation for a ctx that ends, and for Close.
func (b *Batcher[T, R]) Do(ctx context.Context, item T) (R, error) {
	var zero R
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	c := &call[T, R]{ctx: ctx, item: item, done: make(chan struct{})}
	select {
	case b.queue <- c:
	case <-b.quit:
		return zero, ErrClosed
	case <-ctx.Done():
		return zero, ctx.Err()
	}
	var err error
	select {
	case <-c.done:
		return c.res.Val, c.res.Err
	case <-ctx.Done():
		err = ctx.Err()
	case <-b.stopped: // queued after Close answered the queue
		err = ErrClosed
	}
	if c.state.CompareAndSwap(waiting, abandoned) {
		return zero, err
	}
	<-c.done // taken: it runs to its end
	return c.res.Val, c.res.Err
}

// Close stops the lanes once their groups are answered and answers the
// items still queued ErrClosed. It returns when no lane is left.
func (b *Batcher[T, R]) Close() {
	b.once.Do(func() {
		close(b.quit)
		b.wg.Wait()
		for {
			select {
			case c := <-b.queue:
				b.refuse(c, ErrClosed)
			default:
				close(b.stopped)
				return
			}
		}
	})
}

func (b *Batcher[T, R]) lane() {
	var calls []*call[T, R]
	g := &Group[T, R]{}
	for {
		select {
		case <-b.quit:
			return
		default:
		}
		var first *call[T, R]
		select {
		case first = <-b.queue:
		case <-b.quit:
			return
		}
		if b.cfg.Serial {
			b.turn.Lock()
			select {
			case <-b.quit: // closed while the group before ran
				b.turn.Unlock()
				b.refuse(first, ErrClosed)
				return
			default:
			}
		}
		calls = b.gather(calls[:0], first)
		b.run(g, calls)
		clear(calls)
	}
}

// gather takes first and the items waiting behind it into a group.
func (b *Batcher[T, R]) gather(calls []*call[T, R], first *call[T, R]) []*call[T, R] {
	weight := 0
	calls = b.take(calls, first, &weight)
	yielded := !b.cfg.Yield
	for len(calls) < b.cfg.Max && (b.cfg.MaxWeight == 0 || weight < b.cfg.MaxWeight) {
		select {
		case c := <-b.queue:
			calls = b.take(calls, c, &weight)
		default:
			if yielded {
				return calls
			}
			runtime.Gosched()
			yielded = true
		}
	}
	return calls
}

// take adds c to the group unless its caller has left or its context has
// ended (then it is answered the context's error).
func (b *Batcher[T, R]) take(calls []*call[T, R], c *call[T, R], weight *int) []*call[T, R] {
	if !c.state.CompareAndSwap(waiting, taken) {
		return calls // abandoned
	}
	if err := c.ctx.Err(); err != nil {
		c.res.Err = err
		close(c.done)
		return calls
	}
	if b.cfg.Weight != nil {
		*weight += b.cfg.Weight(c.item)
	} else {
		*weight++
	}
	return append(calls, c)
}

// refuse answers c err unless its caller has left.
func (b *Batcher[T, R]) refuse(c *call[T, R], err error) {
	if c.state.CompareAndSwap(waiting, taken) {
		c.res.Err = err
		close(c.done)
	}
}

// run runs the group through Exec and answers each caller.
func (b *Batcher[T, R]) run(g *Group[T, R], calls []*call[T, R]) {
	g.Items, g.Out = g.Items[:0], g.Out[:0]
	g.released = false
	g.turn = nil
	if b.cfg.Serial {
		g.turn = &b.turn
	}
	if len(calls) == 0 {
		g.Release()
		return
	}
	for _, c := range calls {
		g.Items = append(g.Items, c.item)
		g.Out = append(g.Out, Result[R]{})
	}
	ctx, cancel := b.cfg.Context, context.CancelFunc(func() {})
	if b.cfg.Timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, b.cfg.Timeout)
	}
	b.cfg.Exec(ctx, g)
	cancel()
	g.Release()
	for i, c := range calls {
		c.res = g.Out[i]
		close(c.done)
	}
	clear(g.Items)
	clear(g.Out)
}
