package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latch-run/latch/internal/backoff"
	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/sqlite"
)

func TestWorkerRunsJobOnceAndSucceeds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var calls atomic.Int32
	jobs := make(chan Job, 1)
	w := NewWorker(e.config())
	w.Handle("echo", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		calls.Add(1)
		jobs <- *job
		return job.Payload, nil
	})
	e.start(w)

	ex := e.submit("echo", `{"n":1}`, maxAttempts(5))
	got := e.waitStatus(ex.ID, store.StatusSucceeded)

	if string(got.Result) != `{"n":1}` {
		t.Errorf("result = %s, want {\"n\":1}", got.Result)
	}
	if got.Attempt != 1 || calls.Load() != 1 {
		t.Errorf("attempt %d, handler calls %d; want 1 and 1", got.Attempt, calls.Load())
	}
	job := <-jobs
	want := Job{ID: ex.ID, Tenant: e.tenant, Kind: "echo", Queue: store.DefaultQueue,
		Payload: json.RawMessage(`{"n":1}`), Attempt: 1, MaxAttempts: 5}
	if job.ID != want.ID || job.Tenant != want.Tenant || job.Kind != want.Kind || job.Queue != want.Queue ||
		string(job.Payload) != string(want.Payload) || job.Attempt != want.Attempt || job.MaxAttempts != want.MaxAttempts {
		t.Errorf("job = %+v, want %+v", job, want)
	}
	e.checkInflight(0)
}

func TestWorkerRetriesWithBackoffThenFails(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var calls atomic.Int32
	w := NewWorker(e.config())
	w.Handle("flaky", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		calls.Add(1)
		return nil, errors.New("boom")
	})
	e.start(w)
	ex := e.submit("flaky", `{}`, maxAttempts(3))

	for attempt := 1; attempt < 3; attempt++ {
		got := e.waitFor(ex.ID, "retry backoff", func(ex *store.Execution) bool {
			return ex.Status == store.StatusScheduled && ex.Attempt == attempt
		})
		// backoff.Delay(attempt) lies in [d/2, d], d = Base·2^(attempt-1).
		d := backoff.Base << (attempt - 1)
		if wait := got.RunAt.Sub(e.clock.Now()); wait < d/2 || wait > d {
			t.Errorf("attempt %d: retry in %v, want within [%v, %v]", attempt, wait, d/2, d)
		}
		if got.Error != "boom" {
			t.Errorf("attempt %d: error %q, want boom", attempt, got.Error)
		}
		e.checkInflight(1)
		e.clock.Advance(d) // the retry comes due; the worker's poll finds it
	}
	got := e.waitStatus(ex.ID, store.StatusFailed)
	if got.Attempt != 3 || calls.Load() != 3 || got.Error != "boom" {
		t.Errorf("attempt %d, calls %d, error %q; want 3, 3, boom", got.Attempt, calls.Load(), got.Error)
	}
	e.checkInflight(0)
}

func TestWorkerPermanentErrorIsNotRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var calls atomic.Int32
	w := NewWorker(e.config())
	w.Handle("bad", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		calls.Add(1)
		return nil, Permanent(errors.New("bad payload"))
	})
	e.start(w)
	ex := e.submit("bad", `{}`, maxAttempts(5))
	got := e.waitStatus(ex.ID, store.StatusFailed)
	if got.Attempt != 1 || calls.Load() != 1 || got.Error != "bad payload" {
		t.Errorf("attempt %d, calls %d, error %q; want 1, 1, bad payload", got.Attempt, calls.Load(), got.Error)
	}
	e.checkInflight(0)
}

func TestWorkerRetryAfterSetsTheDelay(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := NewWorker(e.config())
	w.Handle("later", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		if job.Attempt == 1 {
			return nil, RetryAfter(errors.New("busy"), 42*time.Second)
		}
		return json.RawMessage(`"ok"`), nil
	})
	e.start(w)
	ex := e.submit("later", `{}`)
	got := e.waitStatus(ex.ID, store.StatusScheduled)
	if wait := got.RunAt.Sub(e.clock.Now()); wait != 42*time.Second {
		t.Errorf("retry in %v, want 42s", wait)
	}
	e.clock.Advance(42 * time.Second)
	got = e.waitStatus(ex.ID, store.StatusSucceeded)
	if got.Attempt != 2 {
		t.Errorf("attempt %d, want 2", got.Attempt)
	}
	e.checkInflight(0)
}

