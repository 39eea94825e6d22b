package console_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// subscribe puts subscription name of tenant on event, starting kind in
// queue.
func (e *env) subscribe(tenant, name, event, kind, queue string, enabled bool) {
	e.t.Helper()
	if _, err := e.store.PutSubscription(context.Background(), &store.PutSubscriptionParams{Subscription: store.Subscription{
		Tenant: tenant, Name: name, Event: event, Kind: kind, Queue: queue, Enabled: enabled}, Now: time.Now()}); err != nil {
		e.t.Fatalf("put subscription %s/%s: %v", tenant, name, err)
	}
}

// rows are the subscription rows of a subscriptions page, each as its
// cells' text joined by "|".
func subscriptionRows(body string) []string {
	var out []string
	t := block(body, `<table class="subscriptions">`)
	for _, tr := range strings.Split(t, "<tr")[2:] {
		if strings.Contains(tr, `class="empty"`) {
			continue
		}
		var cells []string
		for _, td := range strings.Split(tr, "<td")[1:] {
			td = td[strings.Index(td, ">")+1:]
			cells = append(cells, td[:strings.Index(td, "</td>")])
		}
		out = append(out, strings.Join(cells, "|"))
	}
	return out
}

// TestSubscriptionsPage: a tenant's page lists its own subscriptions in
// name order (event, kind, queue, enabled), none of another tenant's; the
// admin's lists every tenant's, or one tenant's with the filter.
func TestSubscriptionsPage(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	e.tenant("b")
	e.subscribe("a", "ship-paid", "order-paid", "ship-order", "orders", true)
	e.subscribe("a", "audit-paid", "order-paid", "audit", "", false)
	e.subscribe("b", "b-secret-sub", "b-secret-event", "echo", "", true)

	b := e.browser()
	b.login(key)
	p := b.do("GET", "/subscriptions", nil)
	want := []string{"audit-paid|order-paid|audit|default|no", "ship-paid|order-paid|ship-order|orders|yes"}
	if got := subscriptionRows(p.body); p.status != http.StatusOK || len(got) != 2 ||
		!strings.HasPrefix(got[0], want[0]) || !strings.HasPrefix(got[1], want[1]) {
		t.Errorf("tenant a's subscriptions: %d %q, want %q", p.status, got, want)
	}
	if strings.Contains(p.body, "b-secret") {
		t.Error("tenant a's page shows tenant b's subscription")
	}
	if p := b.do("GET", "/subscriptions?tenant=b", nil); strings.Contains(p.body, "b-secret") {
		t.Error("tenant a's page filtered on b shows tenant b's subscription")
	}

	admin := e.browser()
	admin.login(e.admin)
	got := subscriptionRows(admin.do("GET", "/subscriptions", nil).body)
	if len(got) != 3 || !strings.HasPrefix(got[0], "a|audit-paid|") || !strings.HasPrefix(got[2], "b|b-secret-sub|b-secret-event|echo|default|yes") {
		t.Errorf("the admin's subscriptions: %q", got)
	}
	if got := subscriptionRows(admin.do("GET", "/subscriptions?tenant=b", nil).body); len(got) != 1 || !strings.HasPrefix(got[0], "b|b-secret-sub|") {
		t.Errorf("the admin's subscriptions of b: %q", got)
	}
}

