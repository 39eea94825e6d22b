package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// observed gives the store what the overview reads: executions in two
// queues of tenant a and one of b, a running one with a concurrency key
// each, rate limits, and a server's report with a worker of each tenant,
// an in-process worker and the last minutes' starts and failures.
func (e *env) observed() {
	e.t.Helper()
	ctx := context.Background()
	now := time.Now()
	e.submit("a", store.Submission{Queue: "pay", ConcurrencyKey: "acct-a", ConcurrencyLimit: 3})
	e.claim("a", "worker-a1")
	e.submit("a", store.Submission{Queue: "emails"})
	e.submit("a", store.Submission{Queue: "emails"})
	e.submit("a", store.Submission{Queue: "reports", RunAt: now.Add(time.Hour)})
	e.submit("b", store.Submission{Queue: "secret-b-queue", ConcurrencyKey: "acct-b", ConcurrencyLimit: 2})
	e.claim("b", "worker-b1")
	e.submit("b", store.Submission{Queue: "secret-b-queue"})
	for _, rl := range []store.RateLimit{{Tenant: "a", Key: "smtp-a", Rate: 10, Per: time.Minute, Burst: 5},
		{Tenant: "b", Key: "smtp-b", Rate: 1, Per: time.Second, Burst: 1}} {
		if _, err := e.store.PutRateLimit(ctx, &store.PutRateLimitParams{Limit: rl, Now: now}); err != nil {
			e.t.Fatal(err)
		}
	}
	m := store.MinuteOf(now)
	if err := e.store.ReportServer(ctx, &store.ServerReport{ID: "host-1:42:abcd", Host: "host-1", Version: "v9.9.9",
		StartedAt: now.Add(-time.Hour), Now: now,
		Workers: []store.WorkerSeen{{ID: "slot-1", LastSeenAt: now}, {ID: "worker-a1", Tenant: "a", LastSeenAt: now},
			{ID: "worker-b1", Tenant: "b", LastSeenAt: now}},
		Activity: []store.ActivityCount{{Tenant: "a", Minute: m, Starts: 7, Failures: 2},
			{Tenant: "a", Minute: m.Add(-5 * time.Minute), Starts: 3},
			{Tenant: "b", Minute: m, Starts: 11, Failures: 4}},
	}); err != nil {
		e.t.Fatalf("report: %v", err)
	}
}

func TestOverview(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	e.tenant("b")
	e.observed()

	admin := e.browser()
	admin.login(e.admin)
	p := admin.do("GET", "/overview", nil)
	if p.status != http.StatusOK {
		t.Fatalf("the admin's overview: %d\n%s", p.status, p.body)
	}
	queues := section(p.body, `<table class="queues">`)
	for _, want := range []string{"emails", "reports", "pay", "secret-b-queue"} {
		if !strings.Contains(queues, want) {
			t.Errorf("the admin's queues lack %s:\n%s", want, queues)
		}
	}
	for _, want := range []string{"host-1:42:abcd", "v9.9.9", "slot-1", "worker-a1", "worker-b1",
		"starts per minute over the last hour: 21 in all, at most 18 in a minute",
		"failures per minute over the last hour: 6 in all"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the admin's overview lacks %q", want)
		}
	}
	// The admin's tenant filter.
	p = admin.do("GET", "/overview?tenant=b", nil)
	if strings.Contains(section(p.body, `<table class="queues">`), "emails") || !strings.Contains(p.body, "11 in all") ||
		!strings.Contains(p.body, "host-1:42:abcd") || strings.Contains(p.body, "worker-a1") {
		t.Errorf("the admin's overview of tenant b:\n%s", p.body)
	}

	b := e.browser()
	b.login(key)
	for _, path := range []string{"/overview", "/overview?tenant=b"} {
		p := b.do("GET", path, nil)
		if p.status != http.StatusOK {
			t.Fatalf("GET %s as tenant a: %d", path, p.status)
		}
		for _, leak := range []string{"secret-b-queue", "worker-b1", "host-1", "v9.9.9", "slot-1", "Servers", "21 in all"} {
			if strings.Contains(p.body, leak) {
				t.Errorf("GET %s as tenant a shows %q", path, leak)
			}
		}
		for _, want := range []string{"emails", "worker-a1", "10 in all", "failures per minute over the last hour: 2 in all"} {
			if !strings.Contains(p.body, want) {
				t.Errorf("GET %s as tenant a lacks %q", path, want)
			}
		}
	}
	// The queue row: two ready in emails, their wait shown.
	row := queueRow(b.do("GET", "/overview", nil).body, "emails")
	if !strings.Contains(row, `<td class="num">2</td>`) || !strings.Contains(row, "s</td>") {
		t.Errorf("the emails row: %s", row)
	}
}

