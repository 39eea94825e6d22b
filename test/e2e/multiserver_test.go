package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// testThreeServers is the multi-server scenario every shared backend runs
// (postgres_test.go, redis_test.go): three `latch serve` processes on one
// store. Same-key submits spread over all three give one execution that
// runs once; a storm of work while one server is SIGKILLed and later
// restarted loses nothing that was acknowledged, runs no attempt twice,
// rescues the dead server's leases and leaves inflight at 0.
func testThreeServers(t *testing.T, store string) {
	w := newWitness(t)
	servers, clients := startCluster(t, store, "multi")
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()

	t.Run("SameKeyAcrossServers", func(t *testing.T) {
		const n = 48
		ids := make([]string, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		gate := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-gate
				var e execution
				_, errs[i] = clients[i%len(clients)].call(ctx, "POST", "/api/executions", map[string]any{
					"kind": "http", "dedup_key": "one-key",
					"payload": map[string]any{"url": w.url + "/hit/one-key", "method": "POST"},
				}, &e)
				ids[i] = e.ID
			})
		}
		close(gate)
		wg.Wait()
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("submit %d: %v", i, errs[i])
			}
			if ids[i] != ids[0] {
				t.Fatalf("I1: submits of one key got %s and %s", ids[0], ids[i])
			}
		}
		e, err := waitTerminal(ctx, clients[1], ids[0])
		if err != nil || e.Status != "succeeded" {
			t.Fatalf("the execution: %+v, %v", e, err)
		}
		if hits := w.count("/hit/one-key"); hits != e.Attempt || hits != 1 {
			t.Errorf("the execution ran %d times in %d attempts, want once", hits, e.Attempt)
		}
	})

	t.Run("StormWithAKill", func(t *testing.T) {
		type acked struct{ id, key string }
		var mu sync.Mutex
		var ackd []acked
		var wg sync.WaitGroup
		stop := make(chan struct{})
		// The submitters read only these: clients[0] is replaced below
		// while they run.
		killed, survivors := clients[0], [2]*client{clients[1], clients[2]}
		for cl := range 12 {
			wg.Go(func() {
				c := clients[cl%len(clients)]
				for i := 0; ; i++ {
					select {
					case <-stop:
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
						if c == killed {
							c = survivors[cl%2] // its server was killed: go elsewhere
							continue
						}
						return
					}
					if code == 201 || code == 200 {
						mu.Lock()
						ackd = append(ackd, acked{e.ID, k})
						mu.Unlock()
					}
				}
			})
		}
		acknowledged := func() int {
			mu.Lock()
			defer mu.Unlock()
			return len(ackd)
		}
		for deadline := time.Now().Add(20 * time.Second); acknowledged() < 300 && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
		servers[0].kill() // with leases held and submits in flight
		for deadline := time.Now().Add(20 * time.Second); acknowledged() < 600 && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
		servers[0] = startServer(t, serverOpts{store: store, workers: 4})
		clients[0] = newClient(servers[0].url, clients[1].key)
		time.Sleep(500 * time.Millisecond)
		close(stop)
		wg.Wait()
		t.Logf("%d submits acknowledged across the kill", acknowledged())

		for i, a := range ackd {
			e, err := waitTerminal(ctx, clients[i%len(clients)], a.id)
			if err != nil {
				t.Fatalf("I8: acknowledged execution %s (key %s): %v", a.id, a.key, err)
			}
			if e.Status != "succeeded" {
				t.Errorf("acknowledged execution %s ended %s", a.id, e.Status)
			}
			if hits := w.count("/hit/" + a.key); hits < 1 || hits > e.Attempt {
				t.Errorf("I2: execution %s ran %d times in %d attempts", a.id, hits, e.Attempt)
			}
		}
		for {
			var ten tenant
			if _, err := clients[2].call(ctx, "GET", "/api/tenants/multi", nil, &ten); err != nil {
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
	})
}
