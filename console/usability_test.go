package console_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// The console's pages as a person meets them (issue 31): a 404 keeps the
// navigation, a refused signal keeps what was typed, a schedule says the
// attempts and timeout its executions get, every tab names its page.

var titleRE = regexp.MustCompile(`<title>([^<]*)</title>`)

func title(body string) string {
	m := titleRE.FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return m[1]
}

func TestNotFoundKeepsTheNavigation(t *testing.T) {
	e := newEnv(t)
	b := e.browser()
	b.login(e.tenant("a"))
	p := b.do("GET", "/no/such/page", nil)
	if p.status != http.StatusNotFound || !strings.Contains(p.body, `<nav>`) || !strings.Contains(p.body, `action="/logout"`) ||
		!strings.Contains(p.body, `<span class="who">tenant a</span>`) {
		t.Errorf("an unknown page while logged in: %d, want a 404 with the navigation and Log out:\n%s", p.status, p.body)
	}
	if got := title(p.body); got != "Not found · latch" {
		t.Errorf("its title %q", got)
	}
	// Logged out, the 404 has no navigation (and says nothing of anyone).
	if p := e.browser().do("GET", "/no/such/page", nil); p.status != http.StatusNotFound || strings.Contains(p.body, "<nav>") {
		t.Errorf("an unknown page logged out: %d\n%s", p.status, p.body)
	}
}

func TestSignalNotJSONKeepsTheData(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	flow := e.approvalFlow("a")
	b := e.browser()
	b.login(key)
	typed := `{"approved": tru, "note": "<b>ok</b>"}`
	p := b.do("POST", "/executions/"+flow.ID+"/signal", url.Values{"name": {"approve"}, "data": {typed}})
	if p.status != http.StatusBadRequest || !strings.Contains(p.body, "Data is not JSON") {
		t.Fatalf("data that is not JSON: %d\n%s", p.status, p.body)
	}
	escaped := strings.NewReplacer(`"`, "&#34;", "<", "&lt;", ">", "&gt;").Replace(typed)
	if !strings.Contains(p.body, `name="data"`) || !strings.Contains(p.body, ">"+escaped+"</textarea>") {
		t.Errorf("the refusal lost the typed data:\n%s", p.body)
	}
	if !strings.Contains(p.body, `href="/executions/`+flow.ID+`"`) || !strings.Contains(p.body, `action="/executions/`+flow.ID+`/signal"`) {
		t.Errorf("the refusal does not lead back to the execution:\n%s", p.body)
	}
	if got := e.get(flow.ID).Status; got != store.StatusSuspended {
		t.Errorf("a refused signal left the execution %s", got)
	}
}

func TestScheduleShowsEffectiveAttempts(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	got := string(e.call("PUT", "/api/schedules/plain", key, `{"every":"1h","kind":"echo"}`))
	if !strings.Contains(got, `"max_attempts":3`) || !strings.Contains(got, `"timeout_seconds":300`) {
		t.Fatalf("the API's schedule: %s", got)
	}
	e.call("PUT", "/api/schedules/tuned", key, `{"every":"1h","kind":"echo","max_attempts":7,"timeout_seconds":45}`)
	b := e.browser()
	b.login(key)
	for name, want := range map[string]string{"plain": "<dd>3, timeout 300 s</dd>", "tuned": "<dd>7, timeout 45 s</dd>"} {
		p := b.do("GET", "/schedule?name="+name, nil)
		if !strings.Contains(p.body, want) || strings.Contains(p.body, "default,") {
			t.Errorf("schedule %s's page lacks %q:\n%s", name, want, p.body)
		}
	}
}

func TestEveryTabNamesItsPage(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	x := e.submit("a", store.Submission{Kind: "checkout"})
	e.call("PUT", "/api/schedules/nightly", key, `{"every":"1h","kind":"echo"}`)
	b := e.browser()
	if got := title(b.do("GET", "/login", nil).body); got != "Log in · latch" {
		t.Errorf("the login page's title %q", got)
	}
	b.login(e.admin)
	for path, want := range map[string]string{
		"/executions":                     "Executions · latch",
		"/executions/" + x.ID:             "exec " + x.ID + " · checkout · latch",
		"/schedules":                      "Schedules · latch",
		"/schedule?tenant=a&name=nightly": "schedule nightly · a · latch",
		"/overview":                       "Overview · latch",
		"/overview?tenant=a":              "Overview · a · latch",
		"/limits":                         "Limits · latch",
		"/tenants":                        "Tenants · latch",
	} {
		if got := title(b.do("GET", path, nil).body); got != want {
			t.Errorf("GET %s: title %q, want %q", path, got, want)
		}
	}
	p := b.do("POST", "/executions/"+x.ID+"/cancel", url.Values{})
	if got := title(p.body); got != "Cancel execution "+x.ID+"? · latch" {
		t.Errorf("the confirmation's title %q", got)
	}
}

