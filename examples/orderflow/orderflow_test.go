package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch"
	"github.com/latch-run/latch/internal/testdb"
)

// The demo runs the whole order on every backend: charged once, its three
// parcels shipped in parallel by child executions that all succeeded
// before the order went on, each parcel shipped once.

func TestDemoSQLite(t *testing.T) {
	t.Parallel()
	testDemo(t, "sqlite:"+filepath.Join(t.TempDir(), "latch.db"))
}

func TestDemoPostgres(t *testing.T) {
	t.Parallel()
	url := testdb.PostgresSchema(t, "latch_orderflow_", "the orderflow example")
	if _, err := latch.Migrate(t.Context(), url, "up"); err != nil {
		t.Fatal(err)
	}
	testDemo(t, url)
}

func TestDemoRedis(t *testing.T) {
	t.Parallel()
	testDemo(t, testdb.Redis(t, "latch_orderflow_", "the orderflow example").StoreURL(t))
}

func TestDemoRedisCluster(t *testing.T) {
	t.Parallel()
	testDemo(t, testdb.RedisCluster(t, "latch_orderflow_", "the orderflow example").StoreURL(t))
}

func testDemo(t *testing.T, url string) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := demo(ctx, []string{"-store", url}, &out); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "services called: reserve 1, charge 1, ship 3, webhook 1") {
		t.Fatalf("each service once, each parcel once:\n%s", out.String())
	}

	c, err := latch.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	page, err := c.List(ctx, tenant, latch.ListOptions{Kind: "order"})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("orders: %v, %v", page, err)
	}
	order := page.Items[0]
	var result struct {
		Outcome   string            `json:"outcome"`
		Shipments []json.RawMessage `json:"shipments"`
	}
	if err := order.DecodeResult(&result); err != nil || order.Status != latch.StatusSucceeded ||
		result.Outcome != "delivered" || len(result.Shipments) != 3 {
		t.Fatalf("order %s %s: %+v, %v", order.Status, order.Result, result, err)
	}
	steps, err := c.Steps(ctx, tenant, order.ID)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range steps {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, ","); got != "reserve stock,charge card,approval,ship,ship/wait,delivery window,send webhook" {
		t.Fatalf("journal %s", got)
	}
	kids, err := c.Children(ctx, tenant, order.ID)
	if err != nil || len(kids) != 3 {
		t.Fatalf("children %v, %v", kids, err)
	}
	for i, k := range kids {
		var p Parcel
		if err := k.DecodePayload(&p); err != nil || p.ID != parcelIDs("o-1", 3)[i] {
			t.Errorf("child %d: payload %s, want parcel %d in item order", i, k.Payload, i+1)
		}
		if k.Kind != "parcel" || k.Status != latch.StatusSucceeded || k.ParentID != order.ID || k.ParentStep != "ship" {
			t.Errorf("child %d: %s %s, parent %s step %s", i, k.Kind, k.Status, k.ParentID, k.ParentStep)
		}
		// The order's shipments are its children's results, in order.
		if string(result.Shipments[i]) != string(k.Result) {
			t.Errorf("shipment %d: %s, want child %s's result %s", i, result.Shipments[i], k.ID, k.Result)
		}
	}
}
