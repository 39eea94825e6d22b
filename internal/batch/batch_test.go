package batch_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/latch-run/latch/internal/batch"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is an Exec that records its groups and can be held: while
// held, a group stays in Exec.
type recorder struct {
	mu     sync.Mutex
	groups [][]int
	hold   chan struct{} // nil: never held
	in     chan []int    // each group as it enters Exec, if set
}

func (r *recorder) exec(_ context.Context, g *batch.Group[int, int]) {
	items := slices.Clone(g.Items)
	r.mu.Lock()
	r.groups = append(r.groups, items)
	r.mu.Unlock()
	if r.in != nil {
		r.in <- items
	}
	if r.hold != nil {
		<-r.hold
	}
	for i, v := range g.Items {
		if v < 0 {
			g.Out[i].Err = fmt.Errorf("negative %d", v)
			continue
		}
		g.Out[i].Val = 10 * v
	}
}

func (r *recorder) ran(v int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, g := range r.groups {
		for _, x := range g {
			if x == v {
				n++
			}
		}
	}
	return n
}

// waitQueued gives goroutines time to block in Do (where waitLen cannot
// see them).
func waitQueued() { time.Sleep(50 * time.Millisecond) }

// waitLen waits until b's queue holds n items.
func waitLen(t *testing.T, b *batch.Batcher[int, int], n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); batch.QueueLen(b) != n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("queue holds %d items, want %d", batch.QueueLen(b), n)
		}
	}
}

type answer struct {
	v   int
	err error
}

func doAsync(b *batch.Batcher[int, int], ctx context.Context, v int) <-chan answer {
	ch := make(chan answer, 1)
	go func() {
		got, err := b.Do(ctx, v)
		ch <- answer{got, err}
	}()
	return ch
}

func TestAnswersEachItem(t *testing.T) {
	r := &recorder{}
	b := batch.New(batch.Config[int, int]{Exec: r.exec, Max: 8})
	defer b.Close()
	var wg sync.WaitGroup
	for v := -20; v <= 20; v++ {
		wg.Go(func() {
			got, err := b.Do(context.Background(), v)
			switch {
			case v < 0 && (err == nil || err.Error() != fmt.Sprintf("negative %d", v)):
				t.Errorf("Do(%d) = %d, %v; want its own error", v, got, err)
			case v >= 0 && (err != nil || got != 10*v):
				t.Errorf("Do(%d) = %d, %v; want %d", v, got, err, 10*v)
			}
		})
	}
	wg.Wait()
	for v := -20; v <= 20; v++ {
		if n := r.ran(v); n != 1 {
			t.Errorf("item %d ran %d times", v, n)
		}
	}
}

func TestItemsArrivingDuringAGroupGoInTheNext(t *testing.T) {
	r := &recorder{hold: make(chan struct{}), in: make(chan []int, 10)}
	b := batch.New(batch.Config[int, int]{Exec: r.exec, Max: 4})
	defer b.Close()
	first := doAsync(b, context.Background(), 0)
	if g := <-r.in; !slices.Equal(g, []int{0}) {
		t.Fatalf("first group %v, want [0]: a lone item goes at once", g)
	}
	var answers []<-chan answer
	for v := 1; v <= 6; v++ {
		answers = append(answers, doAsync(b, context.Background(), v))
		if v <= 4 {
			waitLen(t, b, v) // in this order
		}
	}
	waitQueued() // 5 and 6 wait for room in the queue
	r.hold <- struct{}{}
	if a := <-first; a.err != nil || a.v != 0 {
		t.Fatalf("first: %+v", a)
	}
	if g := <-r.in; !slices.Equal(g, []int{1, 2, 3, 4}) {
		t.Errorf("second group %v, want [1 2 3 4]: what waited, up to Max, in order", g)
	}
	r.hold <- struct{}{}
	if g := <-r.in; !slices.Equal(g, []int{5, 6}) && !slices.Equal(g, []int{6, 5}) {
		t.Errorf("third group %v, want 5 and 6", g)
	}
	r.hold <- struct{}{}
	for i, ch := range answers {
		if a := <-ch; a.err != nil || a.v != 10*(i+1) {
			t.Errorf("item %d: %+v", i+1, a)
		}
	}
}

func TestMaxWeight(t *testing.T) {
	r := &recorder{hold: make(chan struct{}), in: make(chan []int, 10)}
	b := batch.New(batch.Config[int, int]{Exec: r.exec, Max: 100, MaxWeight: 10,
		Weight: func(v int) int { return v }})
	defer b.Close()
	first := doAsync(b, context.Background(), 50) // heavier than MaxWeight: still goes
	if g := <-r.in; !slices.Equal(g, []int{50}) {
		t.Fatalf("first group %v", g)
	}
	var answers []<-chan answer
	for i, v := range []int{4, 4, 4, 1} {
		answers = append(answers, doAsync(b, context.Background(), v))
		waitLen(t, b, i+1)
	}
	r.hold <- struct{}{}
	<-first
	if g := <-r.in; !slices.Equal(g, []int{4, 4, 4}) {
		t.Errorf("second group %v, want [4 4 4]: gathering stops at the weight bound", g)
	}
	r.hold <- struct{}{}
	if g := <-r.in; !slices.Equal(g, []int{1}) {
		t.Errorf("third group %v, want [1]", g)
	}
	r.hold <- struct{}{}
	for _, ch := range answers {
		if a := <-ch; a.err != nil {
			t.Error(a.err)
		}
	}
}