// runCells are the Run column of the attempts table, and its Attempt
// column.
var runRowRE = regexp.MustCompile(`<td class="run">(\d+)</td><td class="attempt">([^<]*)(?:<span class="note">([^<]*)</span>)?</td>`)

// TestRunsNumberedApart: each claim is a run of its own, numbered beside
// its attempt; a retried execution's runs read 1,2,3,4 with attempts
// 1,2,1,2 (the third said to follow a retry), and a flow resumed after a
// wait shows its suspension and its resume on the step timeline.
func TestRunsNumberedApart(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	ctx := context.Background()
	x := e.retriedTwice("a")
	b := e.browser()
	b.login(key)
	p := b.do("GET", "/executions/"+x.ID, nil)
	rows := runRowRE.FindAllStringSubmatch(section(p.body, `<table class="attempts">`), -1)
	var got []string
	for _, m := range rows {
		got = append(got, m[1]+"/"+strings.TrimSpace(m[2])+"/"+m[3])
	}
	if want := "1/1/ 2/2/ 3/1/after a retry 4/2/"; strings.Join(got, " ") != want {
		t.Errorf("runs (run/attempt/note): %q, want %q\n%s", strings.Join(got, " "), want, section(p.body, `<table class="attempts">`))
	}

	// A flow: run 1 fails, run 2 records a step and waits, the signal
	// arrives, run 3 resumes the same attempt and completes.
	flow := e.approvalFlow("a")
	time.Sleep(20 * time.Millisecond)
	if _, err := e.store.Signal(ctx, &store.SignalParams{Tenant: "a", ExecutionID: flow.ID, Name: "approve",
		Data: []byte(`{"ok":true}`), Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	l := e.claim("a", "worker-c")
	e.step(l, "ship", `{"parcel":7}`)
	if _, err := e.store.Complete(ctx, &store.CompleteParams{ExecutionID: flow.ID, Token: l.Token, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	p = b.do("GET", "/executions/"+flow.ID, nil)
	rows = runRowRE.FindAllStringSubmatch(section(p.body, `<table class="attempts">`), -1)
	got = nil
	for _, m := range rows {
		got = append(got, m[1]+"/"+strings.TrimSpace(m[2])+"/"+m[3])
	}
	if len(got) != 3 || got[2] != "3/2/resumed" {
		t.Errorf("the flow's runs: %q, want the third marked resumed", got)
	}
	steps := section(p.body, `<table class="steps">`)
	order := []string{"Run 1 · attempt 1 · worker worker-a", "reserve", "Run 2 · attempt 2 · worker worker-b", "charge",
		"Suspended at ", "(run 2 ended)", "approval", "Run 3 · attempt 2 · worker worker-c · resumed after ", "ship"}
	at := 0
	for _, want := range order {
		i := strings.Index(steps[at:], want)
		if i < 0 {
			t.Errorf("the step timeline lacks %q after position %d:\n%s", want, at, steps)
			break
		}
		at += i + len(want)
	}
	if testing.Verbose() {
		t.Log(steps)
	}
}

// retriedTwice is an execution of tenant with max_attempts 2 that failed
// both (on w1, w2), was retried, and failed both again (w3, w4).
func (e *env) retriedTwice(tenant string) *store.Execution {
	e.t.Helper()
	ctx := context.Background()
	x := e.submit(tenant, store.Submission{Kind: "flaky", MaxAttempts: 2})
	fail := func(worker string) {
		l := e.claim(tenant, worker)
		if _, err := e.store.Fail(ctx, &store.FailParams{ExecutionID: x.ID, Token: l.Token, Error: "boom", Retry: true,
			Now: time.Now()}); err != nil {
			e.t.Fatal(err)
		}
	}
	fail("w1")
	fail("w2")
	if _, err := e.store.Retry(ctx, &store.RetryParams{Tenant: tenant, ID: x.ID, Now: time.Now()}); err != nil {
		e.t.Fatal(err)
	}
	fail("w3")
	fail("w4")
	return e.get(x.ID)
}
