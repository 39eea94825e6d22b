package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/latch-run/latch/api"
	"github.com/latch-run/latch/auth"
	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/sqlite"
)

// TestEventCommands against a real server: subscriptions put (create,
// then replace), get, ls and rm; publish starts the subscription's
// execution and resumes a flow waiting for the event's key; a repeat of
// its idempotency key answers the first answer; bad input is refused.
func TestEventCommands(t *testing.T) {
	srv, key := tenantServer(t)

	code, out, errOut := cli(t, "subscriptions", "put", "on-paid", "--event", "order.paid", "--kind", "ship", "--queue", "jobs", "--timeout", "1m", "-o", "json")
	var sub struct {
		Name           string `json:"name"`
		Event          string `json:"event"`
		TimeoutSeconds int    `json:"timeout_seconds"`
		Enabled        bool   `json:"enabled"`
	}
	if err := json.Unmarshal([]byte(out), &sub); code != 0 || err != nil || sub.Event != "order.paid" || sub.TimeoutSeconds != 60 || !sub.Enabled {
		t.Fatalf("put: %d %s %s", code, out, errOut)
	}
	if code, out, errOut = cli(t, "subscriptions", "put", "off", "--event", "order.paid", "--kind", "x", "--disabled", "-o", "json"); code != 0 || !strings.Contains(out, `"enabled": false`) {
		t.Fatalf("put --disabled: %d %s %s", code, out, errOut)
	}
	code, out, _ = cli(t, "subscriptions", "ls", "-o", "table")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "NAME") ||
		!strings.HasPrefix(lines[1], "off") || !strings.HasPrefix(lines[2], "on-paid") || !strings.Contains(lines[2], "jobs") {
		t.Fatalf("ls: %d\n%s", code, out)
	}
	if code, out, _ = cli(t, "subscriptions", "get", "on-paid", "-o", "json"); code != 0 || !strings.Contains(out, `"kind": "ship"`) {
		t.Fatalf("get: %d %s", code, out)
	}

	// A flow waiting for order.paid with key o-1.
	var x struct {
		ID string `json:"execution_id"`
	}
	call(t, srv.URL, "POST", "/api/executions", key, `{"kind":"order","queue":"flows"}`, 201, &x)
	var claim struct {
		Leases []struct {
			Token string `json:"lease_token"`
		} `json:"leases"`
	}
	call(t, srv.URL, "POST", "/api/workers/claim", key, `{"worker_id":"w","queues":["flows"]}`, 200, &claim)
	call(t, srv.URL, "POST", "/api/executions/"+x.ID+"/suspend", key,
		`{"lease_token":"`+claim.Leases[0].Token+`","step":"paid","event":"order.paid","key":"o-1"}`, 200, nil)

	code, out, errOut = cli(t, "publish", "order.paid", "--data", `{"amount":12}`, "--correlation-key", "o-1", "--idempotency-key", "pay-o-1")
	var pub struct {
		EventID string `json:"event_id"`
		Resumed int    `json:"resumed"`
		Started []struct {
			Subscription string `json:"subscription"`
			ExecutionID  string `json:"execution_id"`
		} `json:"started"`
	}
	if err := json.Unmarshal([]byte(out), &pub); code != 0 || err != nil || pub.Resumed != 1 || len(pub.Started) != 1 ||
		pub.Started[0].Subscription != "on-paid" || pub.Started[0].ExecutionID == "" {
		t.Fatalf("publish: %d %s %s", code, out, errOut)
	}
	code, again, _ := cli(t, "publish", "order.paid", "--data", `{"amount":12}`, "--correlation-key", "o-1", "--idempotency-key", "pay-o-1")
	if code != 0 || again != out {
		t.Fatalf("repeat: %d %s, want %s", code, again, out)
	}
	var e struct {
		Status string `json:"status"`
	}
	call(t, srv.URL, "GET", "/api/executions/"+x.ID, key, ``, 200, &e)
	if e.Status != "queued" {
		t.Fatalf("the waiting flow is %s", e.Status)
	}

	if code, _, errOut = cli(t, "publish", "order.paid", "--data", `{bad`); code != exitUsage || !strings.Contains(errOut, "--data is not valid JSON") {
		t.Fatalf("bad data: %d %s", code, errOut)
	}
	if code, _, errOut = cli(t, "publish", "has space"); code == 0 || !strings.Contains(errOut, "name") {
		t.Fatalf("bad name: %d %s", code, errOut)
	}
	if code, _, errOut = cli(t, "subscriptions", "put", "x", "--kind", "k"); code != exitUsage || !strings.Contains(errOut, "--event") {
		t.Fatalf("put without --event: %d %s", code, errOut)
	}
	if code, out, _ = cli(t, "subscriptions", "rm", "on-paid"); code != 0 || out != "subscription on-paid deleted\n" {
		t.Fatalf("rm: %d %s", code, out)
	}
	if code, _, errOut = cli(t, "subscriptions", "get", "on-paid"); code == 0 || !strings.Contains(errOut, "not found") {
		t.Fatalf("get after rm: %d %s", code, errOut)
	}
}

// TestSubscriptionsListEveryPage: ls for the admin shows every tenant's
// subscriptions, every page of them (more than the server's page of 100),
// in tenant then name order, with no cursor left to follow.
func TestSubscriptionsListEveryPage(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var want []string
	for tenant, n := range map[string]int{"acme": store.MaxSubscriptions, "bolt": 5} {
		if _, err := st.CreateTenant(ctx, &store.CreateTenantParams{Name: tenant}); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			name := fmt.Sprintf("s%03d", i)
			sub := store.Subscription{Tenant: tenant, Name: name, Event: "e", Kind: "k", Enabled: true}
			if _, err := st.PutSubscription(ctx, &store.PutSubscriptionParams{Subscription: sub}); err != nil {
				t.Fatal(err)
			}
			want = append(want, tenant+"/"+name)
		}
	}
	slices.Sort(want)
	srv := httptest.NewServer(api.New(api.Config{Store: st, AdminKeyHash: auth.HashKey(testAdminKey)}).Handler())
	t.Cleanup(srv.Close)
	t.Setenv("LATCH_URL", srv.URL)
	t.Setenv("LATCH_KEY", testAdminKey)

	code, out, errOut := cli(t, "subscriptions", "ls", "-o", "json")
	var list struct {
		Items []struct {
			Tenant string `json:"tenant"`
			Name   string `json:"name"`
		} `json:"items"`
		NextCursor *string `json:"next_cursor"`
	}
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil {
		t.Fatalf("ls -o json: %d %v %s", code, err, errOut)
	}
	var got []string
	for _, s := range list.Items {
		got = append(got, s.Tenant+"/"+s.Name)
	}
	if !slices.Equal(got, want) || list.NextCursor != nil {
		t.Fatalf("ls -o json: %d subscriptions (%v), want %d; next_cursor %v", len(got), got, len(want), list.NextCursor)
	}
	code, out, _ = cli(t, "subscriptions", "ls", "-o", "table")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(lines) != len(want)+1 || strings.Contains(out, "more:") {
		t.Fatalf("ls -o table: %d, %d lines", code, len(lines))
	}
}
