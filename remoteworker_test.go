package latch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/latch-run/latch"
	"github.com/latch-run/latch/api"
	"github.com/latch-run/latch/auth"
	"github.com/latch-run/latch/engine"
	"github.com/latch-run/latch/kinds"
	"github.com/latch-run/latch/remote"
)

// remoteWorkerEnv, set, makes newWorker build remote workers: the worker
// tests of this package then run their handlers, unchanged, over the HTTP
// API (TestRemoteWorkerRunsTheWorkerTests).
const remoteWorkerEnv = "LATCH_TEST_REMOTE_WORKER"

const remoteAdminKey = "admin-key-of-the-remote-worker-tests-0123"

// newWorker is the worker of a test: embedded on c's store, or, with
// remoteWorkerEnv set, a remote worker of a server on that store.
func newWorker(t *testing.T, c *latch.Client, opts latch.WorkerOptions) *latch.Worker {
	t.Helper()
	if os.Getenv(remoteWorkerEnv) == "" {
		return c.NewWorker(opts)
	}
	return latch.NewRemoteWorker(remote.New(serveHTTP(t, c, nil), remoteAdminKey), opts)
}

// serveHTTP serves the HTTP API on c's store, with the maintenance `latch
// serve` runs (the waker and the rescuer, briskly), until the test ends;
// it answers the server's URL. wrap, if set, wraps the API's handler.
func serveHTTP(t *testing.T, c *latch.Client, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	h := api.New(api.Config{Store: c.Store(), AdminKeyHash: auth.HashKey(remoteAdminKey),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), PollInterval: 20 * time.Millisecond}).Handler()
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	quiet := slog.New(slog.DiscardHandler)
	upkeep := engine.NewGroup(
		engine.NewWaker(engine.WakerConfig{Store: c.Store(), Interval: 50 * time.Millisecond, Logger: quiet}),
		engine.NewRescuer(engine.RescuerConfig{Store: c.Store(), Interval: 100 * time.Millisecond, Logger: quiet}))
	if err := upkeep.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = upkeep.Stop(context.Background())
		srv.Close()
	})
	return srv.URL
}

// The embedded worker's tests, their handlers unchanged, with remote
// workers: a step recorded is not run again, a wait for a signal, a spawn
// replayed after a crash, Map and WaitChildren, bounds that fail for good,
// results and errors, a cancel that reaches the handler.
func TestRemoteWorkerRunsTheWorkerTests(t *testing.T) {
	if os.Getenv(remoteWorkerEnv) != "" {
		t.Skip("this is the run it starts")
	}
	tests := []string{
		"TestFlowThroughTheGoAPI", "TestFlowStepPastTheBoundFailsTheRun",
		"TestSpawnReplaysToTheSameIDs", "TestMapFiftyItems", "TestWaitChildren", "TestSpawnRefusals",
		"TestWorkerHandlesResultsAndErrors", "TestWorkerCancelReachesHandler",
		"TestEventStartsAndResumesAFlow", "TestWaitEventBeforeAndTimeout",
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^("+strings.Join(tests, "|")+")$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), remoteWorkerEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the worker tests with remote workers: %v\n%s", err, out)
	}
	for _, name := range tests {
		if !strings.Contains(string(out), "--- PASS: "+name+" ") {
			t.Errorf("%s did not pass with remote workers:\n%s", name, out)
		}
	}
}

// startRemote starts a remote worker of a server on c's store, stopped
// (with 10 s to finish) when the test ends.
func startRemote(t *testing.T, url string, opts latch.WorkerOptions, setup func(w *latch.Worker), rc ...remote.Option) *latch.Worker {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = 10 * time.Millisecond
	}
	return runWorker(t, latch.NewRemoteWorker(remote.New(url, remoteAdminKey, rc...), opts), setup)
}

