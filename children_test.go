package latch_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/latch-run/latch"
)

// within receives from ch, failing the test after 15 seconds.
func within[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(15 * time.Second):
		t.Fatal("timed out")
		panic("unreachable")
	}
}

// waitStatus polls until the execution has status st.
func waitStatus(t *testing.T, c *latch.Client, id string, st latch.Status) *latch.Execution {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		x, err := c.Get(t.Context(), "acme", id)
		if err != nil {
			t.Fatal(err)
		}
		if x.Status == st {
			return x
		}
		if time.Now().After(deadline) {
			t.Fatalf("execution %s is %s, want %s", id, x.Status, st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitSuspendedFor polls execution id until it is suspended waiting for
// waitingFor (a signal's name, or a step's), or fails the test after 10 s.
func waitSuspendedFor(t *testing.T, c *latch.Client, id, waitingFor string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		x, err := c.Get(t.Context(), "acme", id)
		if err != nil {
			t.Fatal(err)
		}
		if x.Status == latch.StatusSuspended && x.WaitingFor == waitingFor {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("execution %s is %s waiting for %q, want suspended waiting for %q", id, x.Status, x.WaitingFor, waitingFor)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A flow that spawns and dies before it records anything more: the run
// that replays it gets the same children, and no child is admitted twice.
func TestSpawnReplaysToTheSameIDs(t *testing.T) {
	t.Parallel()
	c := open(t)
	ctx := t.Context()
	var mu sync.Mutex
	var spawned [][]string
	started := make(chan struct{}, 1)
	handler := func(ctx context.Context, job *latch.Job) (any, error) {
		ids, err := job.Spawn(ctx, "ship", []latch.SubmitRequest{
			{Kind: "parcel", Payload: 1, Queue: "parcels"}, {Kind: "parcel", Payload: 2, Queue: "parcels"}, {Kind: "parcel", Payload: 3, Queue: "parcels"},
		}, latch.SpawnOptions{})
		if err != nil {
			return nil, err
		}
		mu.Lock()
		spawned = append(spawned, ids)
		first := len(spawned) == 1
		mu.Unlock()
		if first {
			// The process dies here: the handler never returns, and
			// the worker is stopped hard under it.
			started <- struct{}{}
			<-ctx.Done()
			return nil, context.Cause(ctx)
		}
		return ids, nil
	}
	crashed := newWorker(t, c, latch.WorkerOptions{Logger: slog.New(slog.DiscardHandler), PollInterval: 10 * time.Millisecond, Queues: []string{"default"}})
	crashed.Handle("order", handler)
	if err := crashed.Start(ctx); err != nil {
		t.Fatal(err)
	}
	x, _, err := c.Submit(ctx, "acme", latch.SubmitRequest{Kind: "order"})
	if err != nil {
		t.Fatal(err)
	}
	within(t, started)
	stopCtx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_ = crashed.Stop(stopCtx) // hard: the handler is abandoned
	cancel()

	// A new process runs the parent (and, like the first, not the
	// children: they stay queued).
	runWorker(t, newWorker(t, c, latch.WorkerOptions{Logger: slog.New(slog.DiscardHandler), PollInterval: 10 * time.Millisecond, Queues: []string{"default"}}),
		func(w *latch.Worker) { w.Handle("order", handler) })
	done := wait(t, c, x.ID)
	if done.Status != latch.StatusSucceeded {
		t.Fatalf("parent %s: %s", done.Status, done.Error)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(spawned) != 2 || !slices.Equal(spawned[0], spawned[1]) || len(spawned[0]) != 3 {
		t.Fatalf("spawns %v: want the same three ids twice", spawned)
	}
	kids, err := c.Children(ctx, "acme", x.ID)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, k := range kids {
		ids = append(ids, k.ID)
		if k.ParentID != x.ID || k.ParentStep != "ship" {
			t.Errorf("child %s: parent %q step %q", k.ID, k.ParentID, k.ParentStep)
		}
	}
	if !slices.Equal(ids, spawned[0]) {
		t.Fatalf("children %v, want the spawned %v in spawn order", ids, spawned[0])
	}
	// The parent succeeded: its children, never run, were cancelled with it.
	for _, k := range kids {
		if k.Status != latch.StatusCancelled {
			t.Errorf("child %s is %s after its parent ended, want cancelled", k.ID, k.Status)
		}
	}
}

// A parallel map of 50 items in one call: the outcomes come in item order,
// and the flow runs its children once each.
func TestMapFiftyItems(t *testing.T) {
	t.Parallel()
	c := open(t)
	ctx := t.Context()
	var mu sync.Mutex
	runs := map[int]int{}
	startWorker(t, c, func(w *latch.Worker) {
		w.Handle("square", func(ctx context.Context, job *latch.Job) (any, error) {
			var n int
			if err := job.Decode(&n); err != nil {
				return nil, err
			}
			mu.Lock()
			runs[n]++
			mu.Unlock()
			return n * n, nil
		})
		w.Handle("sum-of-squares", func(ctx context.Context, job *latch.Job) (any, error) {
			items := make([]int, 50)
			for i := range items {
				items[i] = i
			}
			squares, err := latch.Results[int](latch.Map(ctx, job, "squares", "square", items))
			if err != nil {
				return nil, err
			}
			return squares, nil
		})
	})
	x, _, err := c.Submit(ctx, "acme", latch.SubmitRequest{Kind: "sum-of-squares"})
	if err != nil {
		t.Fatal(err)
	}
	done := wait(t, c, x.ID)
	var squares []int
	if err := done.DecodeResult(&squares); err != nil || done.Status != latch.StatusSucceeded {
		t.Fatalf("parent %s %s: %v", done.Status, done.Error, err)
	}
	if len(squares) != 50 {
		t.Fatalf("%d results", len(squares))
	}
	for i, sq := range squares {
		if sq != i*i {
			t.Fatalf("result %d is %d: not in item order (%v)", i, sq, squares)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range 50 {
		if runs[i] != 1 {
			t.Errorf("item %d ran %d times", i, runs[i])
		}
	}
	steps, err := c.Steps(ctx, "acme", x.ID)
	if err != nil || len(steps) != 2 || steps[0].Name != "squares" || steps[1].Name != "squares/wait" {
		t.Fatalf("journal %+v, %v: want the spawn and its wait", steps, err)
	}
}

// The two halves: a wait for the first child, a child's failure in its
// outcome (the parent decides), a wait that times out.
func TestWaitChildren(t *testing.T) {
	t.Parallel()
	c := open(t)
	ctx := t.Context()
	type seen struct {
		first   []latch.ChildOutcome
		timeout *latch.FanIn
		err     error
	}
	result := make(chan seen, 1)
	startWorker(t, c, func(w *latch.Worker) {
		w.Handle("fast", func(context.Context, *latch.Job) (any, error) { return "fast", nil })
		w.Handle("broken", func(context.Context, *latch.Job) (any, error) {
			return nil, latch.Permanent(errors.New("no route"))
		})
		w.Handle("slow", func(ctx context.Context, _ *latch.Job) (any, error) {
			<-ctx.Done() // until its parent's end cancels it
			return nil, context.Cause(ctx)
		})
		w.Handle("parent", func(ctx context.Context, job *latch.Job) (any, error) {
			if _, err := job.Spawn(ctx, "race", []latch.SubmitRequest{{Kind: "slow"}, {Kind: "broken"}, {Kind: "fast"}}, latch.SpawnOptions{}); err != nil {
				return nil, err
			}
			first, err := job.WaitChildren(ctx, "two", "race", latch.WaitOptions{Count: 2})
			if err != nil {
				return nil, err
			}
			to, err := job.WaitChildren(ctx, "all", "race", latch.WaitOptions{Timeout: time.Second})
			if !errors.Is(err, latch.ErrWaitTimedOut) {
				return nil, err
			}
			result <- seen{first: first.Children, timeout: to, err: err}
			return nil, nil
		})
	})
	x, _, err := c.Submit(ctx, "acme", latch.SubmitRequest{Kind: "parent"})
	if err != nil {
		t.Fatal(err)
	}
	got := within(t, result)
	if len(got.first) != 3 || got.first[0].Status.Terminal() || got.first[1].Status != latch.StatusFailed ||
		got.first[1].Error != "no route" || got.first[2].Status != latch.StatusSucceeded || string(got.first[2].Result) != `"fast"` {
		t.Fatalf("the first two: %+v", got.first)
	}
	if err := got.first[1].Err(); !errors.Is(err, latch.ErrChildFailed) || got.first[2].Err() != nil {
		t.Fatalf("Err: %v, %v", err, got.first[2].Err())
	}
	var s string
	if err := got.first[2].Decode(&s); err != nil || s != "fast" {
		t.Fatalf("Decode: %q %v", s, err)
	}
	if !got.timeout.TimedOut || len(got.timeout.Children) != 3 || got.timeout.Children[0].Status.Terminal() {
		t.Fatalf("timed out: %+v", got.timeout)
	}
	if done := wait(t, c, x.ID); done.Status != latch.StatusSucceeded {
		t.Fatalf("parent %s %s", done.Status, done.Error)
	}
	// Its end cancelled the slow child, still running: it ends cancelled.
	kids, err := c.Children(ctx, "acme", x.ID)
	if err != nil || len(kids) != 3 {
		t.Fatalf("children %v %v", kids, err)
	}
	if slow := waitStatus(t, c, kids[0].ID, latch.StatusCancelled); slow.ParentID != x.ID {
		t.Fatalf("slow child: %+v", slow)
	}
}

// Spawn refuses what it can refuse before the store: a dedup key, a child
// that breaks a rule; a wait on a step that is not a spawn.
func TestSpawnRefusals(t *testing.T) {
	t.Parallel()
	c := open(t)
	ctx := t.Context()
	errs := make(chan error, 4)
	startWorker(t, c, func(w *latch.Worker) {
		w.Handle("parent", func(ctx context.Context, job *latch.Job) (any, error) {
			_, err := job.Spawn(ctx, "a", []latch.SubmitRequest{{Kind: "k", DedupKey: "d"}}, latch.SpawnOptions{})
			errs <- err
			_, err = job.Spawn(ctx, "b", []latch.SubmitRequest{{Kind: ""}}, latch.SpawnOptions{})
			errs <- err
			_, err = job.WaitChildren(ctx, "w", "nope", latch.WaitOptions{})
			errs <- err
			_, err = job.Spawn(ctx, "c", nil, latch.SpawnOptions{})
			errs <- err
			return nil, nil
		})
	})
	if _, _, err := c.Submit(ctx, "acme", latch.SubmitRequest{Kind: "parent"}); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if err := within(t, errs); !errors.Is(err, latch.ErrInvalid) {
			t.Errorf("refusal %d: %v, want ErrInvalid", i, err)
		}
	}
	page, err := c.List(ctx, "acme", latch.ListOptions{})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("a refused spawn admitted: %d executions, %v", len(page.Items), err)
	}
}

func ExampleMap() {
	// A handler that ships each parcel of an order as its own execution,
	// in parallel, and continues once every one has ended.
	_ = func(ctx context.Context, job *latch.Job) (any, error) {
		parcels := []string{"p1", "p2", "p3"}
		receipts, err := latch.Results[string](latch.Map(ctx, job, "ship", "ship-parcel", parcels))
		if err != nil {
			return nil, err // ErrSuspended until all have ended
		}
		return fmt.Sprint(receipts), nil
	}
}
