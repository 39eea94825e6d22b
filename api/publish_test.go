package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

func (e *testEnv) publishAs(key, body string, headers ...string) *publishResponse {
	e.t.Helper()
	var out publishResponse
	e.do("POST", "/api/events", key, body, headers...).want(http.StatusAccepted).decode(&out)
	return &out
}

func (e *testEnv) subscriptions(key string) []*subscriptionView {
	e.t.Helper()
	var out subscriptionList
	e.do("GET", "/api/subscriptions", key, nil).want(http.StatusOK).decode(&out)
	return out.Items
}

// TestPublishResumesAndStarts: one publish resumes the flow waiting for the
// event (with its key), leaves the one waiting for another key, starts one
// execution per enabled subscription on the name with the event as
// payload, and a repeat of its Idempotency-Key answers the first answer
// and starts nothing more.
func TestPublishResumesAndStarts(t *testing.T) {
	t.Parallel()
	e, clock, key := flowEnv(t)
	e.do("PUT", "/api/subscriptions/ship", key, `{"event":"order.paid","kind":"ship","queue":"jobs"}`).want(http.StatusCreated)
	e.do("PUT", "/api/subscriptions/audit", key, `{"event":"order.paid","kind":"audit","queue":"jobs","priority":3}`).want(http.StatusCreated)
	e.do("PUT", "/api/subscriptions/off", key, `{"event":"order.paid","kind":"x","queue":"jobs","enabled":false}`).want(http.StatusCreated)
	e.do("PUT", "/api/subscriptions/other", key, `{"event":"order.lost","kind":"x","queue":"jobs"}`).want(http.StatusCreated)

	a := e.submit(key, `{"kind":"flow"}`, http.StatusCreated)
	b := e.submit(key, `{"kind":"flow"}`, http.StatusCreated)
	la, lb := e.claimOne(key), e.claimOne(key)
	if la.ExecutionID != a.ExecutionID {
		la, lb = lb, la
	}
	w := e.suspendOn(key, la, `"step":"paid","event":"order.paid","key":"o-1","timeout_seconds":60`).want(http.StatusOK).exec()
	if w.Status != store.StatusSuspended || w.WaitingFor == nil || *w.WaitingFor != "event:order.paid" {
		t.Fatalf("waiting: %+v", w)
	}
	e.suspendOn(key, lb, `"step":"paid","event":"order.paid","key":"o-2"`).want(http.StatusOK)

	clock.add(time.Second)
	res := e.publishAs(key, `{"name":"order.paid","key":"o-1","data":{"amount":12}}`, "Idempotency-Key", "pay-1")
	if !store.IsExecutionID(res.EventID) || res.Resumed != 1 || len(res.Started) != 2 ||
		res.Started[0].Subscription != "audit" || res.Started[1].Subscription != "ship" {
		t.Fatalf("publish: %+v", res)
	}
	for _, st := range res.Started {
		if st.Error != "" || !store.IsExecutionID(st.ExecutionID) {
			t.Fatalf("start: %+v", st)
		}
		x := e.get(key, st.ExecutionID)
		var p map[string]any
		if err := json.Unmarshal(x.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if p["event_id"] != res.EventID || p["name"] != "order.paid" || p["key"] != "o-1" || x.Queue != "jobs" {
			t.Fatalf("started execution: %+v, payload %s", x, x.Payload)
		}
	}
	if g := e.get(key, a.ExecutionID); g.Status != store.StatusQueued {
		t.Fatalf("the matching wait did not resume: %+v", g)
	}
	if g := e.get(key, b.ExecutionID); g.Status != store.StatusSuspended {
		t.Fatalf("a wait for another key resumed: %+v", g)
	}
	l := e.claimOne(key, `,"queues":["default"]`)
	if l.ExecutionID != a.ExecutionID {
		t.Fatalf("claimed %s, want the resumed %s", l.ExecutionID, a.ExecutionID)
	}
	var step map[string]any
	if err := json.Unmarshal(l.Steps["paid"], &step); err != nil || step["event_id"] != res.EventID || step["key"] != "o-1" {
		t.Fatalf("the wait's step: %s", l.Steps["paid"])
	}

	// The repeat answers the first answer; nothing more starts.
	before := e.count()
	again := e.publishAs(key, `{"name":"order.paid","key":"o-1","data":{"amount":12}}`, "Idempotency-Key", "pay-1")
	if again.EventID != res.EventID || len(again.Started) != 2 || again.Started[1].ExecutionID != res.Started[1].ExecutionID {
		t.Fatalf("repeat: %+v, first %+v", again, res)
	}
	if e.count() != before {
		t.Fatal("a repeated publish started executions")
	}
}

// TestPublishEventBeforeWait: an event published before the wait begins is
// consumed by it at once, and the same execution does not consume it
// twice; since after the event makes the wait miss it.
func TestPublishEventBeforeWait(t *testing.T) {
	t.Parallel()
	e, clock, key := flowEnv(t)
	x := e.submit(key, `{"kind":"flow"}`, http.StatusCreated)
	clock.add(time.Second)
	e.publishAs(key, `{"name":"ready"}`)
	l := e.claimOne(key)
	if q := e.suspendOn(key, l, `"step":"one","event":"ready"`).want(http.StatusOK).exec(); q.Status != store.StatusQueued {
		t.Fatalf("wait for a published event: %+v", q)
	}
	l = e.claimOne(key)
	if q := e.suspendOn(key, l, `"step":"two","event":"ready","timeout_seconds":5`).want(http.StatusOK).exec(); q.Status != store.StatusSuspended {
		t.Fatalf("the event was consumed twice: %+v", q)
	}
	clock.add(5 * time.Second)
	if _, err := e.store.Wake(context.Background(), &store.WakeParams{Now: clock.Now()}); err != nil {
		t.Fatal(err)
	}
	l = e.claimOne(key)
	if string(l.Steps["two"]) != string(store.TimedOut) || l.ExecutionID != x.ExecutionID {
		t.Fatalf("timed out: %s", l.Steps["two"])
	}
	since := clock.Now().Add(time.Hour).Format(time.RFC3339)
	if q := e.suspendOn(key, l, `"step":"three","event":"ready","since":"`+since+`"`).want(http.StatusOK).exec(); q.Status != store.StatusSuspended {
		t.Fatalf("since after the event: %+v", q)
	}
}

// fewSubscriptions lowers the bound of a tenant's subscriptions to one.
type fewSubscriptions struct{ store.Store }

func (s fewSubscriptions) PutSubscription(ctx context.Context, p *store.PutSubscriptionParams) (*store.PutSubscriptionResult, error) {
	p.MaxSubscriptions = 1
	return s.Store.PutSubscription(ctx, p)
}

// TestSubscriptions: put (201 then 200, created_at kept), get, list, a GET
// answer sent back changes nothing, delete, the bound, and tenants apart.
func TestSubscriptions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.Store = fewSubscriptions{c.Store} })
	key, other := e.tenant("acme"), e.tenant("other")

	r := e.do("PUT", "/api/subscriptions/on-paid", key, `{"event":"order.paid","kind":"ship","concurrency_key":"c"}`).want(http.StatusCreated)
	var created subscriptionView
	r.decode(&created)
	if created.Name != "on-paid" || created.Tenant != "acme" || created.Event != "order.paid" || created.Queue != "default" ||
		created.MaxAttempts != 3 || created.TimeoutSeconds != 300 || !created.Enabled ||
		created.ConcurrencyKey == nil || created.ConcurrencyLimit == nil || *created.ConcurrencyLimit != 1 {
		t.Fatalf("created: %s", r.body)
	}
	// The answer sent back replaces it with itself.
	var back subscriptionView
	e.do("PUT", "/api/subscriptions/on-paid", key, r.body).want(http.StatusOK).decode(&back)
	if !back.CreatedAt.Equal(created.CreatedAt) || back.Kind != "ship" || *back.ConcurrencyLimit != 1 {
		t.Fatalf("replaced: %+v", back)
	}
	e.do("PUT", "/api/subscriptions/on-paid", key, `{"event":"order.paid","kind":"ship","enabled":false}`).want(http.StatusOK)
	var got subscriptionView
	e.do("GET", "/api/subscriptions/on-paid", key, nil).want(http.StatusOK).decode(&got)
	if got.Enabled || got.ConcurrencyKey != nil || got.ConcurrencyLimit != nil {
		t.Fatalf("get: %+v", got)
	}
	// At the bound: one more is 409, nothing written; a replace is fine.
	p := e.do("PUT", "/api/subscriptions/second", key, `{"event":"x","kind":"y"}`).problem(http.StatusConflict, CodeTooManySubscriptions)
	detailHas(t, p, "acme")
	if list := e.subscriptions(key); len(list) != 1 || list[0].Name != "on-paid" {
		t.Fatalf("list: %+v", list)
	}
	// Tenants apart.
	e.do("GET", "/api/subscriptions/on-paid", other, nil).problem(http.StatusNotFound, CodeNotFound)
	e.do("DELETE", "/api/subscriptions/on-paid", other, nil).problem(http.StatusNotFound, CodeNotFound)
	if list := e.subscriptions(other); len(list) != 0 {
		t.Fatalf("another tenant lists %+v", list)
	}
	e.do("PUT", "/api/subscriptions/on-paid", other, `{"event":"e","kind":"k"}`).want(http.StatusCreated)
	if list := e.subscriptions(e.admin); len(list) != 2 || list[0].Tenant != "acme" || list[1].Tenant != "other" {
		t.Fatalf("admin's list: %+v", list)
	}
	e.do("GET", "/api/subscriptions/on-paid", e.admin, nil).problem(http.StatusBadRequest, CodeInvalidRequest)
	e.do("GET", "/api/subscriptions/on-paid", e.admin, nil, "Latch-Tenant", "other").want(http.StatusOK)

	e.do("DELETE", "/api/subscriptions/on-paid", key, nil).want(http.StatusNoContent)
	e.do("GET", "/api/subscriptions/on-paid", key, nil).problem(http.StatusNotFound, CodeNotFound)
	e.do("DELETE", "/api/subscriptions/on-paid", key, nil).problem(http.StatusNotFound, CodeNotFound)
	e.do("GET", "/api/subscriptions/bad%20name", key, nil).problem(http.StatusNotFound, CodeNotFound)
}