func TestWorkerUserCancelStopsHandlerAndIsNotRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	started := make(chan struct{}, 1)
	causes := make(chan error, 1)
	var calls atomic.Int32
	w := NewWorker(e.config())
	w.Handle("long", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		calls.Add(1)
		started <- struct{}{}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	e.start(w)
	ex := e.submit("long", `{}`, maxAttempts(3))
	recv(t, started, "the handler to start")

	if _, err := e.st.Cancel(e.ctx, &store.CancelParams{ID: ex.ID, Now: e.clock.Now()}); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if cause := recv(t, causes, "the handler to be cancelled"); !errors.Is(cause, ErrCancelled) {
		t.Errorf("cause = %v, want ErrCancelled", cause)
	}
	got := e.waitStatus(ex.ID, store.StatusCancelled)
	if got.Attempt != 1 {
		t.Errorf("attempt %d, want 1", got.Attempt)
	}
	e.checkInflight(0)
	// Settled and terminal: a stop now finds nothing to do, and the handler
	// ran once.
	if err := w.Stop(e.ctx); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 {
		t.Errorf("handler calls = %d, want 1", calls.Load())
	}
}

// A cancel or a force delete reaches the handler through the cancel check,
// long before the next heartbeat (here an hour away).
func TestWorkerCancelReachesHandlerBetweenHeartbeats(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config()
	cfg.LeaseDuration = 2 * time.Hour
	cfg.HeartbeatInterval = time.Hour
	cfg.CancelCheckInterval = 10 * time.Millisecond
	started := make(chan string, 2)
	causes := make(chan error, 2)
	w := NewWorker(cfg)
	w.Handle("long", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		started <- job.ID
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	e.start(w)

	ex := e.submit("long", `{}`)
	recv(t, started, "the handler to start")
	if _, err := e.st.Cancel(e.ctx, &store.CancelParams{ID: ex.ID, Now: e.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	if cause := recv(t, causes, "the cancel to reach the handler"); !errors.Is(cause, ErrCancelled) {
		t.Errorf("cause = %v, want ErrCancelled", cause)
	}
	e.waitStatus(ex.ID, store.StatusCancelled)

	gone := e.submit("long", `{}`)
	recv(t, started, "the second handler to start")
	if err := e.st.Delete(e.ctx, &store.DeleteParams{ID: gone.ID, Force: true, Now: e.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	if cause := recv(t, causes, "the delete to reach the handler"); !errors.Is(cause, ErrLeaseLost) {
		t.Errorf("cause = %v, want ErrLeaseLost", cause)
	}
	e.checkInflight(0)
}

func TestWorkerTimeoutCancelsHandlerAndRetries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config()
	cfg.Backoff = func(int) time.Duration { return 0 } // retry at once
	causes := make(chan error, 1)
	w := NewWorker(cfg)
	w.Handle("slow", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		if job.Attempt > 1 {
			return json.RawMessage(`"second time lucky"`), nil
		}
		if _, ok := ctx.Deadline(); !ok {
			t.Error("handler context has no deadline")
		}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	e.start(w)
	ex := e.submit("slow", `{}`, timeoutSeconds(1), maxAttempts(2))

	if cause := recv(t, causes, "the timeout"); !errors.Is(cause, ErrTimeout) {
		t.Errorf("cause = %v, want ErrTimeout", cause)
	}
	got := e.waitStatus(ex.ID, store.StatusSucceeded)
	// The second attempt succeeded, which clears the first one's error.
	if got.Attempt != 2 || got.Error != "" {
		t.Errorf("attempt %d, error %q; want 2 and no error left", got.Attempt, got.Error)
	}
	e.checkInflight(0)
}

func TestWorkerRecoversPanic(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := NewWorker(e.config())
	w.Handle("panics", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		panic("kaboom")
	})
	w.Handle("echo", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		return job.Payload, nil
	})
	e.start(w)
	ex := e.submit("panics", `{}`, maxAttempts(1))
	got := e.waitStatus(ex.ID, store.StatusFailed)
	if got.Error != "panic: kaboom" {
		t.Errorf("error %q, want panic: kaboom", got.Error)
	}
	// The worker survived.
	ok := e.submit("echo", `{}`)
	e.waitStatus(ok.ID, store.StatusSucceeded)
	e.checkInflight(0)
}

func TestWorkerInvalidResultFailsPermanently(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := NewWorker(e.config())
	w.Handle("garbage", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		return json.RawMessage(`{not json`), nil
	})
	e.start(w)
	ex := e.submit("garbage", `{}`, maxAttempts(3))
	got := e.waitStatus(ex.ID, store.StatusFailed)
	if got.Attempt != 1 || !strings.Contains(got.Error, "not valid JSON") {
		t.Errorf("attempt %d, error %q", got.Attempt, got.Error)
	}
	e.checkInflight(0)
}

// A handler's result nested deeper than store.MaxJSONDepth is not stored:
// the attempt fails permanently, as for a result that is not JSON.
func TestWorkerTooDeepResultFailsPermanently(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := NewWorker(e.config())
	w.Handle("deep", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		return json.RawMessage(strings.Repeat("[", 10_000) + strings.Repeat("]", 10_000)), nil
	})
	e.start(w)
	ex := e.submit("deep", `{}`, maxAttempts(3))
	got := e.waitStatus(ex.ID, store.StatusFailed)
	if got.Attempt != 1 || !strings.Contains(got.Error, "levels deep") || len(got.Result) != 0 {
		t.Errorf("attempt %d, error %q, result %s", got.Attempt, got.Error, got.Result)
	}
	e.checkInflight(0)
}

func TestWorkerLeaseLostStopsHandlerAndWritesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rec := newRecordingStore(e.st)
	cfg := e.config()
	cfg.Store = rec
	started := make(chan struct{}, 1)
	causes := make(chan error, 1)
	w := NewWorker(cfg)
	w.Handle("long", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		started <- struct{}{}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return json.RawMessage(`"too late"`), nil // a result that must not be written
	})
	e.start(w)
	ex := e.submit("long", `{}`, maxAttempts(1))
	recv(t, started, "the handler to start")

	// Another process's rescuer, its clock past the lease, takes it back.
	res, err := e.st.Rescue(e.ctx, &store.RescueParams{Now: e.clock.Now().Add(cfg.LeaseDuration + time.Second)})
	if err != nil || res.Failed != 1 {
		t.Fatalf("rescue = %+v, %v; want one failed", res, err)
	}
	if cause := recv(t, causes, "the handler to be cancelled"); !errors.Is(cause, ErrLeaseLost) ||
		!errors.Is(cause, store.ErrLeaseLost) {
		t.Errorf("cause = %v, want ErrLeaseLost", cause)
	}
	// Stop waits until every attempt is settled: after it, every write the
	// worker would make is made.
	if err := w.Stop(e.ctx); err != nil {
		t.Fatal(err)
	}
	tokens := rec.tokensFor(ex.ID)
	if len(tokens) != 1 {
		t.Fatalf("claimed %d times, want 1", len(tokens))
	}
	if writes := rec.writesFor(tokens[0]); len(writes) != 0 {
		t.Errorf("worker wrote %v after losing its lease", writes)
	}
	got := e.get(ex.ID)
	if got.Status != store.StatusFailed || got.Result != nil {
		t.Errorf("status %s, result %s; want failed by the rescue, no result", got.Status, got.Result)
	}
	e.checkInflight(0)
}