// One flow over HTTP: a step replayed from the journal, a sleep, a wait
// that a signal ends, children spawned and waited for; the run joins the
// trace its execution was submitted in.
func TestRemoteWorkerFlow(t *testing.T) {
	t.Parallel()
	c := open(t)
	url := serveHTTP(t, c, nil)
	ctx := t.Context()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	var charges, runs atomic.Int32
	traces := make(chan trace.SpanContext, 16)
	startRemote(t, url, latch.WorkerOptions{TracerProvider: tp}, func(w *latch.Worker) {
		w.Handle("order", func(ctx context.Context, job *latch.Job) (any, error) {
			runs.Add(1)
			traces <- trace.SpanContextFromContext(ctx)
			charge, err := latch.StepValue(ctx, job, "charge", func(context.Context) (string, error) {
				charges.Add(1)
				return "ch_1", nil
			})
			if err != nil {
				return nil, err
			}
			if err := job.Sleep(ctx, "cool-off", 300*time.Millisecond); err != nil {
				return nil, err
			}
			approval, err := job.WaitSignal(ctx, "approval", "approve", time.Hour)
			if err != nil {
				return nil, err
			}
			parcels, err := latch.Results[int](latch.Map(ctx, job, "ship", "parcel", []int{1, 2, 3}))
			if err != nil {
				return nil, err
			}
			return map[string]any{"charge": charge, "approval": approval, "parcels": parcels}, nil
		})
		w.Handle("parcel", func(ctx context.Context, job *latch.Job) (any, error) {
			var n int
			if err := job.Decode(&n); err != nil {
				return nil, err
			}
			return n * 10, nil
		})
	})
	callerCtx, caller := tp.Tracer("test").Start(ctx, "caller")
	x, _, err := c.Submit(callerCtx, "acme", latch.SubmitRequest{Kind: "order"})
	caller.End()
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c, x.ID, latch.StatusSuspended)
	waitSuspendedFor(t, c, x.ID, "approve")
	if delivered, err := c.Signal(ctx, "acme", x.ID, "approve", map[string]string{"by": "ann"}, latch.SignalOptions{}); err != nil || !delivered {
		t.Fatalf("Signal: %v, %v; want delivered", delivered, err)
	}
	got := wait(t, c, x.ID)
	if got.Status != latch.StatusSucceeded || string(got.Result) != `{"approval":{"by":"ann"},"charge":"ch_1","parcels":[10,20,30]}` {
		t.Fatalf("%s %s %q, want succeeded with the charge, the approval and the parcels", got.Status, got.Result, got.Error)
	}
	// Runs: the first (sleeps), after the sleep (waits), after the signal
	// (spawns, waits), after the children: the charge ran in the first only.
	if charges.Load() != 1 || runs.Load() != 4 {
		t.Errorf("charged %d times in %d runs, want once in 4", charges.Load(), runs.Load())
	}
	steps, err := c.Steps(ctx, "acme", x.ID)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range steps {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "charge,cool-off,approval,ship,ship/wait" {
		t.Errorf("journal %v", names)
	}
	if got.Attempt != 1 {
		t.Errorf("attempt %d, want 1: resumes continue their attempt", got.Attempt)
	}
	// Every run of the parent was in the caller's trace.
	close(traces)
	for sc := range traces {
		if sc.TraceID() != caller.SpanContext().TraceID() {
			t.Errorf("a run in trace %s, want the caller's %s", sc.TraceID(), caller.SpanContext().TraceID())
		}
	}
	// The last run's span ends once its complete is written, maybe after
	// the wait above saw it.
	parentRuns := 0
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		parentRuns = 0
		for _, s := range exp.GetSpans() {
			if s.Name == "run order" {
				parentRuns++
			}
		}
		if parentRuns == 4 {
			break
		}
	}
	parentRuns = 0
	for _, s := range exp.GetSpans() {
		if s.Name == "run order" {
			parentRuns++
			if s.Parent.TraceID() != caller.SpanContext().TraceID() {
				t.Errorf("run span in trace %s, want the caller's", s.Parent.TraceID())
			}
		}
	}
	if parentRuns != 4 {
		t.Errorf("%d run spans of the parent, want 4", parentRuns)
	}
}