func TestCancelledBeforeTakenNeverRuns(t *testing.T) {
	r := &recorder{hold: make(chan struct{}), in: make(chan []int, 10)}
	b := batch.New(batch.Config[int, int]{Exec: r.exec, Max: 4})
	defer b.Close()
	first := doAsync(b, context.Background(), 0)
	<-r.in // the lane is busy: what comes next waits

	ctx, cancel := context.WithCancel(context.Background())
	waiting := doAsync(b, ctx, 1)
	waitLen(t, b, 1)
	cancel()
	if a := <-waiting; !errors.Is(a.err, context.Canceled) {
		t.Fatalf("cancelled while queued: %+v, want context.Canceled", a)
	}
	// A context that had ended before Do.
	if _, err := b.Do(ctx, 2); !errors.Is(err, context.Canceled) {
		t.Fatalf("Do with an ended context: %v", err)
	}
	later := doAsync(b, context.Background(), 3)
	waitLen(t, b, 2) // the abandoned item is still in the queue
	r.hold <- struct{}{}
	<-first
	if g := <-r.in; !slices.Equal(g, []int{3}) {
		t.Errorf("next group %v, want [3]: cancelled items never run", g)
	}
	r.hold <- struct{}{}
	if a := <-later; a.err != nil || a.v != 30 {
		t.Errorf("later: %+v", a)
	}
	if r.ran(1) != 0 || r.ran(2) != 0 {
		t.Errorf("a cancelled item ran: %v", r.groups)
	}
}

// An item whose caller gives up while a Serial lane holds it waiting for
// its turn is not taken yet: it never runs.
func TestCancelledWhileItsLaneWaitsNeverRuns(t *testing.T) {
	r := &recorder{hold: make(chan struct{}), in: make(chan []int, 10)}
	b := batch.New(batch.Config[int, int]{Exec: r.exec, Max: 4, Lanes: 2, Serial: true})
	defer b.Close()
	first := doAsync(b, context.Background(), 0)
	<-r.in
	ctx, cancel := context.WithCancel(context.Background())
	held := doAsync(b, ctx, 1) // the second lane takes it and waits its turn
	waitQueued()
	cancel()
	if a := <-held; !errors.Is(a.err, context.Canceled) {
		t.Fatalf("%+v, want context.Canceled", a)
	}
	r.hold <- struct{}{}
	<-first
	b.Close()
	if r.ran(1) != 0 {
		t.Errorf("the cancelled item ran: %v", r.groups)
	}
}

func TestCancelledAfterTakenGetsTheTrueOutcome(t *testing.T) {
	var execCtxErr atomic.Value
	hold, in := make(chan struct{}), make(chan struct{})
	b := batch.New(batch.Config[int, int]{Max: 4, Exec: func(ctx context.Context, g *batch.Group[int, int]) {
		in <- struct{}{}
		<-hold
		execCtxErr.Store(fmt.Sprint(ctx.Err()))
		for i, v := range g.Items {
			g.Out[i].Val = 10 * v
		}
	}})
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	ch := doAsync(b, ctx, 7)
	<-in
	cancel()
	select {
	case a := <-ch:
		t.Fatalf("Do returned %+v while its item ran", a)
	case <-time.After(50 * time.Millisecond):
	}
	close(hold)
	if a := <-ch; a.err != nil || a.v != 70 {
		t.Errorf("got %+v, want the item's own answer 70", a)
	}
	if e := execCtxErr.Load(); e != "<nil>" {
		t.Errorf("Exec's context ended with its caller's: %v", e)
	}
}

func TestCloseAnswersTheQueued(t *testing.T) {
	r := &recorder{hold: make(chan struct{}), in: make(chan []int, 10)}
	b := batch.New(batch.Config[int, int]{Exec: r.exec, Max: 4, Lanes: 2, Serial: true})
	first := doAsync(b, context.Background(), 0)
	<-r.in
	var queued []<-chan answer
	for v := 1; v <= 5; v++ {
		queued = append(queued, doAsync(b, context.Background(), v))
	}
	waitLen(t, b, 4) // the other lane holds one, waiting for its turn
	closed := make(chan struct{})
	go func() {
		b.Close()
		close(closed)
	}()
	waitQueued()
	select {
	case <-closed:
		t.Fatal("Close returned while a group ran")
	default:
	}
	r.hold <- struct{}{}
	<-closed
	if a := <-first; a.err != nil || a.v != 0 {
		t.Errorf("the group that ran: %+v, want its answer", a)
	}
	for i, ch := range queued {
		if a := <-ch; !errors.Is(a.err, batch.ErrClosed) {
			t.Errorf("queued item %d: %+v, want ErrClosed", i+1, a)
		}
	}
	if _, err := b.Do(context.Background(), 9); !errors.Is(err, batch.ErrClosed) {
		t.Errorf("Do after Close: %v", err)
	}
	if len(r.groups) != 1 {
		t.Errorf("groups after Close began: %v", r.groups[1:])
	}
	b.Close() // twice is fine
}