func TestWorkerGracefulStopLetsHandlerFinish(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	started := make(chan struct{}, 1)
	proceed := make(chan struct{})
	var finished atomic.Bool
	var cancelled atomic.Bool
	w := NewWorker(e.config())
	w.Handle("work", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		started <- struct{}{}
		<-proceed
		cancelled.Store(ctx.Err() != nil)
		finished.Store(true)
		return json.RawMessage(`"done"`), nil
	})
	e.start(w)
	ex := e.submit("work", `{}`)
	recv(t, started, "the handler to start")

	stopped := make(chan error, 1)
	go func() { stopped <- w.Stop(context.Background()) }()
	close(proceed)
	if err := recv(t, stopped, "Stop"); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if !finished.Load() || cancelled.Load() {
		t.Errorf("finished %v, context cancelled %v; want true, false", finished.Load(), cancelled.Load())
	}
	// Stop returned after the result was written.
	got := e.get(ex.ID)
	if got.Status != store.StatusSucceeded || string(got.Result) != `"done"` {
		t.Errorf("status %s result %s, want succeeded \"done\"", got.Status, got.Result)
	}
	// Nothing is claimed after Stop.
	later := e.submit("work", `{}`)
	if got := e.get(later.ID); got.Status != store.StatusQueued || got.Attempt != 0 {
		t.Errorf("after stop: %s attempt %d, want queued 0", got.Status, got.Attempt)
	}
	if _, err := e.st.Cancel(e.ctx, &store.CancelParams{ID: later.ID}); err != nil {
		t.Fatal(err)
	}
	e.checkInflight(0)
}

