package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/latch-run/latch/internal/testdb"
)

// The first incident latch was built for (docs/design.md, "The one rule"):
// concurrent submits with one dedup key must get one execution id, and the
// job must run exactly once.
func TestConcurrentSameKeySubmitsRunOnce(t *testing.T) {
	t.Parallel()
	w := newWitness(t)
	srv := startServer(t, serverOpts{store: "sqlite:" + testdb.SQLite(t), workers: 4})
	c := newClient(srv.url, createTenant(t, srv.url, "acme"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	const n = 64
	body := map[string]any{
		"kind":      "http",
		"dedup_key": "order-123",
		"payload":   map[string]any{"url": w.url + "/hit/order-123", "method": "POST"},
	}
	type answer struct {
		code int
		e    execution
		err  error
	}
	answers := make([]answer, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			answers[i].code, answers[i].err = c.call(ctx, "POST", "/api/executions", body, &answers[i].e)
		}()
	}
	close(start)
	wg.Wait()

	created := 0
	id := answers[0].e.ID
	for i, a := range answers {
		if a.err != nil {
			t.Fatalf("submit %d: %v", i, a.err)
		}
		if a.e.ID == "" || a.e.ID != id {
			t.Fatalf("submit %d got id %q, submit 0 got %q", i, a.e.ID, id)
		}
		switch a.code {
		case 201:
			created++
			if a.e.Deduplicated {
				t.Errorf("201 answer marked deduplicated")
			}
		case 200:
			if !a.e.Deduplicated {
				t.Errorf("200 answer not marked deduplicated")
			}
		default:
			t.Errorf("submit %d: status %d", i, a.code)
		}
	}
	if created != 1 {
		t.Fatalf("%d submits answered 201, want exactly 1", created)
	}

	e, err := waitTerminal(ctx, c, id)
	if err != nil {
		t.Fatal(err)
	}
	if e.Status != "succeeded" || e.Attempt != 1 {
		t.Fatalf("execution ended %s after %d attempts, want succeeded after 1", e.Status, e.Attempt)
	}
	var page struct {
		Items []execution `json:"items"`
	}
	if _, err := c.call(ctx, "GET", "/api/executions?dedup_key=order-123", nil, &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 {
		t.Fatalf("%d executions carry the dedup key, want 1", len(page.Items))
	}
	if hits := w.count("/hit/order-123"); hits != 1 {
		t.Fatalf("the job ran %d times, want exactly once", hits)
	}
	var ten tenant
	if _, err := c.call(ctx, "GET", "/api/tenants/acme", nil, &ten); err != nil {
		t.Fatal(err)
	}
	if ten.Inflight != 0 {
		t.Fatalf("tenant inflight = %d after the run, want 0", ten.Inflight)
	}
}