// TestSubscriptionListPages: the list comes a page at a time: limit
// bounds it, next_cursor continues after its last subscription, across
// tenants for the admin; a tenant key sees only its own; a bad page
// parameter is a 400 naming it.
func TestSubscriptionListPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b, c := e.tenant("acme"), e.tenant("bolt"), e.tenant("core")
	for _, name := range []string{"c", "a", "b"} {
		e.do("PUT", "/api/subscriptions/"+name, a, `{"event":"e","kind":"k"}`).want(http.StatusCreated)
	}
	e.do("PUT", "/api/subscriptions/a", b, `{"event":"e","kind":"k"}`).want(http.StatusCreated)
	e.do("PUT", "/api/subscriptions/z", c, `{"event":"e","kind":"k"}`).want(http.StatusCreated)

	pages := func(key, path string) (got []string, cursors int) {
		t.Helper()
		limit := path[strings.Index(path, "?"):]
		for {
			var list subscriptionList
			e.do("GET", path, key, nil).want(http.StatusOK).decode(&list)
			for _, s := range list.Items {
				got = append(got, s.Tenant+"/"+s.Name)
			}
			if list.NextCursor == nil {
				return got, cursors
			}
			if cursors++; cursors > 6 {
				t.Fatalf("%s: still paging after %d pages: %v", path, cursors, got)
			}
			path = "/api/subscriptions" + limit + "&cursor=" + *list.NextCursor
		}
	}
	for _, tc := range []struct {
		key, query, want string
		next             int
	}{
		{e.admin, "?limit=2", "acme/a,acme/b,acme/c,bolt/a,core/z", 2},
		{e.admin, "?limit=1", "acme/a,acme/b,acme/c,bolt/a,core/z", 4},
		{e.admin, "?limit=500", "acme/a,acme/b,acme/c,bolt/a,core/z", 0},
		{a, "?limit=2", "acme/a,acme/b,acme/c", 1},
		// A page that ends exactly at the last has no next_cursor.
		{a, "?limit=3", "acme/a,acme/b,acme/c", 0},
		{b, "?limit=1", "bolt/a", 0},
	} {
		if got, n := pages(tc.key, "/api/subscriptions"+tc.query); strings.Join(got, ",") != tc.want || n != tc.next {
			t.Errorf("%s: %v in %d pages after the first, want %s in %d", tc.query, got, n, tc.want, tc.next)
		}
	}
	// A tenant key given a cursor of another tenant's list sees its own
	// after it, nothing of the other's.
	var all subscriptionList
	e.do("GET", "/api/subscriptions?limit=3", e.admin, nil).want(http.StatusOK).decode(&all)
	if all.NextCursor == nil {
		t.Fatal("no next_cursor after acme's 3 of 5")
	}
	var mine subscriptionList
	e.do("GET", "/api/subscriptions?cursor="+*all.NextCursor, b, nil).want(http.StatusOK).decode(&mine)
	if len(mine.Items) != 1 || mine.Items[0].Tenant != "bolt" || mine.NextCursor != nil {
		t.Errorf("bolt after acme's cursor: %+v", mine)
	}
	// The default page holds a tenant's every subscription; the answer
	// always has next_cursor, null at the end.
	r := e.do("GET", "/api/subscriptions", a, nil).want(http.StatusOK)
	var raw map[string]json.RawMessage
	r.decode(&raw)
	if string(raw["next_cursor"]) != "null" || len(e.subscriptions(a)) != 3 {
		t.Errorf("acme's default page: %s", r.body)
	}
	for _, tc := range []struct{ query, mention string }{
		{"limit=0", "limit"},
		{"limit=501", "limit"},
		{"limit=x", "limit"},
		{"cursor=abc", "cursor"},
		{"cursor=" + base64.RawURLEncoding.EncodeToString([]byte(`["acme"]`)), "cursor"},
		{"cursor=" + base64.RawURLEncoding.EncodeToString([]byte(`["acme",""]`)), "cursor"},
		{"page=2", "page"},
	} {
		p := e.do("GET", "/api/subscriptions?"+tc.query, a, nil).problem(http.StatusBadRequest, CodeInvalidRequest)
		if !strings.HasPrefix(p.Detail, tc.mention) {
			t.Errorf("%s: detail %q does not start with %q", tc.query, p.Detail, tc.mention)
		}
	}
}

