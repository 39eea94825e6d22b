package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/latch-run/latch/engine"
	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
)

// requireOrSkip skips t with why, or fails it under LATCH_REQUIRE_BACKENDS.
func requireOrSkip(t testing.TB, why string) {
	t.Helper()
	if os.Getenv(testdb.RequireEnv) != "" {
		t.Fatalf("%s is set: %s", testdb.RequireEnv, why)
	}
	t.Skip("SKIP: " + why)
}

// completeHook is a Store whose acknowledged Completes are sent on done
// and which knows when its worker waits with a parked claim; it keeps the
// Store's wake-ups (store.Notifier) and rides (store.ClaimRider), which a
// worker finds by a type assertion.
type completeHook struct {
	store.Store
	store.Notifier
	done chan string

	mu     sync.Mutex
	parked time.Time // when the claim parked now was parked; zero: none is
}

func (s *completeHook) RideClaim(p *store.ClaimParams, now func() time.Time) store.Ride {
	r := s.Store.(store.ClaimRider).RideClaim(p, now)
	s.mu.Lock()
	s.parked = time.Now()
	s.mu.Unlock()
	return &hookRide{Ride: r, s: s}
}

type hookRide struct {
	store.Ride
	s *completeHook
}

func (r *hookRide) Stop(ctx context.Context) (*store.ClaimResult, error) {
	r.s.mu.Lock()
	r.s.parked = time.Time{}
	r.s.mu.Unlock()
	return r.Ride.Stop(ctx)
}

// waitParked waits (up to 1s) until the worker has waited with a parked
// claim for 50ms: it has handled the wake-ups that came before.
func (s *completeHook) waitParked() {
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		s.mu.Lock()
		at := s.parked
		s.mu.Unlock()
		if !at.IsZero() && time.Since(at) >= 50*time.Millisecond {
			return
		}
	}
}

func (s *completeHook) Complete(ctx context.Context, p *store.CompleteParams) (*store.Execution, error) {
	e, err := s.Store.Complete(ctx, p)
	if err == nil {
		s.done <- p.ExecutionID
	}
	return e, err
}

// walRig is a worker on one Store and a Store to submit to (the same one,
// or another on the same schema: an API server and a worker process).
type walRig struct {
	schema string
	submit store.Store
	hook   *completeHook
}

// newWALRig starts a worker with 100 slots whose handler of kind "wal"
// returns at once; every acknowledged Complete is sent on rig.hook.done.
func newWALRig(t *testing.T, twoStores bool) *walRig {
	t.Helper()
	ctx := t.Context()
	acquireSlot(t)
	schema, _ := newSchema(t)
	work := openSchema(t, databaseURL(t), schema, 20)
	t.Cleanup(func() { work.Close() })
	submit := work
	if twoStores {
		submit = openSchema(t, databaseURL(t), schema, 20)
		t.Cleanup(func() { submit.Close() })
	}
	if _, err := submit.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	hook := &completeHook{Store: work, Notifier: work, done: make(chan string, 100000)}
	w := engine.NewWorker(engine.WorkerConfig{
		Store:  hook,
		Slots:  100,
		Logger: slog.New(slog.DiscardHandler),
		// Polls would claim nothing, and so write nothing, but they
		// would make the count depend on time: only wake-ups here.
		PollInterval: time.Hour,
		// The check reads the execution, writing nothing.
		CancelCheckInterval: -1,
	})
	w.Handle("wal", func(context.Context, *engine.Job) (json.RawMessage, error) { return nil, nil })
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := w.Stop(sctx); err != nil {
			t.Error(err)
		}
	})
	return &walRig{schema: schema, submit: submit, hook: hook}
}

// admit submits job i (with a dedup key of its own, to work) and returns
// its execution's id.
func (r *walRig) admit(t *testing.T, i int) string {
	res, err := r.submit.Admit(t.Context(), &store.AdmitParams{Tenant: "acme", Items: []store.Submission{{
		Kind: "wal", Payload: []byte(`{"n":1}`), DedupKey: fmt.Sprint("job-", i)}}})
	if err != nil {
		t.Errorf("submit %d: %v", i, err)
		return ""
	}
	if err := res.Items[0].Err; err != nil {
		t.Errorf("submit %d: %v", i, err)
		return ""
	}
	return res.Items[0].Execution.ID
}

// completed waits for n acknowledged Completes.
func (r *walRig) completed(t *testing.T, n int) {
	t.Helper()
	for i := range n {
		select {
		case <-r.hook.done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%d of %d jobs completed within 30s", i, n)
		}
	}
}

// settle lets the wake-ups of the last jobs come back to the worker and
// its claims end, so that they are inside a count.
func settle() { time.Sleep(200 * time.Millisecond) }