// queueRow is the row of the queues table naming queue.
func queueRow(body, queue string) string {
	for _, row := range strings.Split(section(body, `<table class="queues">`), "<tr>") {
		if strings.Contains(row, ">"+queue+"</a>") {
			return row
		}
	}
	return ""
}

func TestTenantsPage(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	e.tenant("b")
	e.tenant("quiet") // nothing in flight, no schedule, no limit: listed all the same
	e.observed()
	e.call("PATCH", "/api/tenants/b", e.admin, `{"max_inflight":10,"disabled":true}`)

	b := e.browser()
	b.login(key)
	if p := b.do("GET", "/tenants", nil); p.status != http.StatusNotFound {
		t.Errorf("a tenant key reading the tenants page: %d, want 404", p.status)
	}
	if p := b.do("GET", "/overview", nil); strings.Contains(p.body, `href="/tenants"`) {
		t.Error("a tenant's navigation links the tenants page")
	}

	admin := e.browser()
	admin.login(e.admin)
	p := admin.do("GET", "/tenants", nil)
	if p.status != http.StatusOK {
		t.Fatalf("the tenants page: %d", p.status)
	}
	table := section(p.body, `<table class="tenants">`)
	if !strings.Contains(table, `max="10"`) || !strings.Contains(table, `value="2"`) || !strings.Contains(table, "disabled") ||
		!strings.Contains(table, ">a</a>") || !strings.Contains(table, ">quiet</a>") {
		t.Errorf("the tenants table:\n%s", table)
	}
	if p := admin.do("GET", "/tenants?name=quiet", nil); !strings.Contains(p.body, ">quiet</a>") {
		t.Errorf("looking up tenant quiet:\n%s", p.body)
	}
	if p := admin.do("GET", "/tenants?name=nobody", nil); !strings.Contains(p.body, "There is no tenant nobody.") {
		t.Errorf("looking up an unknown tenant:\n%s", p.body)
	}
}

func TestLimitsPage(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	e.tenant("b")
	e.observed()

	b := e.browser()
	b.login(key)
	for _, path := range []string{"/limits", "/limits?tenant=b"} {
		p := b.do("GET", path, nil)
		if p.status != http.StatusOK || !strings.Contains(p.body, "smtp-a") || !strings.Contains(p.body, "10 per 1m 00s") ||
			!strings.Contains(section(p.body, `<table class="keys">`), "acct-a") {
			t.Errorf("GET %s as tenant a: %d\n%s", path, p.status, p.body)
		}
		if strings.Contains(p.body, "smtp-b") || strings.Contains(p.body, "acct-b") {
			t.Errorf("GET %s as tenant a shows tenant b's limits", path)
		}
	}
	admin := e.browser()
	admin.login(e.admin)
	p := admin.do("GET", "/limits", nil)
	keys := section(p.body, `<table class="keys">`)
	if !strings.Contains(p.body, "smtp-b") || !strings.Contains(keys, "acct-b") || !strings.Contains(keys, "1 / 2") {
		t.Errorf("the admin's limits page:\n%s", p.body)
	}
}

// The new pages and actions need a session like the others.
func TestNewPagesNeedASession(t *testing.T) {
	e := newEnv(t)
	b := e.browser()
	for _, path := range []string{"/overview", "/tenants", "/limits", "/schedule?tenant=a&name=x", "/executions/x/json?field=payload",
		"/schedule/json?tenant=a&name=x"} {
		if p := b.do("GET", path, nil); p.status != http.StatusSeeOther || !strings.HasPrefix(p.location, "/login?next=") {
			t.Errorf("GET %s without a session: %d to %q, want the login page", path, p.status, p.location)
		}
	}
	for _, path := range []string{"/executions/x/delete", "/executions/x/retry", "/executions/x/signal", "/schedules/pause",
		"/schedules/resume"} {
		if p := b.do("POST", path, nil); p.status != http.StatusSeeOther || p.location != "/login" {
			t.Errorf("POST %s without a session: %d to %q, want the login page", path, p.status, p.location)
		}
	}
}
