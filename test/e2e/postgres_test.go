package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// postgresStore creates a schema of its own in the database named by
// LATCH_TEST_POSTGRES_URL, migrates it with `latch migrate up` as an
// operator would, drops it when t ends, and returns its store URL. Without
// the variable the test is skipped, saying so.
func postgresStore(t *testing.T) string {
	t.Helper()
	base := os.Getenv("LATCH_TEST_POSTGRES_URL")
	if base == "" && os.Getenv("LATCH_REQUIRE_BACKENDS") != "" {
		t.Fatal("LATCH_REQUIRE_BACKENDS is set but LATCH_TEST_POSTGRES_URL is not")
	}
	if base == "" {
		t.Skip("SKIP: multi-server PostgreSQL test not run: set LATCH_TEST_POSTGRES_URL")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to LATCH_TEST_POSTGRES_URL: %v", err)
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	schema := "latch_e2e_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	q.Set("pool_max_conns", "10")
	u.RawQuery = q.Encode()
	store := u.String()

	// A server refuses the empty schema, naming the fix.
	out, err := exec.Command(binary, "serve", "--addr", "127.0.0.1:0", "--store", store).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "latch migrate up") {
		t.Fatalf("latch serve on an unmigrated schema: %v\n%s", err, out)
	}
	if out, err := exec.Command(binary, "migrate", "up", "--store", store).CombinedOutput(); err != nil {
		t.Fatalf("latch migrate up: %v\n%s", err, out)
	}
	return store
}

// Three `latch serve` processes on one PostgreSQL schema: same-key submits
// spread over all three give one execution that runs once; a storm of work
// while one server is SIGKILLed and later restarted loses nothing that was
// acknowledged, runs no attempt twice, rescues the dead server's leases and
// leaves inflight at 0.
func TestPostgresThreeServers(t *testing.T) {
	t.Parallel()
	store := postgresStore(t)
	w := newWitness(t)
	var servers [3]*server
	for i := range servers {
		servers[i] = startServer(t, serverOpts{store: store, workers: 4})
	}
	key := createTenant(t, servers[0].url, "multi")
	clients := make([]*client, len(servers))
	for i, s := range servers {
		clients[i] = newClient(s.url, key)
		clients[i].hc.Timeout = 10 * time.Second
	}
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
						if c == clients[0] {
							c = clients[1+cl%2] // its server was killed: go elsewhere
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
		clients[0] = newClient(servers[0].url, key)
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