// TestEventsInvalid: bad input to a publish, a subscription or a wait for
// an event is 400 naming the field and changes nothing.
func TestEventsInvalid(t *testing.T) {
	t.Parallel()
	e, _, key := flowEnv(t)
	e.do("PUT", "/api/subscriptions/s", key, `{"event":"go","kind":"k","queue":"subs"}`).want(http.StatusCreated)
	x := e.submit(key, `{"kind":"flow"}`, http.StatusCreated)
	l := e.claimOne(key)

	for _, c := range []struct {
		method, path, body, field string
		headers                   []string
	}{
		{"POST", "/api/events", `{}`, "name", nil},
		{"POST", "/api/events", `{"name":"has space"}`, "name", nil},
		{"POST", "/api/events", `{"name":"go","key":""}`, "key", nil},
		{"POST", "/api/events", `{"name":"go","key":"` + strings.Repeat("k", 257) + `"}`, "key", nil},
		{"POST", "/api/events", `{"name":"go","key":"a\u0000b"}`, "key", nil},
		{"POST", "/api/events", `{"name":"go","extra":1}`, "extra", nil},
		{"POST", "/api/events", `{"name":"go","data":`, "", nil},
		{"POST", "/api/events", `{"name":"go"}`, "Idempotency-Key", []string{"Idempotency-Key", strings.Repeat("i", 257)}},
		{"POST", "/api/events?x=1", `{"name":"go"}`, "x", nil},
		{"PUT", "/api/subscriptions/s", `{"kind":"k"}`, "event", nil},
		{"PUT", "/api/subscriptions/s", `{"event":"go"}`, "kind", nil},
		{"PUT", "/api/subscriptions/s", `{"event":"a b","kind":"k"}`, "event", nil},
		{"PUT", "/api/subscriptions/s", `{"event":"go","kind":"k","concurrency_limit":2}`, "concurrency_limit", nil},
		{"PUT", "/api/subscriptions/s", `{"event":"go","kind":"k","max_attempts":0}`, "max_attempts", nil},
		{"PUT", "/api/subscriptions/s", `{"event":"go","kind":"k","priority":2147483648}`, "priority", nil},
		{"PUT", "/api/subscriptions/s", `{"event":"go","kind":"k","name":"t"}`, "name", nil},
		{"PUT", "/api/subscriptions/s", `{"event":"go","kind":"k","payload":{}}`, "payload", nil},
		{"PUT", "/api/subscriptions/bad%20name", `{"event":"go","kind":"k"}`, "name", nil},
		{"POST", "/api/executions/" + x.ExecutionID + "/suspend", `{"lease_token":"` + l.LeaseToken + `","step":"s","signal":"go","key":"k"}`, "key", nil},
		{"POST", "/api/executions/" + x.ExecutionID + "/suspend", `{"lease_token":"` + l.LeaseToken + `","step":"s","signal":"go","since":"2030-01-01T00:00:00Z"}`, "since", nil},
		{"POST", "/api/executions/" + x.ExecutionID + "/suspend", `{"lease_token":"` + l.LeaseToken + `","step":"s","event":"go","signal":"go"}`, "until", nil},
		{"POST", "/api/executions/" + x.ExecutionID + "/suspend", `{"lease_token":"` + l.LeaseToken + `","step":"s","event":"go","since":"yesterday"}`, "since", nil},
		{"POST", "/api/executions/" + x.ExecutionID + "/suspend", `{"lease_token":"` + l.LeaseToken + `","step":"s","event":"a/b"}`, "event", nil},
		{"POST", "/api/executions/" + x.ExecutionID + "/suspend", `{"lease_token":"` + l.LeaseToken + `","step":"s","event":"go","key":""}`, "key", nil},
		{"POST", "/api/executions/" + x.ExecutionID + "/suspend", `{"lease_token":"` + l.LeaseToken + `","step":"s","event":"go","timeout_seconds":-1}`, "timeout_seconds", nil},
		{"POST", "/api/tenants", `{"name":"t2","event_retention_seconds":0}`, "event_retention_seconds", nil},
		{"PATCH", "/api/tenants/acme", `{"event_retention_seconds":315360001}`, "event_retention_seconds", nil},
	} {
		k := key
		if strings.Contains(c.path, "tenants") {
			k = e.admin
		}
		p := e.do(c.method, c.path, k, c.body, c.headers...).problem(http.StatusBadRequest, CodeInvalidRequest)
		if !strings.HasPrefix(p.Detail, c.field) {
			t.Errorf("%s %s %s: detail %q does not start with %q", c.method, c.path, c.body, p.Detail, c.field)
		}
	}
	// The admin must name the tenant.
	e.do("POST", "/api/events", e.admin, `{"name":"go"}`).problem(http.StatusBadRequest, CodeInvalidRequest)
	// Data over the payload limit is 413.
	e.do("POST", "/api/events", key, `{"name":"go","data":"`+strings.Repeat("d", 1000)+`"}`).problem(http.StatusRequestEntityTooLarge, CodePayloadTooLarge)

	// Nothing changed: the flow still runs on its lease, the subscription
	// is as it was, nothing started, no tenant t2.
	if g := e.get(key, x.ExecutionID); g.Status != store.StatusRunning {
		t.Fatalf("after refused suspends: %+v", g)
	}
	if list := e.subscriptions(key); len(list) != 1 || list[0].Queue != "subs" || list[0].Kind != "k" {
		t.Fatalf("subscriptions: %+v", list[0])
	}
	if n := e.count(); n != 1 {
		t.Fatalf("%d executions: a refused publish started one", n)
	}
	e.do("GET", "/api/tenants/t2", e.admin, nil).problem(http.StatusNotFound, CodeNotFound)
	var tn tenant
	e.do("GET", "/api/tenants/acme", e.admin, nil).want(http.StatusOK).decode(&tn)
	if tn.EventRetentionSeconds != 86400 {
		t.Fatalf("event retention %d after a refused patch, want the default 86400", tn.EventRetentionSeconds)
	}
}

