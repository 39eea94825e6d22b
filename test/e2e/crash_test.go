package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/latch-run/latch/internal/testdb"
)

// A `latch serve` SIGKILLed during a storm of submits loses nothing it
// acknowledged: after a restart every acknowledged execution is present and
// runs, no attempt runs twice, and the tenant's inflight returns to 0.
func TestSIGKILLDuringSubmitStorm(t *testing.T) {
	t.Parallel()
	w := newWitness(t)
	db := "sqlite:" + testdb.SQLite(t)
	srv := startServer(t, serverOpts{store: db, workers: 8})
	key := createTenant(t, srv.url, "storm")
	c := newClient(srv.url, key)
	c.hc.Timeout = 5 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	type acked struct{ id, key string }
	var mu sync.Mutex
	var ackd []acked
	var wg sync.WaitGroup
	stopSubmitting := make(chan struct{})
	for cl := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stopSubmitting:
					return
				default:
				}
				k := fmt.Sprintf("storm-%d-%d", cl, i)
				var e execution
				code, err := c.call(ctx, "POST", "/api/executions", map[string]any{
					"kind": "http", "dedup_key": k,
					"payload": map[string]any{"url": w.url + "/hit/" + k, "method": "POST"},
				}, &e)
				if err != nil {
					return // the server is gone
				}
				if code == 201 || code == 200 {
					mu.Lock()
					ackd = append(ackd, acked{e.ID, k})
					mu.Unlock()
				}
			}
		}()
	}
	// Let the storm run, with work in every state, then kill the server.
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(ackd)
		mu.Unlock()
		if n >= 300 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	srv.kill()
	close(stopSubmitting)
	wg.Wait()
	if len(ackd) == 0 {
		t.Fatal("no submit was acknowledged before the kill")
	}
	t.Logf("%d submits acknowledged before SIGKILL", len(ackd))

	srv2 := startServer(t, serverOpts{store: db, workers: 8})
	c2 := newClient(srv2.url, key)
	for _, a := range ackd {
		e, err := waitTerminal(ctx, c2, a.id)
		if err != nil {
			t.Fatalf("acknowledged execution %s (key %s): %v", a.id, a.key, err)
		}
		if e.Status != "succeeded" {
			t.Errorf("acknowledged execution %s ended %s", a.id, e.Status)
		}
		hits := w.count("/hit/" + a.key)
		if hits < 1 || hits > e.Attempt {
			t.Errorf("execution %s ran %d times in %d attempts", a.id, hits, e.Attempt)
		}
	}
	// Executions committed but not acknowledged (the answer was cut by the
	// kill) run too; once all have, no quota slot is left taken.
	for {
		var ten tenant
		if _, err := c2.call(ctx, "GET", "/api/tenants/storm", nil, &ten); err != nil {
			t.Fatal(err)
		}
		if ten.Inflight == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("tenant inflight stuck at %d", ten.Inflight)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
