package console_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/console"
	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/sqlite"
)

// fail ends tenant's next execution's run failed for good.
func (e *env) failForGood(tenant string) *store.Execution {
	e.t.Helper()
	x := e.submit(tenant, store.Submission{MaxAttempts: 1})
	l := e.claim(tenant, "worker-f")
	if _, err := e.store.Fail(context.Background(), &store.FailParams{ExecutionID: x.ID, Token: l.Token,
		Error: "boom", Now: time.Now()}); err != nil {
		e.t.Fatalf("fail: %v", err)
	}
	if got := e.get(x.ID).Status; got != store.StatusFailed {
		e.t.Fatalf("after Fail the execution is %s", got)
	}
	return x
}

// waiting is a flow of tenant suspended waiting for signal "approve".
func (e *env) waiting(tenant string) *store.Execution {
	e.t.Helper()
	x := e.submit(tenant, store.Submission{Kind: "flow"})
	l := e.claim(tenant, "worker-w")
	e.step(l, "prepare", `{"order":7}`)
	if _, err := e.store.Suspend(context.Background(), &store.SuspendParams{ExecutionID: x.ID, Token: l.Token,
		Step: "approval", Signal: "approve", Now: time.Now()}); err != nil {
		e.t.Fatalf("suspend: %v", err)
	}
	return e.get(x.ID)
}

// confirmFirst posts form to path without the confirmation, checks that
// it answers a confirmation page that changed nothing (checked by
// unchanged), then posts the confirmation page's form and returns its
// answer.
func (b *browser) confirmFirst(path string, form url.Values, unchanged func() bool) *page {
	t := b.e.t
	t.Helper()
	p := b.do("POST", path, form)
	if p.status != http.StatusOK || !strings.Contains(p.body, `name="confirm" value="yes"`) ||
		!strings.Contains(p.body, `action="`+path+`"`) {
		t.Fatalf("POST %s without confirmation: %d, want the confirmation page:\n%s", path, p.status, p.body)
	}
	if !unchanged() {
		t.Fatalf("POST %s without confirmation changed something", path)
	}
	confirmed := url.Values{"confirm": {"yes"}}
	for k, v := range form {
		confirmed[k] = v
		if !strings.Contains(p.body, `name="`+k+`" value="`) {
			t.Fatalf("the confirmation page of %s does not carry %s", path, k)
		}
	}
	return b.do("POST", path, confirmed)
}

func TestForceDeleteFromTheConsole(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	e.tenant("b")
	x := e.submit("a", store.Submission{})
	e.claim("a", "worker-1") // running: only a force delete takes it
	theirs := e.submit("b", store.Submission{})
	b := e.browser()
	b.login(key)

	if p := b.do("GET", "/executions/"+x.ID, nil); !strings.Contains(p.body, `action="/executions/`+x.ID+`/delete"`) {
		t.Fatal("the execution page has no delete button")
	}
	exists := func(id string) func() bool {
		return func() bool {
			_, err := e.store.Get(context.Background(), &store.GetParams{ID: id})
			return err == nil
		}
	}
	// Refused across sites, and for another tenant's, confirmed or not.
	if p := b.do("POST", "/executions/"+x.ID+"/delete", url.Values{"confirm": {"yes"}}, "Origin", "https://evil.example",
		"Sec-Fetch-Site", "cross-site"); p.status != http.StatusForbidden || !exists(x.ID)() {
		t.Errorf("a cross-site delete: %d, want 403 and the execution kept", p.status)
	}
	for _, form := range []url.Values{nil, {"confirm": {"yes"}}} {
		if p := b.do("POST", "/executions/"+theirs.ID+"/delete", form); p.status != http.StatusNotFound || !exists(theirs.ID)() {
			t.Errorf("tenant a deleting b's execution (%v): %d, want 404 and it kept", form, p.status)
		}
	}

	p := b.confirmFirst("/executions/"+x.ID+"/delete", url.Values{}, exists(x.ID))
	if p.status != http.StatusSeeOther || p.location != "/executions?deleted="+x.ID {
		t.Fatalf("confirmed delete: %d to %q", p.status, p.location)
	}
	if exists(x.ID)() {
		t.Fatal("the execution is still there after a confirmed delete")
	}
	if p := b.do("GET", p.location, nil); !strings.Contains(p.body, "Execution "+x.ID+" was deleted.") {
		t.Error("the list does not say the execution was deleted")
	}
	if p := b.do("GET", "/executions/"+x.ID, nil); p.status != http.StatusNotFound {
		t.Errorf("the deleted execution's page: %d, want 404", p.status)
	}
	// A link cannot make the list say something else was deleted.
	if p := b.do("GET", "/executions?deleted="+url.QueryEscape("your account"), nil); strings.Contains(p.body, "was deleted") {
		t.Error("the list says an arbitrary text was deleted")
	}
}

