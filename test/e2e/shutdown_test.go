package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/latch-run/latch/internal/testdb"
)

// SIGTERM stops a server gracefully: running work may finish within the
// grace period; work still running after it is handed back, queued, and
// runs on the next server.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	db := "sqlite:" + testdb.SQLite(t)
	// One tenant's two jobs: its share is every slot, so both start.
	srv := startServer(t, serverOpts{store: db, workers: 2, env: []string{"LATCH_TENANT_SLOTS=2"}})
	key := createTenant(t, srv.url, "calm")
	c := newClient(srv.url, key)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	submit := func(seconds float64) string {
		var e execution
		if _, err := c.call(ctx, "POST", "/api/executions", map[string]any{
			"kind": "sleep", "payload": map[string]any{"seconds": seconds}}, &e); err != nil {
			t.Fatal(err)
		}
		return e.ID
	}
	short, long := submit(0.5), submit(30)
	// Both must be running before the signal.
	for _, id := range []string{short, long} {
		for {
			var e execution
			if _, err := c.call(ctx, "GET", "/api/executions/"+id, nil, &e); err != nil {
				t.Fatal(err)
			}
			if e.Status == "running" || e.Status == "succeeded" {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	srv.stop(t) // SIGTERM; the grace period is 2s

	srv2 := startServer(t, serverOpts{store: db, workers: 0})
	c2 := newClient(srv2.url, key)
	var e execution
	if _, err := c2.call(ctx, "GET", "/api/executions/"+short, nil, &e); err != nil {
		t.Fatal(err)
	}
	if e.Status != "succeeded" {
		t.Errorf("the short job ended %s at shutdown, want succeeded within the grace period", e.Status)
	}
	if _, err := c2.call(ctx, "GET", "/api/executions/"+long, nil, &e); err != nil {
		t.Fatal(err)
	}
	if e.Status != "queued" || e.Attempt != 1 {
		t.Errorf("the long job is %s with attempt %d after shutdown, want queued with its one start counted (1)",
			e.Status, e.Attempt)
	}
	var ten tenant
	if _, err := c2.call(ctx, "GET", "/api/tenants/calm", nil, &ten); err != nil {
		t.Fatal(err)
	}
	if ten.Inflight != 1 {
		t.Errorf("inflight = %d, want 1 (the handed-back job)", ten.Inflight)
	}
}
