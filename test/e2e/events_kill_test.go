package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/latch-run/latch"
	"github.com/latch-run/latch/store"
)

// Publishes under SIGKILL (I14): a stream of publishes of "order.paid",
// each with its own correlation key and Idempotency-Key, sent through two
// `latch serve` processes and retried by the client until acknowledged,
// while every server and every worker process is SIGKILLed twice mid-
// stream. The tenant has two subscriptions on the name, and one flow per
// key waits for its event by correlation key. After the restarts every
// acknowledgement of a key named one event, the subscriptions started
// exactly one execution per (event, subscription) — dedup key
// event:<id>:<subscription>, none for an event no acknowledgement named —
// and every flow consumed its key's event once (one step, at most one
// suspension) and succeeded with it.

const (
	evOrders = 60
	// evPublishers publish at once, so that a kill finds publishes in
	// flight.
	evPublishers = 6
	// evWorkerEnv makes the test binary a worker process of this test on
	// the store URL it holds (TestMain).
	evWorkerEnv = "LATCH_E2E_EVENT_WORKER"
	evTenant    = "ev"
	evName      = "order.paid"
)

var evSubscriptions = []string{"audit", "bill"}

func TestEventsSurviveKillsSQLite(t *testing.T) {
	t.Parallel()
	testEventsSurviveKills(t, "sqlite:"+filepath.Join(t.TempDir(), "latch.db"))
}

func TestEventsSurviveKillsPostgres(t *testing.T) {
	t.Parallel()
	testEventsSurviveKills(t, postgresStore(t))
}

func TestEventsSurviveKillsRedis(t *testing.T) {
	t.Parallel()
	testEventsSurviveKills(t, redisStore(t))
}

func TestEventsSurviveKillsRedisCluster(t *testing.T) {
	t.Parallel()
	testEventsSurviveKills(t, redisClusterStore(t))
}

// evWorker is the worker process: a flow waits for its order's event by
// correlation key and answers the event's id; a subscription's execution
// takes a moment (so that kills find some running) and succeeds. It runs
// until killed.
func evWorker(url string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	c, err := latch.Open(ctx, url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "event worker:", err)
		return 1
	}
	defer c.Close()
	w := c.NewWorker(latch.WorkerOptions{LeaseDuration: 2 * time.Second, Slots: 16, TenantSlots: 16})
	w.Handle("ev-waiter", func(ctx context.Context, j *latch.Job) (any, error) {
		var in struct{ Order string }
		if err := j.Decode(&in); err != nil {
			return nil, latch.Permanent(err)
		}
		e, err := j.WaitEvent(ctx, "paid", evName, latch.WaitEventOptions{Key: in.Order})
		if err != nil {
			return nil, err
		}
		return map[string]string{"event_id": e.ID, "key": e.Key}, nil
	})
	w.Handle("ev-sub", func(ctx context.Context, j *latch.Job) (any, error) {
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return nil, nil
	})
	if err := w.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "event worker:", err)
		return 1
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = w.Stop(sctx)
	return 0
}

// evProcs are the processes the test kills: two servers and three
// workers (the test binary run as evWorker).
type evProcs struct {
	t       *testing.T
	store   string
	logs    *lockedWriter
	mu      sync.Mutex
	servers []*server
	workers []*exec.Cmd
	retried atomic.Int64 // publishes sent again after a failure
	cut     atomic.Int64 // of them, tries a kill cut off after they reached a server
}

func (p *evProcs) startAll() {
	p.t.Helper()
	servers := []*server{startServer(p.t, serverOpts{store: p.store}), startServer(p.t, serverOpts{store: p.store})}
	p.mu.Lock()
	p.servers = servers
	p.mu.Unlock()
	for range 3 {
		cmd := exec.Command(os.Args[0], "-test.run", "^$")
		cmd.Env = append(os.Environ(), evWorkerEnv+"="+p.store)
		cmd.Stdout, cmd.Stderr = p.logs, p.logs
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			p.t.Fatal(err)
		}
		p.workers = append(p.workers, cmd)
	}
}

func (p *evProcs) killAll() {
	p.mu.Lock()
	servers := p.servers
	p.mu.Unlock()
	for _, s := range servers {
		s.kill()
	}
	for _, w := range p.workers {
		w.Process.Signal(syscall.SIGKILL)
		w.Wait()
	}
	p.workers = nil
}