// With Serial, one group is in Exec at a time until it calls Release; the
// next group then goes while the first is still being answered.
func TestSerialRelease(t *testing.T) {
	var inExec, most atomic.Int32
	entered := make(chan int, 10)
	releaseNow, finish := make(chan struct{}), make(chan struct{})
	b := batch.New(batch.Config[int, int]{Max: 4, Lanes: 3, Serial: true,
		Exec: func(_ context.Context, g *batch.Group[int, int]) {
			n := inExec.Add(1)
			defer inExec.Add(-1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			entered <- g.Items[0]
			if g.Items[0] == 0 {
				<-releaseNow
				g.Release()
				<-finish
			}
		}})
	defer b.Close()
	a0 := doAsync(b, context.Background(), 0)
	<-entered
	a1 := doAsync(b, context.Background(), 1)
	select {
	case v := <-entered:
		t.Fatalf("group %d entered Exec before the one there released it", v)
	case <-time.After(50 * time.Millisecond):
	}
	close(releaseNow)
	if v := <-entered; v != 1 {
		t.Fatalf("entered %d", v)
	}
	<-a1
	close(finish)
	<-a0
	if most.Load() != 2 {
		t.Errorf("at most %d groups in Exec at once, want 2 (the released one and the next)", most.Load())
	}
}

func TestExecContext(t *testing.T) {
	type key struct{}
	base := context.WithValue(context.Background(), key{}, "v")
	got := make(chan context.Context, 1)
	b := batch.New(batch.Config[int, int]{Max: 1, Context: base, Timeout: time.Minute,
		Exec: func(ctx context.Context, _ *batch.Group[int, int]) { got <- ctx }})
	defer b.Close()
	if _, err := b.Do(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	ctx := <-got
	if ctx.Value(key{}) != "v" {
		t.Error("Exec's context lacks Config.Context's values")
	}
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > time.Minute {
		t.Errorf("Exec's deadline %v, %v; want within Timeout", d, ok)
	}
}

// Many callers, some giving up at random moments, some closing: every
// answer agrees with what ran, nothing runs twice, no goroutine is left.
func TestManyCallers(t *testing.T) {
	var ran sync.Map // item -> times run
	b := batch.New(batch.Config[int, int]{Max: 16, Lanes: 2, Serial: true, Yield: true,
		Exec: func(_ context.Context, g *batch.Group[int, int]) {
			for i, v := range g.Items {
				n, _ := ran.LoadOrStore(v, new(atomic.Int32))
				n.(*atomic.Int32).Add(1)
				g.Out[i].Val = v
				if rand.IntN(4) == 0 {
					g.Release()
				}
			}
		}})
	const callers, each = 64, 200
	var wg sync.WaitGroup
	var ok, cancelled, closed atomic.Int64
	for c := range callers {
		wg.Go(func() {
			for i := range each {
				v := c*each + i
				ctx, cancel := context.WithCancel(context.Background())
				if rand.IntN(3) == 0 {
					go cancel()
				}
				got, err := b.Do(ctx, v)
				cancel()
				n := 0
				if x, found := ran.Load(v); found {
					n = int(x.(*atomic.Int32).Load())
				}
				switch {
				case err == nil:
					ok.Add(1)
					if got != v || n != 1 {
						t.Errorf("item %d answered %d, ran %d times", v, got, n)
					}
				case errors.Is(err, context.Canceled), errors.Is(err, batch.ErrClosed):
					if errors.Is(err, batch.ErrClosed) {
						closed.Add(1)
					} else {
						cancelled.Add(1)
					}
					if n != 0 {
						t.Errorf("item %d answered %v but ran %d times", v, err, n)
					}
				default:
					t.Errorf("item %d: %v", v, err)
				}
			}
		})
	}
	time.Sleep(100 * time.Millisecond)
	b.Close()
	wg.Wait()
	t.Logf("ok %d, cancelled %d, closed %d", ok.Load(), cancelled.Load(), closed.Load())
	if ok.Load() == 0 || cancelled.Load() == 0 {
		t.Error("the test exercised too little")
	}
}

func BenchmarkDo(b *testing.B) {
	bt := batch.New(batch.Config[int, int]{Max: 64, Lanes: 2,
		Exec: func(_ context.Context, g *batch.Group[int, int]) {
			for i, v := range g.Items {
				g.Out[i].Val = v
			}
		}})
	defer bt.Close()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := bt.Do(context.Background(), 1); err != nil {
				b.Fatal(err)
			}
		}
	})
}