func TestRetryFromTheConsole(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	e.tenant("b")
	x := e.failForGood("a")
	theirs := e.failForGood("b")
	b := e.browser()
	b.login(key)
	status := func(id string) store.Status { return e.get(id).Status }
	isFailed := func(id string) func() bool { return func() bool { return status(id) == store.StatusFailed } }

	if p := b.do("GET", "/executions/"+x.ID, nil); !strings.Contains(p.body, `action="/executions/`+x.ID+`/retry"`) {
		t.Fatal("a failed execution's page has no retry button")
	}
	if p := b.do("POST", "/executions/"+theirs.ID+"/retry", url.Values{"confirm": {"yes"}}); p.status != http.StatusNotFound ||
		status(theirs.ID) != store.StatusFailed {
		t.Errorf("tenant a retrying b's execution: %d, want 404 and it still failed", p.status)
	}
	if p := b.do("POST", "/executions/"+x.ID+"/retry", url.Values{"confirm": {"yes"}}, "Origin", "https://evil.example",
		"Sec-Fetch-Site", "cross-site"); p.status != http.StatusForbidden || status(x.ID) != store.StatusFailed {
		t.Errorf("a cross-site retry: %d, want 403", p.status)
	}

	// At the quota (one slot, taken): refused, saying why, nothing changed.
	e.call("PATCH", "/api/tenants/a", e.admin, `{"max_inflight":1}`)
	busy := e.submit("a", store.Submission{})
	p := b.confirmFirst("/executions/"+x.ID+"/retry", url.Values{}, isFailed(x.ID))
	if p.status != http.StatusConflict || !strings.Contains(p.body, "Quota exceeded") || !strings.Contains(p.body, "Nothing was changed.") {
		t.Fatalf("retry at the quota: %d, want 409 saying quota exceeded:\n%s", p.status, p.body)
	}
	if status(x.ID) != store.StatusFailed {
		t.Fatal("a refused retry changed the execution")
	}

	if _, err := e.store.Cancel(context.Background(), &store.CancelParams{ID: busy.ID, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	p = b.confirmFirst("/executions/"+x.ID+"/retry", url.Values{}, isFailed(x.ID))
	if p.status != http.StatusSeeOther || p.location != "/executions/"+x.ID {
		t.Fatalf("confirmed retry: %d to %q", p.status, p.location)
	}
	if got := e.get(x.ID); got.Status != store.StatusQueued || got.Attempt != 0 {
		t.Fatalf("after retry: %s attempt %d, want queued afresh", got.Status, got.Attempt)
	}
	// Not failed any more: a second retry is refused.
	p = b.do("POST", "/executions/"+x.ID+"/retry", url.Values{"confirm": {"yes"}})
	if p.status != http.StatusConflict || !strings.Contains(p.body, "Only a failed execution can be retried.") {
		t.Errorf("retry of a queued execution: %d\n%s", p.status, p.body)
	}
}

func TestSignalFromTheConsole(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	e.tenant("b")
	x := e.waiting("a")
	theirs := e.waiting("b")
	b := e.browser()
	b.login(key)
	stillWaiting := func(id string) func() bool {
		return func() bool { return e.get(id).Status == store.StatusSuspended }
	}

	p := b.do("GET", "/executions/"+x.ID, nil)
	if !strings.Contains(p.body, `action="/executions/`+x.ID+`/signal"`) || !strings.Contains(p.body, `name="name" value="approve"`) {
		t.Fatalf("a waiting execution's page has no approval form:\n%s", p.body)
	}
	if p := b.do("POST", "/executions/"+theirs.ID+"/signal", url.Values{"name": {"approve"}, "confirm": {"yes"}}); p.status != http.StatusNotFound || !stillWaiting(theirs.ID)() {
		t.Errorf("tenant a signalling b's execution: %d, want 404", p.status)
	}
	// Bad input: data that is not JSON, a signal it does not wait for.
	for _, c := range []struct {
		form url.Values
		want string
	}{
		{url.Values{"name": {"approve"}, "data": {"{nope"}, "confirm": {"yes"}}, "must be a JSON value"},
		{url.Values{"name": {"reject"}, "confirm": {"yes"}}, "not waiting for signal reject"},
	} {
		p := b.do("POST", "/executions/"+x.ID+"/signal", c.form)
		if p.status < 400 || !strings.Contains(p.body, c.want) || !stillWaiting(x.ID)() {
			t.Errorf("signal %v: %d, want a refusal saying %q and nothing changed:\n%s", c.form, p.status, c.want, p.body)
		}
	}

	p = b.confirmFirst("/executions/"+x.ID+"/signal", url.Values{"name": {"approve"}, "data": {`{ "ok": true }`}}, stillWaiting(x.ID))
	if p.status != http.StatusSeeOther || p.location != "/executions/"+x.ID {
		t.Fatalf("confirmed signal: %d to %q\n%s", p.status, p.location, p.body)
	}
	if got := e.get(x.ID); got.Status != store.StatusQueued {
		t.Fatalf("after the signal the execution is %s, want queued again", got.Status)
	}
	page, err := e.store.Steps(context.Background(), &store.StepsParams{ID: x.ID})
	var steps []*store.Step
	if page != nil {
		steps = page.Items
	}
	if err != nil || len(steps) != 2 || steps[1].Name != "approval" || string(steps[1].Result) != `{"ok":true}` {
		t.Fatalf("the journal after the signal: %v %+v", err, steps)
	}
}

func TestPauseAndResumeASchedule(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	keyB := e.tenant("b")
	e.call("PUT", "/api/schedules/nightly", key,
		`{"cron":"0 3 * * *","timezone":"Europe/Paris","kind":"report","queue":"slow","priority":3,"max_attempts":4,"payload":{"x":1},"overlap":"queue","catchup":"none"}`)
	e.call("PUT", "/api/schedules/theirs", keyB, `{"every":"1h","kind":"echo"}`)
	get := func(tenant, name string) *store.Schedule {
		s, err := e.store.GetSchedule(context.Background(), &store.GetScheduleParams{Tenant: tenant, Name: name})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := get("a", "nightly")
	b := e.browser()
	b.login(key)

	if p := b.do("GET", "/schedule?name=nightly", nil); p.status != http.StatusOK || !strings.Contains(p.body, `action="/schedules/pause"`) {
		t.Fatalf("the schedule page: %d, no pause button:\n%s", p.status, p.body)
	}
	if p := b.do("POST", "/schedules/pause", url.Values{"tenant": {"b"}, "name": {"theirs"}, "confirm": {"yes"}}); p.status != http.StatusNotFound || !get("b", "theirs").Enabled {
		t.Errorf("tenant a pausing b's schedule: %d, want 404 and it still enabled", p.status)
	}
	if p := b.do("POST", "/schedules/pause", url.Values{"tenant": {"a"}, "name": {"nightly"}, "confirm": {"yes"}}, "Origin", "https://evil.example",
		"Sec-Fetch-Site", "cross-site"); p.status != http.StatusForbidden || !get("a", "nightly").Enabled {
		t.Errorf("a cross-site pause: %d, want 403", p.status)
	}

	ref := url.Values{"tenant": {"a"}, "name": {"nightly"}}
	p := b.confirmFirst("/schedules/pause", ref, func() bool { return get("a", "nightly").Enabled })
	if p.status != http.StatusSeeOther || p.location != "/schedule?name=nightly&tenant=a" {
		t.Fatalf("confirmed pause: %d to %q", p.status, p.location)
	}
	paused := get("a", "nightly")
	same := func(s *store.Schedule) bool {
		return s.Cron == before.Cron && s.Timezone == before.Timezone && s.Kind == before.Kind && s.Queue == before.Queue &&
			s.Priority == before.Priority && s.MaxAttempts == before.MaxAttempts && string(s.Payload) == string(before.Payload) &&
			s.Overlap == before.Overlap && s.Catchup == before.Catchup && s.CreatedAt.Equal(before.CreatedAt)
	}
	if paused.Enabled || !same(paused) {
		t.Fatalf("after pause: %+v, want disabled with every other setting of %+v", paused, before)
	}
	if p := b.do("POST", "/schedules/pause", url.Values{"tenant": {"a"}, "name": {"nightly"}, "confirm": {"yes"}}); p.status != http.StatusConflict || !strings.Contains(p.body, "Already paused") {
		t.Errorf("pausing a paused schedule: %d\n%s", p.status, p.body)
	}
	if p := b.do("GET", "/schedule?tenant=a&name=nightly", nil); !strings.Contains(p.body, "paused") || !strings.Contains(p.body, `action="/schedules/resume"`) {
		t.Errorf("a paused schedule's page:\n%s", p.body)
	}

	p = b.confirmFirst("/schedules/resume", ref, func() bool { return !get("a", "nightly").Enabled })
	if p.status != http.StatusSeeOther {
		t.Fatalf("confirmed resume: %d", p.status)
	}
	resumed := get("a", "nightly")
	if !resumed.Enabled || !same(resumed) || !resumed.NextRunAt.After(time.Now()) {
		t.Fatalf("after resume: %+v, want enabled with its settings and a next run ahead", resumed)
	}
}

// TestSchedulePageShowsTicks: settings, next run, and the latest ticks
// newest first, a skipped one saying why and a deduplicated one its hits;
// another tenant's schedule is not found.
func TestSchedulePageShowsTicks(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	keyB := e.tenant("b")
	e.call("PUT", "/api/schedules/sweep", key, `{"every":"1h","kind":"sweeper","overlap":"skip"}`)
	e.call("PUT", "/api/schedules/theirs", keyB, `{"every":"1h","kind":"echo"}`)
	ctx := context.Background()
	fire := func(idem string) *store.FireScheduleResult {
		now := time.Now()
		res, err := e.store.FireSchedule(ctx, &store.FireScheduleParams{Tenant: "a", Name: "sweep", Tick: now.Truncate(time.Second),
			Trigger: true, IdempotencyKey: idem, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first := fire("one")
	skipped := fire("two") // the first is not terminal: skipped
	again := fire("one")   // the first one's key: deduplicated
	if skipped.Execution.Status != store.StatusSkipped || again.Execution.ID != first.Execution.ID {
		t.Fatalf("fires: %+v %+v", skipped.Execution, again.Execution)
	}

	b := e.browser()
	b.login(key)
	p := b.do("GET", "/schedule?tenant=a&name=sweep", nil)
	if p.status != http.StatusOK {
		t.Fatalf("the schedule page: %d", p.status)
	}
	for _, want := range []string{"every 1h0m0s", "sweeper", "Next run", "overlap skip: an earlier execution was not finished",
		"deduplicated 1×"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the schedule page lacks %q", want)
		}
	}
	ticks := section(p.body, `<table class="ticks">`)
	if i, j := strings.Index(ticks, skipped.Execution.ID), strings.Index(ticks, first.Execution.ID); i < 0 || j < 0 || i > j {
		t.Errorf("the ticks are not newest first:\n%s", ticks)
	}
	for _, path := range []string{"/schedule?tenant=b&name=theirs", "/schedule?name=theirs", "/schedule?tenant=a&name=nope"} {
		if p := b.do("GET", path, nil); p.status != http.StatusNotFound || strings.Contains(p.body, "echo") {
			t.Errorf("GET %s as tenant a: %d, want 404", path, p.status)
		}
	}
	admin := e.browser()
	admin.login(e.admin)
	if p := admin.do("GET", "/schedule?tenant=b&name=theirs", nil); p.status != http.StatusOK {
		t.Errorf("the admin reading b's schedule: %d", p.status)
	}
	if p := admin.do("GET", "/schedule?name=theirs", nil); p.status != http.StatusNotFound {
		t.Errorf("the admin naming no tenant: %d, want 404", p.status)
	}
}

// TestExecutionPageShowsLeaseDedupTrace: while running, the lease's owner
// and expiry; the dedup key's hits; the trace id.
func TestExecutionPageShowsLeaseDedupTrace(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	tp := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	x := e.submit("a", store.Submission{DedupKey: "order-7", TraceParent: tp})
	res, err := e.store.Admit(context.Background(), &store.AdmitParams{Tenant: "a",
		Items: []store.Submission{{Kind: "echo", DedupKey: "order-7"}}})
	if err != nil || res.Items[0].Execution.ID != x.ID {
		t.Fatalf("a second submit with the key: %v %+v", err, res)
	}
	e.claim("a", "worker-lease")
	b := e.browser()
	b.login(key)
	p := b.do("GET", "/executions/"+x.ID, nil)
	for _, want := range []string{`<dd class="lease-owner">worker-lease</dd>`, `class="lease-expiry"`, "1 dedup hit,",
		"4bf92f3577b34da6a3ce929d0e0e4736"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the running execution's page lacks %q:\n%s", want, p.body)
		}
	}
}

// deletedWhileRead is a store where a schedule is deleted right after
// each read of it, as an API client deleting it while the console pauses
// it would.
type deletedWhileRead struct {
	*sqlite.Store
}

func (d deletedWhileRead) GetSchedule(ctx context.Context, p *store.GetScheduleParams) (*store.Schedule, error) {
	s, err := d.Store.GetSchedule(ctx, p)
	if err == nil {
		err = d.DeleteSchedule(ctx, &store.DeleteScheduleParams{Tenant: p.Tenant, Name: p.Name})
	}
	return s, err
}

// A pause of a schedule deleted meanwhile does not bring it back.
func TestPauseOfADeletedSchedule(t *testing.T) {
	e := newEnv(t, func(c *console.Config) { c.Store = deletedWhileRead{Store: c.Store.(*sqlite.Store)} })
	key := e.tenant("a")
	e.call("PUT", "/api/schedules/sweep", key, `{"every":"1h","kind":"echo"}`)
	b := e.browser()
	b.login(key)
	p := b.do("POST", "/schedules/pause", url.Values{"tenant": {"a"}, "name": {"sweep"}, "confirm": {"yes"}})
	if p.status != http.StatusNotFound {
		t.Errorf("pausing a schedule deleted meanwhile: %d, want 404", p.status)
	}
	if _, err := e.store.GetSchedule(context.Background(), &store.GetScheduleParams{Tenant: "a", Name: "sweep"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the deleted schedule is back after the pause: %v", err)
	}
}
