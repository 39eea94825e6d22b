package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch"
	"github.com/latch-run/latch/internal/testdb"
)

// The demo on every backend: a retried publish starts one fulfilment
// through the subscription, whose payload is the event; its shipment
// resumes o-1's ticket, by correlation key, and leaves o-2's waiting.

func TestDemoSQLite(t *testing.T) {
	t.Parallel()
	testDemo(t, "sqlite:"+filepath.Join(t.TempDir(), "latch.db"))
}

func TestDemoPostgres(t *testing.T) {
	t.Parallel()
	url := testdb.PostgresSchema(t, "latch_eventflow_", "the eventflow example")
	if _, err := latch.Migrate(t.Context(), url, "up"); err != nil {
		t.Fatal(err)
	}
	testDemo(t, url)
}

func TestDemoRedis(t *testing.T) {
	t.Parallel()
	testDemo(t, testdb.Redis(t, "latch_eventflow_", "the eventflow example").StoreURL(t))
}

func TestDemoRedisCluster(t *testing.T) {
	t.Parallel()
	testDemo(t, testdb.RedisCluster(t, "latch_eventflow_", "the eventflow example").StoreURL(t))
}

func testDemo(t *testing.T, url string) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := demo(ctx, []string{"-store", url}, &out); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		`ticket of ann about o-1: suspended, waiting for "event:order.shipped"`,
		"(try 1): event ", "replayed false", "(try 2): event ", "replayed true",
		"ticket o-1: succeeded - ann: order o-1 shipped, tracking TRK-o-1",
		`ticket o-2: still suspended, waiting for "event:order.shipped"`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("the demo did not say %q:\n%s", want, out.String())
		}
	}

	c, err := latch.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	page, err := c.List(ctx, tenant, latch.ListOptions{Kind: "fulfil"})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("fulfilments %v, %v: want one for the retried publish", page, err)
	}
	f := page.Items[0]
	placed, err := latch.DecodeEvent(f.Payload)
	if err != nil || placed.Name != "order.placed" || placed.Key != "o-1" || f.Status != latch.StatusSucceeded {
		t.Fatalf("fulfilment %s, payload %s: %+v %v", f.Status, f.Payload, placed, err)
	}
	tickets, err := c.List(ctx, tenant, latch.ListOptions{Kind: "ticket"})
	if err != nil || len(tickets.Items) != 2 {
		t.Fatalf("tickets %v, %v", tickets, err)
	}
	for _, x := range tickets.Items {
		var tk Ticket
		if err := x.DecodePayload(&tk); err != nil {
			t.Fatal(err)
		}
		steps, err := c.Steps(ctx, tenant, x.ID)
		if err != nil {
			t.Fatal(err)
		}
		switch tk.Order {
		case "o-1":
			if len(steps) != 1 || steps[0].Name != "shipped" {
				t.Fatalf("o-1's journal %+v", steps)
			}
			ev, err := latch.DecodeEvent(steps[0].Result)
			if err != nil || ev.Name != "order.shipped" || ev.Key != "o-1" {
				t.Fatalf("o-1's wait recorded %s: %v", steps[0].Result, err)
			}
		case "o-2":
			if x.Status != latch.StatusSuspended || len(steps) != 0 {
				t.Fatalf("o-2's ticket %s, journal %+v: the shipment of another order resumed it", x.Status, steps)
			}
		}
	}
}