func TestWorkerHardStopReleasesLeaseForAnotherWorker(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	started := make(chan struct{}, 1)
	causes := make(chan error, 1)
	w1 := NewWorker(e.config())
	w1.Handle("work", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		started <- struct{}{}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	e.start(w1)
	ex := e.submit("work", `{}`, maxAttempts(1))
	recv(t, started, "the handler to start")

	expired, cancel := context.WithCancel(context.Background())
	cancel() // no time for a soft stop
	if err := w1.Stop(expired); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if cause := recv(t, causes, "the handler to be cancelled"); !errors.Is(cause, ErrShutdown) {
		t.Errorf("cause = %v, want ErrShutdown", cause)
	}
	got := e.get(ex.ID)
	if got.Status != store.StatusQueued || got.Attempt != 1 {
		t.Fatalf("after hard stop: %s attempt %d, want queued 1 (released; the start still counts)", got.Status, got.Attempt)
	}

	cfg := e.config()
	cfg.WorkerID = "w2"
	w2 := NewWorker(cfg)
	w2.Handle("work", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		return json.RawMessage(`"w2"`), nil
	})
	e.start(w2)
	got = e.waitStatus(ex.ID, store.StatusSucceeded)
	if got.Attempt != 2 || string(got.Result) != `"w2"` {
		t.Errorf("attempt %d result %s, want 2 \"w2\" (MaxAttempts 1: a released execution still runs again)",
			got.Attempt, got.Result)
	}
	e.checkInflight(0)
}

func TestWorkerHardStopAbandonsHandlerThatIgnoresCancel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rec := newRecordingStore(e.st)
	cfg := e.config()
	cfg.Store = rec
	cfg.CancelGrace = 20 * time.Millisecond
	started := make(chan struct{}, 1)
	unblock := make(chan struct{})
	returned := make(chan struct{})
	w := NewWorker(cfg)
	w.Handle("stubborn", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		defer close(returned)
		started <- struct{}{}
		<-unblock // ignores ctx
		return json.RawMessage(`"late"`), nil
	})
	if err := w.Start(e.ctx); err != nil { // stopped below: no cleanup Stop
		t.Fatal(err)
	}
	ex := e.submit("stubborn", `{}`)
	recv(t, started, "the handler to start")

	expired, cancel := context.WithCancel(context.Background())
	cancel()
	err := w.Stop(expired)
	if err == nil || !strings.Contains(err.Error(), "did not return") {
		t.Errorf("stop = %v, want an error about the abandoned handler", err)
	}
	got := e.get(ex.ID)
	if got.Status != store.StatusQueued || got.Attempt != 1 {
		t.Errorf("after abandon: %s attempt %d, want queued 1", got.Status, got.Attempt)
	}
	close(unblock)
	<-returned
	tokens := rec.tokensFor(ex.ID)
	if writes := rec.writesFor(tokens[0]); len(writes) != 1 || writes[0] != "release" {
		t.Errorf("writes = %v, want only the release", writes)
	}
	if _, err := e.st.Cancel(e.ctx, &store.CancelParams{ID: ex.ID}); err != nil {
		t.Fatal(err)
	}
	e.checkInflight(0)
}

