package e2e

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Network faults between latch and its store. Two `latch serve`
// processes reach the store through a faultProxy; clients submit `http`
// jobs with dedup keys to both, retrying a submit that was not
// acknowledged with the same key, as a real client would; the jobs call an
// outside witness that records the execution id and attempt number the
// http kind sends. Meanwhile the proxy cuts every connection a few times,
// adds 150ms per chunk for 2s, blackholes for 3s, refuses (after a cut)
// for 2s, and then passes through again. Checked: every acknowledged
// execution exists and succeeds (I8); one execution per dedup key (I1);
// the witness saw every execution's effect, never twice for one attempt
// (I2), and saw the attempt that succeeded; inflight returns to 0 (I3);
// /readyz answers 200 again on both servers, which never restarted; new
// submits run, and idle workers are woken at once again (the change
// listeners reconnected).

func TestPostgresFaults(t *testing.T) {
	t.Parallel()
	testStoreFaults(t, postgresStore(t))
}

func TestRedisFaults(t *testing.T) {
	t.Parallel()
	testStoreFaults(t, redisStore(t))
}

// testStoreFaults runs the scenario on store, reached through a proxy.
func testStoreFaults(t *testing.T, store string) {
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Second)
	defer cancel()
	u, err := url.Parse(store)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newFaultProxy(t, u.Host)
	u.Host = proxy.Addr()
	w := newAttemptWitness(t, 50*time.Millisecond)
	servers := []*server{
		startServer(t, serverOpts{store: u.String(), workers: 4}),
		startServer(t, serverOpts{store: u.String(), workers: 4}),
	}
	key := createTenant(t, servers[0].url, "faults")
	clients := make([]*client, len(servers))
	for i, s := range servers {
		clients[i] = newClient(s.url, key)
		// Shorter than the blackhole: some submits time out and are
		// retried while their first try may still commit.
		clients[i].hc.Timeout = 2500 * time.Millisecond
	}
	submit := func(c *client, k string) (*execution, int, error) {
		var e execution
		code, err := c.call(ctx, "POST", "/api/executions", map[string]any{
			"kind": "http", "dedup_key": k, "max_attempts": 20,
			"payload": map[string]any{"url": w.url + "/hit/" + k, "method": "POST", "timeout_seconds": 10},
		}, &e)
		if err == nil && code != 200 && code != 201 {
			err = fmt.Errorf("submit answered %d", code)
		}
		return &e, code, err
	}

	// The client loop: each key is submitted until acknowledged, with the
	// same key every time, alternating servers.
	type acked struct {
		id, key string
		tries   int
		dedup   bool // acknowledged as a duplicate: an earlier try committed
	}
	var (
		mu       sync.Mutex
		ackd     []acked
		failures = map[string]int{} // status code (0: no answer) → count
		lastErr  error
		wg       sync.WaitGroup
		stopSubs = make(chan struct{})
	)
	for g := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stopSubs:
					return
				default:
				}
				k := fmt.Sprintf("f-%d-%d", g, i)
				for try := 1; ; try++ {
					srv := (g + i + try) % len(clients)
					e, code, err := submit(clients[srv], k)
					if err == nil {
						mu.Lock()
						ackd = append(ackd, acked{e.ID, k, try, e.Deduplicated})
						mu.Unlock()
						break
					}
					mu.Lock()
					failures[strconv.Itoa(code)]++
					lastErr = err
					mu.Unlock()
					if ctx.Err() != nil {
						t.Errorf("submit of %s not acknowledged after %d tries: %v", k, try, err)
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
				time.Sleep(40 * time.Millisecond)
			}
		})
	}
	stopSubmitters := sync.OnceFunc(func() {
		close(stopSubs)
		wg.Wait()
	})
	defer func() { cancel(); stopSubmitters() }() // on a failure, the submitters give up at once
	acknowledged := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(ackd)
	}
	// progress waits until n more submits are acknowledged, at most d.
	progress := func(what string, n int, d time.Duration) {
		t.Helper()
		a0 := acknowledged()
		for deadline := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
			if acknowledged() >= a0+n {
				return
			}
			if time.Now().After(deadline) {
				mu.Lock()
				a, last := len(ackd), lastErr
				mu.Unlock()
				t.Fatalf("%s: only %d submits acknowledged in %v (last error: %v)", what, a-a0, d, last)
			}
		}
	}

	// /readyz of both servers, polled through the faults, for the log.
	var rmu sync.Mutex
	readiness := map[string]map[string]int{} // phase → answer → count
	phase := "warm-up"
	setPhase := func(p string) {
		rmu.Lock()
		phase = p
		if readiness[p] == nil {
			readiness[p] = map[string]int{}
		}
		rmu.Unlock()
	}
	setPhase(phase)
	pollsDone := make(chan struct{})
	var polls sync.WaitGroup
	stopPolls := sync.OnceFunc(func() {
		close(pollsDone)
		polls.Wait()
	})
	defer stopPolls()
	for _, s := range servers {
		polls.Go(func() {
			for {
				select {
				case <-pollsDone:
					return
				case <-time.After(200 * time.Millisecond):
				}
				rmu.Lock()
				p := phase
				rmu.Unlock()
				a := readyz(s.url)
				if strings.HasPrefix(a, "error") {
					a = "error"
				}
				rmu.Lock()
				if phase != p { // asked in one phase, answered in the next
					a = a + " (answered in " + phase + ")"
				}
				readiness[p][a]++
				rmu.Unlock()
			}
		})
	}

	progress("before the faults", 40, 15*time.Second)
	cuts := 0
	for range 3 {
		setPhase("cut")
		cuts += proxy.Cut()
		progress("after a cut", 15, 10*time.Second)
	}
	setPhase("latency")
	proxy.Latency(150 * time.Millisecond)
	time.Sleep(2 * time.Second)
	setPhase("blackhole")
	proxy.Blackhole()
	time.Sleep(3 * time.Second)
	setPhase("refuse")
	proxy.Refuse()
	cuts += proxy.Cut()
	time.Sleep(2 * time.Second)
	setPhase("recovery")
	proxy.PassThrough()
	healed := time.Now()
	aHealed := acknowledged()

	// latch recovers by itself: both servers ready again, submits
	// acknowledged again.
	for i, s := range servers {
		for readyz(s.url) != "200" {
			if time.Since(healed) > 15*time.Second {
				t.Fatalf("server %d: /readyz not 200 within 15s of the faults' end (it answers %s)", i, readyz(s.url))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	ready := time.Since(healed)
	progress("after the faults", 40, 15*time.Second)
	stopSubmitters()
	stopPolls()
	for i, s := range servers {
		select {
		case <-s.done:
			t.Fatalf("server %d exited", i)
		default:
		}
	}
	t.Logf("%d connections cut; both servers ready %v after the faults; /readyz by phase: %v",
		cuts, ready.Round(time.Millisecond), readiness)

	// A submit after the faults runs, on each server.
	for i, c := range clients {
		k := fmt.Sprintf("after-%d", i)
		e, _, err := submit(c, k)
		if err != nil {
			t.Fatalf("server %d: a submit after the faults: %v", i, err)
		}
		ackd = append(ackd, acked{e.ID, k, 1, e.Deduplicated})
	}

	// Every acknowledged execution succeeds; the witness saw it, once per
	// attempt at most, and saw the attempt that succeeded.
	verify := newClient(servers[1].url, key)
	verify.hc.Timeout = 15 * time.Second
	retried, committed, afterHeal, repeated, extraAttempts, unwitnessed := 0, 0, 0, 0, 0, 0
	for n, a := range ackd {
		if a.tries > 1 {
			retried++
		}
		if a.dedup {
			committed++
		}
		if n >= aHealed {
			afterHeal++
		}
		e, err := waitTerminal(ctx, verify, a.id)
		if err != nil {
			t.Fatalf("I8: acknowledged execution %s (key %s): %v", a.id, a.key, err)
		}
		if e.Status != "succeeded" {
			t.Errorf("acknowledged execution %s (key %s) ended %s after %d attempts", a.id, a.key, e.Status, e.Attempt)
		}
		if e.Attempt > 1 {
			repeated++
			extraAttempts += e.Attempt - 1
		}
		perAttempt := map[int]int{}
		for _, h := range w.calls(a.key) {
			if h.id != a.id {
				t.Errorf("I1: key %s acknowledged as execution %s, but execution %s (attempt %d) ran for it",
					a.key, a.id, h.id, h.attempt)
			}
			perAttempt[h.attempt]++
		}
		for at, n := range perAttempt {
			if n > 1 || at < 1 || at > e.Attempt {
				t.Errorf("I2: execution %s (key %s, %d attempts): attempt %d reached the witness %d times",
					a.id, a.key, e.Attempt, at, n)
			}
		}
		if e.Status == "succeeded" && perAttempt[e.Attempt] != 1 {
			t.Errorf("execution %s (key %s) succeeded at attempt %d, which the witness saw %d times (calls by attempt: %v)",
				a.id, a.key, e.Attempt, perAttempt[e.Attempt], perAttempt)
		}
		if len(perAttempt) < e.Attempt {
			unwitnessed += e.Attempt - len(perAttempt)
		}
	}

	// One execution per dedup key, the one acknowledged: the retries with
	// the same key made no second one.
	list, err := listAll(ctx, verify, "kind=http")
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string][]string{}
	for _, x := range list {
		ids[x.DedupKey] = append(ids[x.DedupKey], x.ID)
	}
	for _, a := range ackd {
		if got := ids[a.key]; len(got) != 1 || got[0] != a.id {
			t.Errorf("I1: key %s, acknowledged as execution %s, has executions %v", a.key, a.id, got)
		}
	}
	if len(list) != len(ackd) {
		t.Errorf("%d executions for %d acknowledged keys", len(list), len(ackd))
	}

	// No quota slot is left taken.
	for {
		var ten tenant
		if _, err := verify.call(ctx, "GET", "/api/tenants/faults", nil, &ten); err != nil {
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
	// Wake-ups (LISTEN/NOTIFY, pub/sub) came back too: idle workers start
	// a submit at once rather than at their next poll, as in
	// testStoreRestart.
	if wake := wakeLatency(ctx, t, clients, newWitness(t), "probe-after", 10); wake > 250*time.Millisecond {
		t.Errorf("after the faults a submit takes %v (median) to start on an idle cluster: wake-ups did not come back", wake)
	} else {
		t.Logf("submit-to-start of the idle cluster after the faults: median %v", wake)
	}
	for i, s := range servers {
		if logs := s.cmd.Stdout.(*lockedWriter).String(); strings.Contains(logs, "DATA RACE") || strings.Contains(logs, "panic:") {
			t.Errorf("server %d logged a data race or a panic", i)
		}
	}

	codes := make([]string, 0, len(failures))
	nfail := 0
	for c, n := range failures {
		codes = append(codes, fmt.Sprintf("%s×%d", c, n))
		nfail += n
	}
	sort.Strings(codes)
	t.Logf("%d keys acknowledged (%d after the faults ended), %d witness calls; %d submit tries failed (status %v; 0 is no answer; last: %v)",
		len(ackd), afterHeal, w.total(), nfail, codes, lastErr)
	t.Logf("%d keys needed more than one try, %d of them answered as duplicates (an unanswered try had committed); "+
		"%d executions took more than one attempt (%d extra attempts, %d of them never reached the witness)",
		retried, committed, repeated, extraAttempts, unwitnessed)
}