// url is server i's address, as it is now (a restart moves it).
func (p *evProcs) url(i int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.servers[i%len(p.servers)].url
}

// evAck is a publish's acknowledgement (POST /api/events, 202).
type evAck struct {
	EventID string `json:"event_id"`
	Started []struct {
		Subscription string `json:"subscription"`
		ExecutionID  string `json:"execution_id"`
		Error        string `json:"error"`
	} `json:"started"`
}

// publishUntilAcked publishes order's event with its Idempotency-Key
// through server i until a server acknowledges it, whatever failed before
// (a killed server, a refused connection).
func publishUntilAcked(ctx context.Context, p *evProcs, key string, i int, order string) (evAck, error) {
	defer p.retried.Add(-1) // the acknowledged (or last) try is no retry
	body, _ := json.Marshal(map[string]any{"name": evName, "key": order, "data": map[string]string{"order": order}})
	hc := &http.Client{Timeout: 10 * time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, "POST", p.url(i)+"/api/events", bytes.NewReader(body))
		if err != nil {
			return evAck{}, err
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "pub-"+order)
		p.retried.Add(1)
		resp, err := hc.Do(req)
		if err != nil && !errors.Is(err, syscall.ECONNREFUSED) {
			p.cut.Add(1)
		}
		if err == nil {
			var ack evAck
			derr := json.NewDecoder(resp.Body).Decode(&ack)
			resp.Body.Close()
			if resp.StatusCode == http.StatusAccepted && derr == nil && ack.EventID != "" {
				return ack, nil
			}
		}
		select {
		case <-ctx.Done():
			return evAck{}, fmt.Errorf("publish of %s never acknowledged: %w", order, ctx.Err())
		case <-time.After(30 * time.Millisecond):
		}
	}
}