func TestWorkerUnknownKindFailsPermanently(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config()
	cfg.Kinds = []string{"known", "unknown"}
	w := NewWorker(cfg)
	w.Handle("known", func(ctx context.Context, job *Job) (json.RawMessage, error) { return nil, nil })
	e.start(w)
	ex := e.submit("unknown", `{}`, maxAttempts(3))
	got := e.waitStatus(ex.ID, store.StatusFailed)
	if got.Attempt != 1 || got.Error != `no handler for kind "unknown"` {
		t.Errorf("attempt %d error %q", got.Attempt, got.Error)
	}
	e.checkInflight(0)
}

func TestWorkerClaimsOnlyRegisteredKinds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := NewWorker(e.config())
	w.Handle("mine", func(ctx context.Context, job *Job) (json.RawMessage, error) { return nil, nil })
	e.start(w)
	other := e.submit("theirs", `{}`)
	mine := e.submit("mine", `{}`)
	e.waitStatus(mine.ID, store.StatusSucceeded)
	// The worker has polled since; "theirs" was never claimed.
	if got := e.get(other.ID); got.Status != store.StatusQueued || got.Attempt != 0 {
		t.Errorf("foreign kind: %s attempt %d, want queued 0", got.Status, got.Attempt)
	}
	if got := w.Kinds(); len(got) != 1 || got[0] != "mine" {
		t.Errorf("Kinds() = %v", got)
	}
}

func TestWorkerNeverExceedsSlots(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rec := newRecordingStore(e.st)
	cfg := e.config()
	cfg.Store = rec
	cfg.Slots = 3
	cfg.TenantSlots = 3 // one tenant may fill every slot: this is about the slots
	var mu sync.Mutex
	running, peak := 0, 0
	started := make(chan struct{}, 10)
	proceed := make(chan struct{})
	w := NewWorker(cfg)
	w.Handle("work", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		mu.Lock()
		running++
		peak = max(peak, running)
		mu.Unlock()
		started <- struct{}{}
		<-proceed
		mu.Lock()
		running--
		mu.Unlock()
		return nil, nil
	})
	var ids []string
	for range 7 {
		ids = append(ids, e.submit("work", `{}`).ID)
	}
	e.start(w)
	for range 3 {
		recv(t, started, "three handlers")
	}
	select {
	case <-started:
		t.Fatal("a fourth handler started with 3 slots")
	default:
	}
	close(proceed)
	for _, id := range ids {
		e.waitStatus(id, store.StatusSucceeded)
	}
	mu.Lock()
	defer mu.Unlock()
	if peak != 3 {
		t.Errorf("peak concurrency %d, want 3", peak)
	}
	// Claims come in batches of the free slots: the first asks for all 3.
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.maxes) == 0 || rec.maxes[0] != 3 {
		t.Errorf("claim sizes %v, want the first to be 3", rec.maxes)
	}
	for _, m := range rec.maxes {
		if m < 1 || m > 3 {
			t.Errorf("claim sizes %v: each must be 1..3", rec.maxes)
			break
		}
	}
	e.checkInflight(0)
}

// slowCompleteStore holds every Complete until gate is closed, counting
// those waiting.
type slowCompleteStore struct {
	*sqlite.Store
	gate    chan struct{}
	waiting atomic.Int64
}

func (s *slowCompleteStore) Complete(ctx context.Context, p *store.CompleteParams) (*store.Execution, error) {
	s.waiting.Add(1)
	defer s.waiting.Add(-1)
	select {
	case <-s.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.Store.Complete(ctx, p)
}

// A handler's slot is free as soon as it returns: the next execution starts
// while the outcome of the last one is still being written. The writes in
// flight are bounded by Slots, so a store slow to take them stops claims.
func TestWorkerSlotFreesWhileOutcomeIsWritten(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	slow := &slowCompleteStore{Store: e.st, gate: make(chan struct{})}
	cfg := e.config()
	cfg.Store = slow
	cfg.Slots = 2
	cfg.TenantSlots = 2
	started := make(chan string, 10)
	w := NewWorker(cfg)
	w.Handle("work", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		started <- job.ID
		return nil, nil
	})
	var ids []string
	for range 6 {
		ids = append(ids, e.submit("work", `{}`).ID)
	}
	e.start(w)
	open := sync.OnceFunc(func() { close(slow.gate) })
	t.Cleanup(open) // before the worker's Stop, should the test fail
	// Two slots, and two writes in flight at most: four handlers run and
	// return while no Complete has finished.
	for range 4 {
		recv(t, started, "four handlers while the first outcomes are still being written")
	}
	if n := slow.waiting.Load(); n > 4 {
		t.Fatalf("%d completes in flight, want at most 4", n)
	}
	select {
	case id := <-started:
		t.Fatalf("execution %s started with 2 handlers returned and 2 writes pending per slot", id)
	case <-time.After(200 * time.Millisecond):
	}
	open()
	for _, id := range ids {
		e.waitStatus(id, store.StatusSucceeded)
	}
	e.checkInflight(0)
}