// TestTenantEventRetention: the setting is created, answered, patched.
func TestTenantEventRetention(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var created createdTenant
	e.do("POST", "/api/tenants", e.admin, `{"name":"acme","event_retention_seconds":3600}`).want(http.StatusCreated).decode(&created)
	if created.EventRetentionSeconds != 3600 {
		t.Fatalf("created: %+v", created)
	}
	var tn tenant
	e.do("PATCH", "/api/tenants/acme", e.admin, `{"event_retention_seconds":120}`).want(http.StatusOK).decode(&tn)
	if tn.EventRetentionSeconds != 120 {
		t.Fatalf("patched: %+v", tn)
	}
	e.do("GET", "/api/tenants/acme", created.APIKey, nil).want(http.StatusOK).decode(&tn)
	if tn.EventRetentionSeconds != 120 {
		t.Fatalf("read: %+v", tn)
	}
	e.do("POST", "/api/tenants", e.admin, `{"name":"dflt"}`).want(http.StatusCreated).decode(&created)
	if created.EventRetentionSeconds != 86400 {
		t.Fatalf("default: %+v", created)
	}
}

// TestPublishRacesWait: publishes racing suspends over HTTP never lose a
// wake-up: every flow that waits for its own key ends up queued with the
// event recorded, whichever came first.
func TestPublishRacesWait(t *testing.T) {
	t.Parallel()
	e, _, key := flowEnv(t, `,"max_inflight":100`)
	const n = 8
	leases := make([]lease, n)
	for i := range n {
		e.submit(key, `{"kind":"flow"}`, http.StatusCreated)
		leases[i] = e.claimOne(key)
	}
	var wg sync.WaitGroup
	for i, l := range leases {
		k := string(rune('a' + i))
		wg.Add(2)
		go func() {
			defer wg.Done()
			e.suspendOn(key, l, `"step":"w","event":"race","key":"`+k+`"`).want(http.StatusOK)
		}()
		go func() {
			defer wg.Done()
			e.publishAs(key, `{"name":"race","key":"`+k+`"}`)
		}()
	}
	wg.Wait()
	for _, l := range leases {
		if g := e.get(key, l.ExecutionID); g.Status != store.StatusQueued {
			t.Fatalf("a wait lost its event: %+v", g)
		}
	}
}

