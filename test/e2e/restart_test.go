package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The store itself restarted under running servers. Each test starts a
// PostgreSQL or Redis of its own on a free port in its temporary directory
// (never the machine's shared ones, which other packages use at the same
// time), puts two `latch serve` processes on it, submits a steady stream of
// work, and takes the store down for a few seconds, then starts it again on
// the same data: first a clean shutdown, then a crash. Checked: /readyz
// answers 503 while the store is down and 200 again after, without any
// restart of latch; every submit acknowledged before, during or after the
// outage is present and succeeds, no attempt runs twice; a submit that
// failed during the outage can be retried with its dedup key; the tenant's
// inflight returns to 0.

func TestPostgresRestart(t *testing.T) {
	t.Parallel()
	pg := startPrivatePostgres(t)
	store := pg.url + "&pool_max_conns=8"
	if out, err := exec.Command(binary, "migrate", "up", "--store", store).CombinedOutput(); err != nil {
		t.Fatalf("latch migrate up: %v\n%s", err, out)
	}
	// As `pg_ctl restart -m fast`: sessions aborted, a shutdown checkpoint.
	t.Run("FastShutdown", func(t *testing.T) {
		testStoreRestart(t, store, "fast", func() { pg.stop(syscall.SIGINT) }, pg.start)
	})
	// As `pg_ctl stop -m immediate`: no checkpoint, WAL replay at start.
	t.Run("ImmediateShutdown", func(t *testing.T) {
		testStoreRestart(t, store, "immediate", func() { pg.stop(syscall.SIGQUIT) }, pg.start)
	})
}

func TestRedisRestart(t *testing.T) {
	t.Parallel()
	r := startPrivateRedis(t)
	store := r.url + "?prefix=restart"
	// SHUTDOWN: the AOF is flushed and fsynced, the process exits.
	t.Run("Shutdown", func(t *testing.T) {
		testStoreRestart(t, store, "shutdown", r.stop, r.start)
	})
	// SIGKILL: with appendfsync always, nothing acknowledged may be lost
	// (docs/backends.md).
	t.Run("SIGKILL", func(t *testing.T) {
		testStoreRestart(t, store, "sigkill", r.kill, r.start)
	})
}

// missingBackend skips t, saying why, or fails it when CI requires the
// backends.
func missingBackend(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if requireBackends() {
		t.Fatalf("LATCH_REQUIRE_BACKENDS is set but %s", msg)
	}
	t.Skipf("SKIP: store restart test not run: %s", msg)
}