// stopDuringClaimStore has the worker's stop begin while a claim is in
// flight: the claim leases, and before it answers the soft stop comes (as
// Stop's first step does).
type stopDuringClaimStore struct {
	*sqlite.Store
	w      *Worker
	once   sync.Once
	leased chan struct{} // closed once a claim leased, with the stop begun
}

func (s *stopDuringClaimStore) Claim(ctx context.Context, p *store.ClaimParams) (*store.ClaimResult, error) {
	res, err := s.Store.Claim(ctx, p)
	if err == nil && len(res.Leases) > 0 {
		s.once.Do(func() {
			s.w.life.mu.Lock()
			softStop := s.w.life.softCancel
			s.w.life.mu.Unlock()
			softStop(errStopped)
			close(s.leased)
		})
	}
	return res, err
}

// A lease that reaches a stopping worker is released without running, and
// its start is given back: the execution is queued with the attempt count it
// had, not one start more.
func TestWorkerStopDuringClaimGivesTheStartBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	st := &stopDuringClaimStore{Store: e.st, leased: make(chan struct{})}
	cfg := e.config()
	cfg.Store = st
	w := NewWorker(cfg)
	st.w = w
	var ran atomic.Bool
	w.Handle("work", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		ran.Store(true)
		return nil, nil
	})
	id := e.submit("work", `{}`).ID
	e.start(w)
	recv(t, st.leased, "a claim that leases the execution")
	ctx, cancel := context.WithTimeout(e.ctx, waitLimit)
	defer cancel()
	if err := w.Stop(ctx); err != nil { // waits for the claim loop to end
		t.Fatalf("stop: %v", err)
	}
	if ran.Load() {
		t.Fatal("the handler ran for a lease claimed as the worker stopped")
	}
	if x := e.get(id); x.Status != store.StatusQueued || x.Attempt != 0 {
		t.Fatalf("after the stop: status %s attempt %d, want queued 0", x.Status, x.Attempt)
	}
	e.checkInflight(1)
}

func TestWorkerWakesOnNotifier(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config()
	cfg.PollInterval = time.Hour // only a wake-up can bring the job in time
	w := NewWorker(cfg)
	w.Handle("echo", func(ctx context.Context, job *Job) (json.RawMessage, error) { return job.Payload, nil })
	e.start(w)
	for range 3 {
		ex := e.submit("echo", `{}`)
		e.waitStatus(ex.ID, store.StatusSucceeded)
	}
}

func TestWorkerPollsWithoutNotifier(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config()
	cfg.Store = pollingStore{e.st}
	w := NewWorker(cfg)
	if w.notifier != nil {
		t.Fatal("pollingStore still offers a notifier")
	}
	w.Handle("echo", func(ctx context.Context, job *Job) (json.RawMessage, error) { return job.Payload, nil })
	e.start(w)
	ex := e.submit("echo", `{}`)
	e.waitStatus(ex.ID, store.StatusSucceeded)
}

func TestWorkerConfigErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := NewWorker(WorkerConfig{}).Start(e.ctx); err == nil {
		t.Error("Start without a store succeeded")
	}
	if err := NewWorker(e.config()).Start(e.ctx); err == nil {
		t.Error("Start without handlers succeeded")
	}
	cfg := e.config()
	cfg.HeartbeatInterval = cfg.LeaseDuration
	w := NewWorker(cfg)
	w.Handle("x", func(context.Context, *Job) (json.RawMessage, error) { return nil, nil })
	if err := w.Start(e.ctx); err == nil {
		t.Error("Start with HeartbeatInterval >= LeaseDuration succeeded")
	}

	d := NewWorker(WorkerConfig{Store: e.st})
	if d.cfg.Slots != DefaultSlots || d.cfg.LeaseDuration != DefaultLeaseDuration ||
		d.cfg.HeartbeatInterval != DefaultLeaseDuration/3 || d.cfg.PollInterval != DefaultPollInterval ||
		d.ID() == "" {
		t.Errorf("defaults not applied: %+v", d.cfg)
	}
}