// TestPublishTenantsApart: another tenant's publish of the same name and
// key resumes nothing and starts nothing of this tenant's; the admin
// publishes for the tenant it names.
func TestPublishTenantsApart(t *testing.T) {
	t.Parallel()
	e, _, key := flowEnv(t)
	other := e.tenant("other")
	e.do("PUT", "/api/subscriptions/s", key, `{"event":"go","kind":"k","queue":"subs"}`).want(http.StatusCreated)
	x := e.submit(key, `{"kind":"flow"}`, http.StatusCreated)
	l := e.claimOne(key)
	e.suspendOn(key, l, `"step":"w","event":"go","key":"k1"`).want(http.StatusOK)

	if res := e.publishAs(other, `{"name":"go","key":"k1"}`); res.Resumed != 0 || len(res.Started) != 0 {
		t.Fatalf("another tenant's publish: %+v", res)
	}
	if g := e.get(key, x.ExecutionID); g.Status != store.StatusSuspended {
		t.Fatalf("another tenant's event resumed it: %+v", g)
	}
	if n := e.count(); n != 1 {
		t.Fatalf("%d executions: another tenant's publish started one", n)
	}
	res := e.publishAs(e.admin, `{"name":"go","key":"k1"}`, "Latch-Tenant", "acme")
	if res.Resumed != 1 || len(res.Started) != 1 {
		t.Fatalf("the admin's publish for acme: %+v", res)
	}
}

// TestPublishStartRefused: a start the quota refuses is answered in its
// entry with "error": "quota_exceeded", no execution id, and the publish
// succeeds.
func TestPublishStartRefused(t *testing.T) {
	t.Parallel()
	e, _, key := flowEnv(t, `,"max_inflight":1`)
	e.submit(key, `{"kind":"busy"}`, http.StatusCreated)
	e.do("PUT", "/api/subscriptions/s", key, `{"event":"go","kind":"k"}`).want(http.StatusCreated)
	r := e.do("POST", "/api/events", key, `{"name":"go"}`).want(http.StatusAccepted)
	var raw struct {
		Started []map[string]any `json:"started"`
	}
	r.decode(&raw)
	if len(raw.Started) != 1 || raw.Started[0]["subscription"] != "s" || raw.Started[0]["error"] != "quota_exceeded" ||
		raw.Started[0]["execution_id"] != nil {
		t.Fatalf("publish at the quota: %s", r.body)
	}
	if n := e.count(); n != 1 {
		t.Fatalf("%d executions", n)
	}
}