// testStoreRestart runs the scenario on store, taking the store down with
// stop and up again with start.
func testStoreRestart(t *testing.T, store, tenantName string, stop, start func()) {
	// A bound on the whole scenario, not a claim about its speed: on a
	// loaded 2-core machine the restart and the drain after it took ~28s.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Each job's call takes a while, so that executions are running when
	// the store goes away.
	w := newDelayedWitness(t, 50*time.Millisecond)
	servers := []*server{
		startServer(t, serverOpts{store: store, workers: 4}),
		startServer(t, serverOpts{store: store, workers: 4}),
	}
	key := createTenant(t, servers[0].url, tenantName)
	clients := make([]*client, len(servers))
	for i, s := range servers {
		clients[i] = newClient(s.url, key)
		clients[i].hc.Timeout = 5 * time.Second
	}
	before := wakeLatency(ctx, t, clients, w, "probe-before", 10)
	submit := func(c *client, k string) (*execution, int, error) {
		var e execution
		code, err := c.call(ctx, "POST", "/api/executions", map[string]any{
			"kind": "http", "dedup_key": k,
			"payload": map[string]any{"url": w.url + "/hit/" + k, "method": "POST"},
		}, &e)
		if err == nil && code != 200 && code != 201 {
			err = fmt.Errorf("submit answered %d", code)
		}
		return &e, code, err
	}

	// A steady stream of submits over both servers, bounded in count and
	// time; one that is not acknowledged is remembered for a retry.
	type acked struct {
		id, key string
		server  int
		sent    time.Time
	}
	type failure struct {
		key  string
		sent time.Time
		code int
		err  error
	}
	var (
		mu       sync.Mutex
		ackd     []acked
		failed   []failure
		lastErr  error
		wg       sync.WaitGroup
		stopSubs = make(chan struct{})
	)
	for g := range 6 {
		wg.Go(func() {
			for i := range 1500 {
				select {
				case <-stopSubs:
					return
				case <-ctx.Done():
					return
				default:
				}
				k := fmt.Sprintf("s-%d-%d", g, i)
				sent, srv := time.Now(), (g+i)%len(clients)
				e, code, err := submit(clients[srv], k)
				mu.Lock()
				if err != nil {
					failed = append(failed, failure{k, sent, code, err})
					lastErr = err
				} else {
					ackd = append(ackd, acked{e.ID, k, srv, sent})
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(50 * time.Millisecond)
				} else {
					time.Sleep(5 * time.Millisecond)
				}
			}
		})
	}
	counts := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return len(ackd), len(failed)
	}
	waitAcked := func(n int, within time.Duration) bool {
		for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if a, _ := counts(); a >= n {
				return true
			}
		}
		return false
	}
	stopSubmitters := func() {
		close(stopSubs)
		wg.Wait()
	}

	if !waitAcked(100, 10*time.Second) {
		stopSubmitters()
		a, f := counts()
		t.Fatalf("before the outage: %d submits acknowledged, %d failed (last: %v)", a, f, lastErr)
	}

	// The outage: /readyz of every server must say 503 while it lasts.
	stop()
	downAt := time.Now()
	a0, f0 := counts()
	answers := make([]map[string]int, len(servers))
	outageOver := make(chan struct{})
	var polls sync.WaitGroup
	var amu sync.Mutex
	for i, s := range servers {
		answers[i] = map[string]int{}
		polls.Go(func() {
			for {
				select {
				case <-outageOver:
					return
				default:
				}
				a := readyz(s.url)
				amu.Lock()
				answers[i][a]++
				amu.Unlock()
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
	seen503 := func() bool {
		amu.Lock()
		defer amu.Unlock()
		for _, m := range answers {
			if m["503"] == 0 {
				return false
			}
		}
		return true
	}
	for time.Since(downAt) < 2*time.Second || !seen503() && time.Since(downAt) < 8*time.Second {
		time.Sleep(50 * time.Millisecond)
	}
	close(outageOver)
	polls.Wait() // no /readyz of the outage may be answered after the start
	start()
	a1, f1 := counts()
	t.Logf("outage of %v: /readyz answered %v; %d submits acknowledged and %d failed during it",
		time.Since(downAt).Round(time.Millisecond), answers, a1-a0, f1-f0)
	for i, m := range answers {
		if m["503"] == 0 || len(m) != 1 {
			t.Errorf("/readyz of server %d while the store was down: %v, want only 503", i, m)
		}
	}

	// latch reconnects by itself: /readyz is 200 again, submits are
	// acknowledged again by both servers.
	upAt := time.Now()
	for i, s := range servers {
		for readyz(s.url) != "200" {
			if time.Since(upAt) > 10*time.Second {
				stopSubmitters()
				t.Fatalf("server %d: /readyz not 200 within 10s of the store's restart (it answers %s)", i, readyz(s.url))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	readyAt := time.Now()
	t.Logf("both servers ready %v after the store's restart", readyAt.Sub(upAt).Round(time.Millisecond))
	reconnected := waitAcked(a1+100, 10*time.Second)
	stopSubmitters()
	a2, f2 := counts()
	codes := map[int]int{}
	var late []failure // sent when both servers said they were ready again
	for _, f := range failed {
		codes[f.code]++
		if f.sent.After(readyAt) {
			late = append(late, f)
		}
	}
	t.Logf("%d submits acknowledged, %d failed in all (status codes %v; 0 is no answer; last: %v)", a2, f2, codes, lastErr)
	for i, f := range late {
		if i == 5 {
			t.Logf("... and %d more", len(late)-5)
			break
		}
		t.Logf("failed %v after /readyz said ready again: %s: %v", f.sent.Sub(readyAt).Round(time.Millisecond), f.key, f.err)
	}
	if !reconnected {
		t.Fatalf("after the store's restart: only %d more submits acknowledged in 10s", a2-a1)
	}
	ackedAfter := make([]int, len(servers))
	for _, a := range ackd {
		if a.sent.After(readyAt) {
			ackedAfter[a.server]++
		}
	}
	for i, n := range ackedAfter {
		if n < 20 {
			t.Errorf("server %d acknowledged only %d submits after the store's restart (per server: %v)", i, n, ackedAfter)
		}
	}
	for i, s := range servers {
		select {
		case <-s.done:
			t.Fatalf("server %d exited", i)
		default:
		}
	}

	// A submit that was not acknowledged left either a whole execution or
	// nothing: its retry is acknowledged (I9, dedup contract point 3).
	found := 0
	for i, f := range failed {
		e, code, err := submit(clients[i%len(clients)], f.key)
		if err != nil {
			t.Errorf("retry of %s after the restart: %v", f.key, err)
			continue
		}
		if code == 200 {
			found++ // committed, but the answer was lost
		}
		ackd = append(ackd, acked{e.ID, f.key, i % len(clients), time.Now()})
	}
	// Dedup mappings survived the restart: a submit acknowledged before the
	// outage maps to its execution still (I1, I8).
	for i, a := range ackd[:min(50, a0)] {
		e, code, err := submit(clients[i%len(clients)], a.key)
		if err != nil || code != 200 || e.ID != a.id || !e.Deduplicated {
			t.Errorf("I1: resubmit of %s (execution %s) after the restart: %d %s deduplicated=%v, %v",
				a.key, a.id, code, e.ID, e.Deduplicated, err)
		}
	}

	// Every acknowledged execution is there and runs once per attempt.
	verify := newClient(servers[1].url, key)
	verify.hc.Timeout = 15 * time.Second
	rerun := 0
	defer func() {
		t.Logf("%d failed submits retried (%d had been committed); %d executions took more than one attempt",
			len(failed), found, rerun)
	}()
	for _, a := range ackd {
		e, err := waitTerminal(ctx, verify, a.id)
		if err != nil {
			t.Fatalf("I8: acknowledged execution %s (key %s): %v", a.id, a.key, err)
		}
		if e.Attempt > 1 {
			rerun++
		}
		if e.Status != "succeeded" {
			t.Errorf("acknowledged execution %s (key %s) ended %s after %d attempts", a.id, a.key, e.Status, e.Attempt)
		}
		if hits := w.count("/hit/" + a.key); hits < 1 || hits > e.Attempt {
			t.Errorf("I2: execution %s ran %d times in %d attempts", a.id, hits, e.Attempt)
		}
	}
	// Executions whose submit committed but was not answered run too; then
	// no quota slot is left taken.
	for {
		var ten tenant
		if _, err := verify.call(ctx, "GET", "/api/tenants/"+tenantName, nil, &ten); err != nil {
			t.Fatal(err)
		}
		if ten.Inflight == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("I3: tenant inflight stuck at %d", ten.Inflight)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Wake-ups work again: idle workers start a new submit at once rather
	// than at their next poll.
	after := wakeLatency(ctx, t, clients, w, "probe-after", 10)
	t.Logf("submit-to-start of an idle cluster: median %v before the outage, %v after", before, after)
	if after > 250*time.Millisecond {
		// Polling alone (every second) gives a median of some 300-500ms.
		t.Errorf("after the store's restart a submit takes %v (median) to start on an idle cluster, %v before: "+
			"wake-ups (LISTEN/NOTIFY, pub/sub) did not come back", after, before)
	}
}

// wakeLatency submits n executions one at a time, each once the previous
// one has started (its call reached w), and returns the median time from a
// submit to the start.
func wakeLatency(ctx context.Context, t *testing.T, clients []*client, w *witness, prefix string, n int) time.Duration {
	t.Helper()
	var lat []time.Duration
	for i := range n {
		k := fmt.Sprintf("%s-%d", prefix, i)
		start := time.Now()
		var e execution
		if _, err := clients[i%len(clients)].call(ctx, "POST", "/api/executions", map[string]any{
			"kind": "http", "dedup_key": k,
			"payload": map[string]any{"url": w.url + "/hit/" + k, "method": "POST"},
		}, &e); err != nil {
			t.Fatalf("probe submit: %v", err)
		}
		for w.count("/hit/"+k) == 0 {
			if time.Since(start) > 5*time.Second {
				t.Fatalf("probe %s (execution %s) not started within 5s", k, e.ID)
			}
			time.Sleep(2 * time.Millisecond)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	return lat[len(lat)/2]
}

// readyz returns the status code of GET /readyz as a string, or the error.
func readyz(base string) string {
	hc := http.Client{Timeout: 4 * time.Second}
	resp, err := hc.Get(base + "/readyz")
	if err != nil {
		return "error: " + err.Error()
	}
	resp.Body.Close()
	return strconv.Itoa(resp.StatusCode)
}