func testEventsSurviveKills(t *testing.T, storeURL string) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	procs := &evProcs{t: t, store: storeURL, logs: &lockedWriter{w: new(bytes.Buffer)}}
	t.Cleanup(func() {
		procs.killAll()
		if t.Failed() {
			t.Logf("worker logs:\n%s", procs.logs.String())
		}
	})
	procs.startAll()
	key := createTenant(t, procs.url(0), evTenant)
	api := newClient(procs.url(0), key)
	for _, name := range evSubscriptions {
		if _, err := api.call(ctx, "PUT", "/api/subscriptions/"+name, map[string]any{"event": evName, "kind": "ev-sub"}, &struct{}{}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := latch.Open(ctx, storeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	reqs := make([]latch.SubmitRequest, evOrders)
	orders := make([]string, evOrders)
	for i := range reqs {
		orders[i] = fmt.Sprintf("o-%02d", i)
		// Attempts to spare: every kill takes one from each flow running
		// then, and so does a lease that expires while the store, loaded
		// by the kills' restarts, answers a heartbeat too late. What the
		// test holds is that each flow consumes its event once and ends.
		reqs[i] = latch.SubmitRequest{Kind: "ev-waiter", Payload: map[string]string{"order": orders[i]}, DedupKey: "wait-" + orders[i],
			MaxAttempts: 10}
	}
	subs, err := c.SubmitMany(ctx, evTenant, reqs)
	if err != nil {
		t.Fatal(err)
	}
	waiters := make([]string, len(subs))
	for i, s := range subs {
		if s.Err != nil {
			t.Fatal(s.Err)
		}
		waiters[i] = s.Execution.ID
	}

	// The publishers send the orders' events, each acknowledgement
	// followed by a deliberate repeat of its key through the other
	// server; every server and worker is SIGKILLed (and started again)
	// once a third of them are acknowledged and again past two thirds.
	var (
		mu    sync.Mutex
		acks  = map[string][]evAck{} // order -> every acknowledgement of its key
		acked int
		next  int
		errs  []error
		wg    sync.WaitGroup
	)
	for g := range evPublishers {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= evOrders {
					return
				}
				order := orders[i]
				for r := range 2 {
					ack, err := publishUntilAcked(ctx, procs, key, g+r, order)
					mu.Lock()
					if err != nil {
						errs = append(errs, err)
					} else {
						acks[order] = append(acks[order], ack)
						if r == 0 {
							acked++
						}
					}
					mu.Unlock()
					if err != nil {
						return
					}
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	for _, at := range []int{evOrders / 3, 2 * evOrders / 3} {
		for {
			mu.Lock()
			n := acked
			mu.Unlock()
			if n >= at {
				t.Logf("SIGKILL of every server and worker with %d of %d publishes acknowledged", n, evOrders)
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("timed out with %d of %d publishes acknowledged: %v", n, evOrders, ctx.Err())
			case <-time.After(5 * time.Millisecond):
			}
		}
		procs.killAll()
		procs.startAll()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	t.Logf("%d publishes acknowledged twice each; %d tries failed and were sent again, %d of them cut off by a kill after reaching a server",
		evOrders, procs.retried.Load(), procs.cut.Load())

	// Every acknowledgement of a key names one event and the same starts.
	events := map[string]string{} // order -> its event id
	for _, order := range orders {
		a := acks[order]
		if len(a) != 2 {
			t.Fatalf("order %s acknowledged %d times, want 2", order, len(a))
		}
		for _, ack := range a[1:] {
			if ack.EventID != a[0].EventID || !slices.Equal(ack.Started, a[0].Started) {
				t.Errorf("I14: publishes of key pub-%s answered %+v and %+v, want one answer", order, a[0], ack)
			}
		}
		if len(a[0].Started) != len(evSubscriptions) {
			t.Errorf("publish of %s started %+v, want one execution per subscription", order, a[0].Started)
		}
		events[order] = a[0].EventID
	}

	// Every flow consumed its key's event once and succeeded with it.
	for i, id := range waiters {
		x, err := c.Wait(ctx, evTenant, id)
		if err != nil {
			t.Fatalf("waiting for the flow of %s: %v", orders[i], err)
		}
		checkEventWaiter(t, ctx, c, x, events[orders[i]])
	}

	// Each (event, subscription) started exactly one execution, and only
	// the acknowledged events started any.
	want := map[string]bool{}
	for _, order := range orders {
		for _, sub := range evSubscriptions {
			want[store.EventDedupKey(events[order], sub)] = true
		}
	}
	seen := map[string]int{}
	var all []*latch.Execution
	for cursor := ""; ; {
		p, err := c.List(ctx, evTenant, latch.ListOptions{Kind: "ev-sub", Limit: 500, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, p.Items...)
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	for _, x := range all {
		seen[x.DedupKey]++
		if !want[x.DedupKey] {
			t.Errorf("I14: execution %s started under %q, which no acknowledged (event, subscription) names", x.ID, x.DedupKey)
		}
	}
	for k := range want {
		if seen[k] != 1 {
			t.Errorf("I14: (event, subscription) %s started %d executions, want 1", k, seen[k])
		}
	}
	for _, x := range all {
		if y, err := c.Wait(ctx, evTenant, x.ID); err != nil || y.Status != latch.StatusSucceeded {
			t.Errorf("subscription execution %s: %+v %v, want succeeded", x.ID, y, err)
		}
	}
}

// checkEventWaiter checks one ended flow: it succeeded with its key's
// event, recorded its wait once, and was suspended at most once (its wait
// ended by the publish or found the event retained).
func checkEventWaiter(t *testing.T, ctx context.Context, c *latch.Client, x *latch.Execution, event string) {
	t.Helper()
	if x.Status != latch.StatusSucceeded {
		t.Errorf("flow %s ended %s (%s), want succeeded", x.ID, x.Status, x.Error)
		return
	}
	var res struct {
		EventID string `json:"event_id"`
	}
	if err := json.Unmarshal(x.Result, &res); err != nil || res.EventID != event {
		t.Errorf("flow %s result %s, want its key's event %s", x.ID, x.Result, event)
	}
	steps, err := c.Steps(ctx, evTenant, x.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 1 || steps[0].Name != "paid" {
		t.Errorf("flow %s journal has %d steps, want its wait once", x.ID, len(steps))
	}
	runs, err := c.Attempts(ctx, evTenant, x.ID)
	if err != nil {
		t.Fatal(err)
	}
	suspended := 0
	var outcomes []string
	for _, r := range runs {
		outcomes = append(outcomes, r.Outcome)
		if r.Outcome == "suspended" {
			suspended++
		}
	}
	if suspended > 1 || len(runs) == 0 || runs[len(runs)-1].Outcome != "succeeded" {
		t.Errorf("flow %s runs %v, want at most one suspended (its wait, resumed once) and the last succeeded", x.ID, outcomes)
	}
}