// Stop lets a running handler finish and writes its result; a Stop whose
// context ends cancels the handler (ErrShutdown) and hands its lease back:
// the execution runs again at once, on another worker, even with its
// attempts spent.
func TestRemoteWorkerShutdown(t *testing.T) {
	t.Parallel()
	c := open(t)
	url := serveHTTP(t, c, nil)
	ctx := t.Context()

	// Soft: the handler finishes during Stop.
	started, finish := make(chan struct{}, 1), make(chan struct{})
	w := latch.NewRemoteWorker(remote.New(url, remoteAdminKey), latch.WorkerOptions{Logger: slog.New(slog.DiscardHandler), PollInterval: 10 * time.Millisecond})
	w.Handle("soft", func(ctx context.Context, job *latch.Job) (any, error) {
		started <- struct{}{}
		<-finish
		return "finished", nil
	})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	x, _, err := c.Submit(ctx, "acme", latch.SubmitRequest{Kind: "soft"})
	if err != nil {
		t.Fatal(err)
	}
	within(t, started)
	stopped := make(chan error, 1)
	go func() { stopped <- w.Stop(context.Background()) }()
	time.Sleep(50 * time.Millisecond)
	close(finish)
	if err := within(t, stopped); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if got := wait(t, c, x.ID); got.Status != latch.StatusSucceeded || string(got.Result) != `"finished"` {
		t.Fatalf("after a soft stop: %s %s", got.Status, got.Result)
	}
	// It claims nothing more.
	later, _, err := c.Submit(ctx, "acme", latch.SubmitRequest{Kind: "soft"})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if got, _ := c.Get(ctx, "acme", later.ID); got.Status != latch.StatusQueued {
		t.Fatalf("submitted after Stop: %s, want queued", got.Status)
	}
	if _, err := c.Cancel(ctx, "acme", later.ID); err != nil {
		t.Fatal(err)
	}

	// Hard: the handler is cancelled with ErrShutdown and its lease handed
	// back; another worker runs it.
	causes := make(chan error, 1)
	hard := latch.NewRemoteWorker(remote.New(url, remoteAdminKey), latch.WorkerOptions{Logger: slog.New(slog.DiscardHandler), PollInterval: 10 * time.Millisecond})
	hard.Handle("hard", func(ctx context.Context, job *latch.Job) (any, error) {
		started <- struct{}{}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	if err := hard.Start(ctx); err != nil {
		t.Fatal(err)
	}
	y, _, err := c.Submit(ctx, "acme", latch.SubmitRequest{Kind: "hard", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	within(t, started)
	stopCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err = hard.Stop(stopCtx)
	cancel()
	if err != nil {
		t.Fatalf("hard Stop: %v", err)
	}
	if cause := within(t, causes); !errors.Is(cause, latch.ErrShutdown) {
		t.Fatalf("cause %v, want ErrShutdown", cause)
	}
	if got, _ := c.Get(ctx, "acme", y.ID); got.Status != latch.StatusQueued {
		t.Fatalf("handed back: %s, want queued", got.Status)
	}
	startRemote(t, url, latch.WorkerOptions{}, func(w *latch.Worker) {
		w.Handle("hard", func(ctx context.Context, job *latch.Job) (any, error) { return job.Attempt, nil })
	})
	if got := wait(t, c, y.ID); got.Status != latch.StatusSucceeded || string(got.Result) != "2" {
		t.Fatalf("after the hand-back: %s %s %q, want succeeded at attempt 2", got.Status, got.Result, got.Error)
	}
	// Released, then succeeded; a claim in flight as the worker stopped
	// may have taken it back meanwhile, and released it unstarted.
	attempts, err := c.Attempts(ctx, "acme", y.ID)
	if err != nil || len(attempts) < 2 || attempts[len(attempts)-1].Outcome != "succeeded" {
		t.Fatalf("attempts %+v %v, want released then succeeded", attempts, err)
	}
	for _, a := range attempts[:len(attempts)-1] {
		if a.Outcome != "released" {
			t.Fatalf("attempts %+v, want released then succeeded", attempts)
		}
	}
}

// A lost lease stops the handler (cause ErrLeaseLost) and nothing it
// returns is written: when the execution is deleted under it, and when
// heartbeats fail until the lease ends (the server then rescues it and
// another worker runs it).
func TestRemoteWorkerLeaseLost(t *testing.T) {
	t.Parallel()
	c := open(t)
	var dropHeartbeats atomic.Bool
	url := serveHTTP(t, c, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if dropHeartbeats.Load() && strings.HasSuffix(r.URL.Path, "/heartbeat") {
				http.Error(w, "unreachable", http.StatusBadGateway)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	ctx := t.Context()
	started := make(chan int, 4)
	causes := make(chan error, 4)
	var effects atomic.Int32
	startRemote(t, url, latch.WorkerOptions{LeaseDuration: 2 * time.Second}, func(w *latch.Worker) {
		w.Handle("held", func(ctx context.Context, job *latch.Job) (any, error) {
			started <- job.Attempt
			if job.Attempt > 1 {
				return "second", nil
			}
			<-ctx.Done()
			causes <- context.Cause(ctx)
			effects.Add(1)
			return "stale", nil // not written
		})
	}, remote.WithRetry(remote.RetryPolicy{}))

	// Deleted under the handler.
	x, _, err := c.Submit(ctx, "acme", latch.SubmitRequest{Kind: "held"})
	if err != nil {
		t.Fatal(err)
	}
	within(t, started)
	if err := c.Delete(ctx, "acme", x.ID, latch.DeleteOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if cause := within(t, causes); !errors.Is(cause, latch.ErrLeaseLost) {
		t.Fatalf("cause %v, want ErrLeaseLost", cause)
	}

	// Heartbeats that fail until the lease ends.
	dropHeartbeats.Store(true)
	y, _, err := c.Submit(ctx, "acme", latch.SubmitRequest{Kind: "held"})
	if err != nil {
		t.Fatal(err)
	}
	if a := within(t, started); a != 1 {
		t.Fatalf("attempt %d started, want 1", a)
	}
	if cause := within(t, causes); !errors.Is(cause, latch.ErrLeaseLost) {
		t.Fatalf("cause %v, want ErrLeaseLost", cause)
	}
	dropHeartbeats.Store(false)
	got := wait(t, c, y.ID)
	if got.Status != latch.StatusSucceeded || string(got.Result) != `"second"` || got.Attempt != 2 {
		t.Fatalf("%s %s attempt %d, want succeeded by attempt 2, the stale result unwritten", got.Status, got.Result, got.Attempt)
	}
	attempts, err := c.Attempts(ctx, "acme", y.ID)
	if err != nil || len(attempts) != 2 || attempts[0].Outcome != "expired" || attempts[1].Outcome != "succeeded" {
		t.Fatalf("attempts %+v %v, want expired then succeeded", attempts, err)
	}
}

// One handler source, two workers: the same HandlerFunc runs embedded and
// remote, and Start refuses a remote worker without handlers.
func TestRemoteWorkerIsAWorker(t *testing.T) {
	t.Parallel()
	c := open(t)
	url := serveHTTP(t, c, nil)
	w := latch.NewRemoteWorker(remote.New(url, remoteAdminKey), latch.WorkerOptions{ID: "remote-1"})
	if w.ID() != "remote-1" {
		t.Errorf("ID %q", w.ID())
	}
	if err := w.Start(t.Context()); err == nil {
		t.Error("Start without a handler: no error")
	}
	if err := w.HandleBuiltins(kinds.Options{}); err == nil {
		t.Error("HandleBuiltins on a remote worker: no error")
	}
}

// Slots bound the handlers running at once, and every execution runs once:
// 30 executions on a worker of 3 slots, with a second worker beside it.
func TestRemoteWorkerSlots(t *testing.T) {
	t.Parallel()
	c := open(t)
	url := serveHTTP(t, c, nil)
	ctx := t.Context()
	var running, most, runs atomic.Int32
	var seen sync.Map
	handler := func(ctx context.Context, job *latch.Job) (any, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		if _, dup := seen.LoadOrStore(job.ID, true); dup {
			t.Errorf("%s ran twice", job.ID)
		}
		runs.Add(1)
		time.Sleep(20 * time.Millisecond)
		return job.ID, nil
	}
	for range 2 {
		startRemote(t, url, latch.WorkerOptions{Slots: 3}, func(w *latch.Worker) { w.Handle("work", handler) })
	}
	var ids []string
	for range 30 {
		x, _, err := c.Submit(ctx, "acme", latch.SubmitRequest{Kind: "work"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, x.ID)
	}
	for _, id := range ids {
		if got := wait(t, c, id); got.Status != latch.StatusSucceeded || string(got.Result) != `"`+id+`"` {
			t.Fatalf("%s: %s %s", id, got.Status, got.Result)
		}
	}
	if runs.Load() != 30 || most.Load() > 6 {
		t.Fatalf("%d runs, at most %d at once; want 30, at most 6 (two workers of 3 slots)", runs.Load(), most.Load())
	}
}

// A handler that ignores its cancelled context past the grace is
// abandoned: Stop says so, and its lease is handed back all the same.
func TestRemoteWorkerAbandonsAHandlerThatIgnoresCancellation(t *testing.T) {
	t.Parallel()
	c := open(t)
	url := serveHTTP(t, c, nil)
	ctx := t.Context()
	started, release := make(chan struct{}, 1), make(chan struct{})
	defer close(release)
	w := latch.NewRemoteWorker(remote.New(url, remoteAdminKey), latch.WorkerOptions{Logger: slog.New(slog.DiscardHandler), PollInterval: 10 * time.Millisecond})
	w.Handle("stubborn", func(ctx context.Context, job *latch.Job) (any, error) {
		started <- struct{}{}
		<-release // ignores ctx
		return nil, nil
	})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	x, _, err := c.Submit(ctx, "acme", latch.SubmitRequest{Kind: "stubborn"})
	if err != nil {
		t.Fatal(err)
	}
	within(t, started)
	stopCtx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	err = w.Stop(stopCtx)
	cancel()
	if err == nil || !strings.Contains(err.Error(), "did not return") {
		t.Fatalf("Stop: %v, want the abandoned handler reported", err)
	}
	if got, _ := c.Get(ctx, "acme", x.ID); got.Status != latch.StatusQueued {
		t.Fatalf("after the abandon: %s, want queued (handed back)", got.Status)
	}
}

// A Job made outside a worker (a handler's unit test) has no flow: its
// flow calls answer an error, they do not panic.
func TestJobWithoutAWorker(t *testing.T) {
	t.Parallel()
	job := &latch.Job{ID: "x", Payload: []byte(`{}`)}
	if _, err := job.Step(t.Context(), "one", func(context.Context) (any, error) { return 1, nil }); err == nil {
		t.Error("Step of a Job without a worker: no error")
	}
	if err := job.Sleep(t.Context(), "nap", time.Second); err == nil {
		t.Error("Sleep of a Job without a worker: no error")
	}
	if _, err := job.WaitChildren(t.Context(), "w", "s", latch.WaitOptions{}); err == nil {
		t.Error("WaitChildren of a Job without a worker: no error")
	}
}

// A journal larger than a lease carries (store.ClaimJournalBytes): the run
// after a failure reads the rest over HTTP, a page at a time, and gets
// every recorded step's result without running it again.
func TestRemoteWorkerReplaysAJournalLargerThanItsLease(t *testing.T) {
	t.Parallel()
	c := open(t)
	url := serveHTTP(t, c, nil)
	ctx := t.Context()
	names := []string{"s0", "s1", "s2", "s3", "s4"}
	big := func(name string) string { return name + strings.Repeat("x", 600<<10) }
	var mu sync.Mutex
	ran := map[string]int{}
	var runs atomic.Int32
	startRemote(t, url, latch.WorkerOptions{}, func(w *latch.Worker) {
		w.Handle("flow", func(ctx context.Context, job *latch.Job) (any, error) {
			for _, name := range names {
				r, err := latch.StepValue(ctx, job, name, func(context.Context) (string, error) {
					mu.Lock()
					ran[name]++
					mu.Unlock()
					return big(name), nil
				})
				if err != nil {
					return nil, err
				}
				if r != big(name) {
					return nil, latch.Permanent(fmt.Errorf("step %s answered %.20s…, not its recorded result", name, r))
				}
			}
			if runs.Add(1) == 1 {
				return nil, latch.RetryAfter(errors.New("fail after the steps, once"), time.Millisecond)
			}
			return "done", nil
		})
	})
	x, _, err := c.Submit(ctx, "acme", latch.SubmitRequest{Kind: "flow", MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	got := wait(t, c, x.ID)
	if got.Status != latch.StatusSucceeded || got.Attempt != 2 || string(got.Result) != `"done"` {
		t.Fatalf("%s, attempt %d, result %s (%q); want succeeded by attempt 2", got.Status, got.Attempt, got.Result, got.Error)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, name := range names {
		if ran[name] != 1 {
			t.Errorf("step %s ran %d times, want once", name, ran[name])
		}
	}
}

// A remote handler's panic, and a result that is not JSON of at most
// store.MaxJSONDepth levels, fail its attempt; the worker runs on.
func TestRemoteWorkerHandlerPanicsAndBadResults(t *testing.T) {
	t.Parallel()
	c := open(t)
	url := serveHTTP(t, c, nil)
	ctx := t.Context()
	startRemote(t, url, latch.WorkerOptions{}, func(w *latch.Worker) {
		w.Handle("panics", func(context.Context, *latch.Job) (any, error) { panic("kaboom") })
		w.Handle("deep", func(context.Context, *latch.Job) (any, error) {
			return json.RawMessage(strings.Repeat("[", 200) + strings.Repeat("]", 200)), nil
		})
		w.Handle("fine", func(context.Context, *latch.Job) (any, error) { return nil, nil })
	})
	for kind, want := range map[string]string{"panics": "panic: kaboom", "deep": "levels deep", "fine": ""} {
		x, _, err := c.Submit(ctx, "acme", latch.SubmitRequest{Kind: kind, MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		got := wait(t, c, x.ID)
		switch {
		case want == "" && (got.Status != latch.StatusSucceeded || got.Result != nil && string(got.Result) != "null"):
			t.Errorf("%s: %s, result %s; want succeeded with no result", kind, got.Status, got.Result)
		case want != "" && (got.Status != latch.StatusFailed || !strings.Contains(got.Error, want)):
			t.Errorf("%s: %s, error %q; want failed, saying %q", kind, got.Status, got.Error, want)
		}
	}
}