func TestWorkerHandleAfterStartPanics(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := NewWorker(e.config())
	w.Handle("x", func(context.Context, *Job) (json.RawMessage, error) { return nil, nil })
	e.start(w)
	defer func() {
		if recover() == nil {
			t.Error("Handle after Start did not panic")
		}
	}()
	w.Handle("y", func(context.Context, *Job) (json.RawMessage, error) { return nil, nil })
}

func TestWorkerStopTurnsHardWhenContextEnds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	started := make(chan struct{}, 1)
	causes := make(chan error, 1)
	w := NewWorker(e.config())
	w.Handle("work", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		started <- struct{}{}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	e.start(w)
	ex := e.submit("work", `{}`)
	recv(t, started, "the handler to start")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond) // the soft level's budget
	defer cancel()
	if err := w.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if cause := <-causes; !errors.Is(cause, ErrShutdown) {
		t.Errorf("cause %v, want ErrShutdown", cause)
	}
	if got := e.get(ex.ID); got.Status != store.StatusQueued || got.Attempt != 1 {
		t.Errorf("%s attempt %d, want queued 1", got.Status, got.Attempt)
	}
}

// logRecords is a slog.Handler keeping every record's message and
// attributes, for tests that check what a worker logs.
type logRecords struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *logRecords) Enabled(context.Context, slog.Level) bool { return true }

func (h *logRecords) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}

func (h *logRecords) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecords) WithGroup(string) slog.Handler      { return h }

// find answers the attributes of the records whose message is msg.
func (h *logRecords) find(msg string) []map[string]slog.Value {
	h.mu.Lock()
	defer h.mu.Unlock()
	var found []map[string]slog.Value
	for _, r := range h.records {
		if r.Message != msg {
			continue
		}
		attrs := map[string]slog.Value{}
		r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value; return true })
		found = append(found, attrs)
	}
	return found
}

// A hard stop logs how many handlers it cancels, before it cancels them:
// those running when it came, even if they return as soon as they are
// cancelled.
func TestWorkerHardStopLogsTheHandlersItCancels(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 4} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			logs := &logRecords{}
			cfg := e.config()
			cfg.Logger = slog.New(logs)
			cfg.Slots, cfg.TenantSlots = n, n // one tenant fills every slot
			const hardMsg = "worker stopping hard: cancelling running handlers"
			started := make(chan struct{}, n)
			var early atomic.Int32 // handlers cancelled before the hard stop was logged
			w := NewWorker(cfg)
			w.Handle("sleep", func(ctx context.Context, job *Job) (json.RawMessage, error) {
				started <- struct{}{}
				<-ctx.Done() // returns as soon as it is cancelled
				if len(logs.find(hardMsg)) == 0 {
					early.Add(1)
				}
				return nil, ctx.Err()
			})
			if err := w.Start(e.ctx); err != nil { // stopped below: no cleanup Stop
				t.Fatal(err)
			}
			for range n {
				e.submit("sleep", `{}`)
			}
			for range n {
				recv(t, started, "the handlers to start")
			}
			expired, cancel := context.WithCancel(context.Background())
			cancel() // no time for a soft stop
			if err := w.Stop(expired); err != nil {
				t.Fatalf("stop: %v", err)
			}
			if k := early.Load(); k > 0 {
				t.Errorf("%d of %d handlers were cancelled before the hard stop was logged", k, n)
			}
			hard := logs.find(hardMsg)
			if len(hard) != 1 {
				t.Fatalf("%d records of the hard stop, want 1", len(hard))
			}
			if got := hard[0]["running"]; got.Kind() != slog.KindInt64 || got.Int64() != int64(n) {
				t.Errorf("the hard stop logged running=%v, want %d", got, n)
			}
			if released := logs.find("lease released"); len(released) != n {
				t.Errorf("%d leases released, want %d", len(released), n)
			}
		})
	}
}