// walJobs runs n jobs one after the other through a real worker: each is
// submitted once the previous one's Complete was acknowledged and the
// worker, woken by that Complete, waits again (waitParked), so no two jobs
// share a commit and the count is that of one job alone at a low rate. It
// returns the WAL count of the n jobs, after warm jobs that the count
// leaves out (a store's first operations prepare its statements).
func walJobs(t *testing.T, twoStores bool, n, warm int) *walCounts {
	t.Helper()
	r := newWALRig(t, twoStores)
	job := func(i int) {
		t.Helper()
		id := r.admit(t, i)
		if id == "" {
			t.FailNow()
		}
		select {
		case got := <-r.hook.done:
			if got != id {
				t.Fatalf("completed %s, want %s", got, id)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("job %d not completed within 30s", i)
		}
		r.hook.waitParked()
	}
	for i := range warm {
		job(-1 - i)
	}
	settle()
	count := startWALCount(t, admin.pool, r.schema)
	for i := range n {
		job(i)
	}
	settle()
	return count.stop(t)
}

// walRate submits n jobs at rate per second, each from its own goroutine
// (open loop), and counts from the first submit until every one has
// completed.
func walRate(t *testing.T, twoStores bool, rate, n int) *walCounts {
	t.Helper()
	r := newWALRig(t, twoStores)
	for i := range 20 {
		r.admit(t, -1-i)
	}
	r.completed(t, 20)
	settle()
	count := startWALCount(t, admin.pool, r.schema)
	interval := time.Second / time.Duration(rate)
	t0 := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		time.Sleep(time.Until(t0.Add(time.Duration(i) * interval)))
		wg.Go(func() { r.admit(t, i) })
	}
	wg.Wait()
	r.completed(t, n)
	settle()
	return count.stop(t)
}

// TestWALFlushesAtRate reports (with -v) the flushes per job at a steady
// rate, as bench/river's submit-to-start runs (LATCH_WAL_RATE jobs per
// second for 5 s); without the variable it is skipped.
func TestWALFlushesAtRate(t *testing.T) {
	rate, _ := strconv.Atoi(os.Getenv("LATCH_WAL_RATE"))
	if rate <= 0 {
		t.Skip("set LATCH_WAL_RATE to a rate per second")
	}
	for _, two := range []bool{false, true} {
		t.Run(fmt.Sprint("two-stores=", two), func(t *testing.T) {
			n := 5 * rate
			c := walRate(t, two, rate, n)
			t.Logf("%d jobs at %d/s, %s flushes per job: %v", n, rate, perJob(c.Flushes, n), c)
		})
	}
}

// TestWALFlushesPerJob counts the commits that wait for a WAL flush per
// job — submit, claim, complete and whatever else a job's way through a
// worker writes — with one job at a time, so none shares a commit with
// another. It bounds them: each flush is a disk write a job waits for.
//
// Across two stores (an API server and a worker process) a job costs three:
// its submit, its claim and its complete. In one process the worker's
// parked claim rides with the submit (store.ClaimRider): two. The slack
// is for a claim that locks an execution committed after its statement
// began and so leases nothing (sqlClaimMany): its row lock is a write.
func TestWALFlushesPerJob(t *testing.T) {
	t.Parallel()
	const n, warm = 20, 3
	for _, tc := range []struct {
		name      string
		twoStores bool
		perJob    int
	}{{"one-store", false, 2}, {"two-stores", true, 3}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := walJobs(t, tc.twoStores, n, warm)
			t.Logf("%d jobs, %s flushes per job: %v", n, perJob(c.Flushes, n), c)
			if limit := tc.perJob*n + n/5; c.Flushes > limit {
				t.Errorf("%d jobs asked for %d WAL flushes, more than %d (%d per job)", n, c.Flushes, limit, tc.perJob)
			}
		})
	}
}

// TestWALFlushesIdle counts what a latch server's housekeeping (the
// rescuer, waker, scheduler, pruner and reporter of `latch serve`, and an
// idle worker) commits while there is nothing to do, each at a short
// interval: a pass that changes nothing must ask for no flush. The
// reporter's write (the server's presence) is the only one that changes
// something.
func TestWALFlushesIdle(t *testing.T) {
	ctx := t.Context()
	acquireSlot(t)
	schema, _ := newSchema(t)
	s := openSchema(t, databaseURL(t), schema, 8)
	defer s.Close()
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	const every = 50 * time.Millisecond
	w := engine.NewWorker(engine.WorkerConfig{Store: s, Logger: log, PollInterval: every})
	w.Handle("wal", func(context.Context, *engine.Job) (json.RawMessage, error) { return nil, nil })
	rep := engine.NewReporter(engine.ReporterConfig{Store: s, Logger: log, Interval: every})
	g := engine.NewGroup(w, rep,
		engine.NewRescuer(engine.RescuerConfig{Store: s, Logger: log, Interval: every}),
		engine.NewWaker(engine.WakerConfig{Store: s, Logger: log, Interval: every}),
		engine.NewScheduler(engine.SchedulerConfig{Store: s, Logger: log, Interval: every}),
		engine.NewPruner(engine.PrunerConfig{Store: s, Logger: log, Interval: every}))
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := g.Stop(sctx); err != nil {
			t.Error(err)
		}
	}()
	settle()
	count := startWALCount(t, admin.pool, schema)
	const d = 2 * time.Second
	time.Sleep(d)
	c := count.stop(t)
	t.Logf("idle for %v, passes every %v: %v", d, every, c)
	for sig, k := range c.By {
		if sig != "latch_servers" {
			t.Errorf("an idle server committed %d writes of %s; only its reports (latch_servers) should write", k, sig)
		}
	}
}