// TestSubscriptionsPageByPage: the admin's list of every tenant's
// subscriptions comes a page at a time, each with a link to the next, in
// tenant then name order, each subscription once; a tenant's every
// subscription fits on its page, and a tenant key reads its own whatever
// the query names.
func TestSubscriptionsPageByPage(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	e.tenant("b")
	var want []string
	for tenant, prefix := range map[string]string{"a": "s", "b": "t"} {
		for i := range store.MaxSubscriptions {
			name := fmt.Sprintf("%s%03d", prefix, i)
			e.subscribe(tenant, name, "ev", "echo", "", true)
			want = append(want, tenant+"|"+name)
		}
	}
	slices.Sort(want)
	more := regexp.MustCompile(`<a href="([^"]+)">More subscriptions</a>`)
	// list reads a page: each row's tenant and name (the admin's), or
	// name.
	list := func(b *browser, admin bool, path string) (got []string, next string) {
		t.Helper()
		p := b.do("GET", path, nil)
		if p.status != http.StatusOK {
			t.Fatalf("GET %s: %d", path, p.status)
		}
		n := 1
		if admin {
			n = 2
		}
		for _, row := range subscriptionRows(p.body) {
			got = append(got, strings.Join(strings.Split(row, "|")[:n], "|"))
		}
		if m := more.FindStringSubmatch(p.body); m != nil {
			next = strings.ReplaceAll(m[1], "&amp;", "&")
		}
		return got, next
	}
	admin := e.browser()
	admin.login(e.admin)
	var got []string
	pages := 0
	for path := "/subscriptions"; path != ""; pages++ {
		if pages > 3 {
			t.Fatalf("still paging after %d pages", pages)
		}
		var page []string
		page, path = list(admin, true, path)
		if len(page) > store.MaxSubscriptions {
			t.Errorf("a page of %d rows", len(page))
		}
		got = append(got, page...)
	}
	if !slices.Equal(got, want) || pages != 2 {
		t.Errorf("the admin's pages: %d rows in %d pages, want %d in 2", len(got), pages, len(want))
	}
	// One tenant's, filtered, fit on one page.
	if got, next := list(admin, true, "/subscriptions?tenant=b"); len(got) != store.MaxSubscriptions || got[0] != "b|t000" || next != "" {
		t.Errorf("the admin's page of b: %d rows from %v, next %q", len(got), got[:1], next)
	}
	b := e.browser()
	b.login(key)
	for path, first := range map[string]string{
		"/subscriptions":                           "s000",
		"/subscriptions?tenant=b":                  "s000",
		"/subscriptions?after_tenant=b&after=s000": "s001",
		"/subscriptions?after_tenant=b&after=t000": "",
	} {
		got, next := list(b, false, path)
		for _, n := range got {
			if !strings.HasPrefix(n, "s") {
				t.Errorf("GET %s as tenant a shows %s", path, n)
				break
			}
		}
		if first != "" && (len(got) == 0 || got[0] != first) || first == "" && len(got) != 0 || next != "" {
			t.Errorf("GET %s as tenant a: %d rows from %v, next %q; want a's from %q", path, len(got), got[:min(len(got), 1)], next, first)
		}
	}
}

// TestExecutionWaitingForEvent: a flow suspended waiting for an event
// says so in words, in its settings and in Why it waits, and offers no
// signal form (a signal of that name would not end it); the event's
// publish ends the wait and a subscription on it starts an execution.
func TestExecutionWaitingForEvent(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	e.subscribe("a", "ship-paid", "order-paid", "ship-order", "orders", true)
	x := e.submit("a", store.Submission{Kind: "checkout"})
	l := e.claimID("a", x.ID)
	ctx := context.Background()
	if _, err := e.store.Suspend(ctx, &store.SuspendParams{ExecutionID: x.ID, Token: l.Token, Step: "paid",
		Event: "order-paid", Timeout: time.Hour, Now: time.Now()}); err != nil {
		t.Fatalf("suspend for the event: %v", err)
	}
	if got := e.get(x.ID); got.Status != store.StatusSuspended {
		t.Fatalf("after the suspend for an event: %s", got.Status)
	}
	b := e.browser()
	b.login(key)
	p := b.do("GET", "/executions/"+x.ID, nil)
	if !strings.Contains(p.body, `<dd class="waits-for">Waiting for event order-paid until `) {
		t.Errorf("the page does not say it waits for the event:\n%s", p.body)
	}
	if why := block(p.body, `<section class="gates">`); !strings.Contains(why, "Waiting for event order-paid until ") ||
		strings.Contains(why, "signal") {
		t.Errorf("Why it waits:\n%s", why)
	}
	if strings.Contains(p.body, `class="signal"`) {
		t.Error("a wait for an event offers the signal form")
	}
	res, err := e.store.Publish(ctx, &store.PublishParams{Tenant: "a", Name: "order-paid", Data: []byte(`{"order":7}`),
		Now: time.Now()})
	if err != nil || res.Resumed != 1 || len(res.Started) != 1 {
		t.Fatalf("publish: %v %+v", err, res)
	}
	p = b.do("GET", "/executions/"+x.ID, nil)
	if strings.Contains(p.body, "Waiting for event") || !strings.Contains(p.body, `<span class="status queued">`) {
		t.Errorf("after the publish the page still waits:\n%s", p.body)
	}
}
