package console_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/latch-run/latch/store"
)

// Screenshots: with LATCH_SCREENSHOTS=dir the page tests write a PNG of
// each page they visit into dir, at a fixed viewport (docs/console.md
// embeds those of docs/console). A relative dir is taken from the
// repository's root, not from this package's directory where go test
// runs.
const shotW, shotH = 1280, 800

// chrome is a browser tab on the console, with its script errors (an
// exception, a CSP refusal) collected.
type chrome struct {
	t    *testing.T
	e    *env
	ctx  context.Context
	errs chan string
}

func (e *env) chrome(t *testing.T) *chrome {
	bin := chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin),
		chromedp.UserDataDir(t.TempDir()), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true), chromedp.Flag("hide-scrollbars", true))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	c := &chrome{t: t, e: e, ctx: bctx, errs: make(chan string, 16)}
	if err := chromedp.Listen(bctx, func(ev any) {
		msg := ""
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			msg = ev.ExceptionDetails.Text
		case *cdplog.EventEntryAdded:
			// A 404 or 409 page logs its status as an error: expected here.
			if ev.Entry.Level == cdplog.EntryLevelError && ev.Entry.Source != cdplog.EntrySourceNetwork {
				msg = string(ev.Entry.Source) + ": " + ev.Entry.Text + " " + ev.Entry.URL
			}
		}
		if msg != "" {
			select {
			case c.errs <- msg:
			default:
			}
		}
	}); err != nil {
		t.Fatalf("start the browser: %v", err)
	}
	c.do("set the viewport", chromedp.EmulateViewport(shotW, shotH))
	return c
}

// do runs steps, failing the test with what on an error.
func (c *chrome) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	c.t.Helper()
	if err := chromedp.Do(c.ctx, steps...); err != nil {
		c.t.Fatalf("%s: %v", what, err)
	}
}

// text is the text of the first element sel matches.
func (c *chrome) text(sel string) string {
	c.t.Helper()
	s, err := chromedp.Run(c.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		c.t.Fatalf("read %s: %v", sel, err)
	}
	return s
}

// open navigates to path and waits for sel.
func (c *chrome) open(path, sel string) {
	c.t.Helper()
	c.do("open "+path, chromedp.Navigate(c.e.srv.URL+path), chromedp.WaitVisible(chromedp.CSS(sel)))
}

// login logs in with key from the login page.
func (c *chrome) login(key string) {
	c.t.Helper()
	c.do("log in", chromedp.Navigate(c.e.srv.URL+"/login"), chromedp.WaitVisible(chromedp.ID("key")),
		chromedp.SendKeys(chromedp.ID("key"), key), chromedp.Submit(chromedp.ID("key")),
		chromedp.WaitVisible(chromedp.CSS(".who")))
}

func (c *chrome) logout() {
	c.t.Helper()
	c.do("log out", chromedp.Click(chromedp.CSS(`form[action="/logout"] button`)), chromedp.WaitVisible(chromedp.ID("key")))
}

// shot writes the tab's viewport as name.png into $LATCH_SCREENSHOTS.
func (c *chrome) shot(name string) {
	c.t.Helper()
	dir := os.Getenv("LATCH_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(c.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		c.t.Fatalf("screenshot %s: %v", name, err)
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join("..", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		c.t.Fatal(err)
	}
}

// noScriptErrors fails the test on any script error seen so far.
func (c *chrome) noScriptErrors() {
	c.t.Helper()
	select {
	case msg := <-c.errs:
		c.t.Fatalf("a script error in the console: %s", msg)
	default:
	}
}

// approvalFlow is a flow of tenant that recorded "reserve" then failed on
// worker-a, recorded "charge" on worker-b, and waits for signal
// "approve".
func (e *env) approvalFlow(tenant string) *store.Execution {
	e.t.Helper()
	ctx := context.Background()
	x := e.submit(tenant, store.Submission{Kind: "checkout", Queue: "orders", MaxAttempts: 3, DedupKey: "order-1042",
		TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", Payload: []byte(`{"order":1042}`)})
	l := e.claim(tenant, "worker-a")
	e.step(l, "reserve", `{"seat":"12A"}`)
	if _, err := e.store.Fail(ctx, &store.FailParams{ExecutionID: x.ID, Token: l.Token, Error: "card declined",
		Retry: true, Now: time.Now()}); err != nil {
		e.t.Fatalf("fail: %v", err)
	}
	l = e.claim(tenant, "worker-b")
	e.step(l, "charge", `{"amount":129.5}`)
	if _, err := e.store.Suspend(ctx, &store.SuspendParams{ExecutionID: x.ID, Token: l.Token, Step: "approval",
		Signal: "approve", Timeout: 24 * time.Hour, Now: time.Now()}); err != nil {
		e.t.Fatalf("suspend: %v", err)
	}
	return e.get(x.ID)
}

// busyHour reports an hour of activity for tenants a and b, so the charts
// have something to draw.
func (e *env) busyHour() {
	e.t.Helper()
	now := time.Now()
	var counts []store.ActivityCount
	for i := range 60 {
		m := store.MinuteOf(now).Add(-time.Duration(i) * time.Minute)
		counts = append(counts, store.ActivityCount{Tenant: "a", Minute: m, Starts: 20 + (i*7)%13 + i/3,
			Failures: map[bool]int{true: 1 + i%4, false: 0}[i%5 == 0]},
			store.ActivityCount{Tenant: "b", Minute: m, Starts: 5 + (i*3)%7})
	}
	if err := e.store.ReportServer(context.Background(), &store.ServerReport{ID: "host-2:77:ef01", Host: "host-2",
		Version: "v9.9.9", StartedAt: now.Add(-3 * time.Hour), Activity: counts, Now: now}); err != nil {
		e.t.Fatal(err)
	}
}

// TestBrowserPages: every page renders in a real browser under the CSP,
// for the admin and for a tenant, and a tenant sees nothing of another
// tenant's, not even by opening its URLs directly.
func TestBrowserPages(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	keyB := e.tenant("b")
	flow := e.approvalFlow("a") // first: its claims take the oldest queued execution
	e.failThenSucceed("a")
	e.observed()
	e.busyHour()
	e.call("PUT", "/api/schedules/nightly-report", key, `{"cron":"0 3 * * *","timezone":"Europe/Paris","kind":"report"}`)
	e.call("PUT", "/api/schedules/sweep", key, `{"every":"15m","kind":"sweeper","overlap":"skip"}`)
	e.call("PUT", "/api/schedules/b-secret-sched", keyB, `{"every":"1h","kind":"echo"}`)
	for _, idem := range []string{"one", "two", "one"} { // a run, a skipped tick, a dedup hit
		now := time.Now()
		if _, err := e.store.FireSchedule(context.Background(), &store.FireScheduleParams{Tenant: "a", Name: "sweep",
			Tick: now.Truncate(time.Second), Trigger: true, IdempotencyKey: idem, Now: now}); err != nil {
			t.Fatal(err)
		}
	}
	theirs := e.submit("b", store.Submission{Kind: "b-secret-kind"})

	c := e.chrome(t)
	c.login(e.admin)
	pages := []struct {
		path, wait, want, shot string
	}{
		{"/overview", "svg.chart.starts", "host-2", "overview"},
		{"/executions", "table tbody tr", "b-secret-kind", "executions"},
		{"/executions/" + flow.ID, "form.signal", "Run 2 · attempt 2 · worker worker-b", "execution"},
		{"/schedules", "a.open", "b-secret-sched", "schedules"},
		{"/schedule?tenant=a&name=sweep", "table.ticks", "overlap skip", "schedule"},
		{"/limits", "table.keys", "acct-b", "limits"},
		{"/tenants", "table.tenants meter", "disabled", "tenants"},
	}
	e.call("PATCH", "/api/tenants/b", e.admin, `{"disabled":true}`)
	e.call("PATCH", "/api/tenants/a", e.admin, `{"max_inflight":8}`)
	for _, p := range pages {
		c.open(p.path, p.wait)
		if body := c.text("main"); !strings.Contains(body, p.want) {
			t.Errorf("the admin's %s lacks %q:\n%s", p.path, p.want, body)
		}
		c.shot(p.shot)
	}
	c.noScriptErrors()
	e.call("PATCH", "/api/tenants/b", e.admin, `{"disabled":false}`)
	c.logout()

	c.login(key)
	for _, p := range pages {
		if p.path == "/tenants" {
			c.open(p.path, "h1")
			if h := c.text("h1"); h != "Not found" {
				t.Errorf("tenant a opening the tenants page: %q, want not found", h)
			}
			continue
		}
		c.open(p.path, p.wait)
		body := c.text("main")
		for _, leak := range []string{"b-secret", "acct-b", "secret-b-queue", "host-2", "worker-b1", theirs.ID} {
			if strings.Contains(body, leak) {
				t.Errorf("tenant a's %s shows tenant b's %q", p.path, leak)
			}
		}
		if p.path == "/overview" {
			c.shot("overview-tenant")
		}
	}
	for _, path := range []string{"/executions/" + theirs.ID, "/schedule?tenant=b&name=b-secret-sched",
		"/schedule?name=b-secret-sched", "/executions?tenant=b&kind=b-secret-kind"} {
		c.open(path, "h1")
		body := c.text("main")
		if strings.Contains(body, "b-secret") {
			t.Errorf("tenant a opening %s sees tenant b's data:\n%s", path, body)
		}
		if !strings.HasPrefix(path, "/executions?") && c.text("h1") != "Not found" {
			t.Errorf("tenant a opening %s: %q, want not found", path, c.text("h1"))
		}
	}
	c.noScriptErrors()
}

// TestBrowserActions: each action, with its confirmation, in a real
// browser: retry, force delete, the approval button, pause and resume,
// run now.
func TestBrowserActions(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	failed := e.failForGood("a")
	flow := e.approvalFlow("a")
	doomed := e.submit("a", store.Submission{Kind: "doomed"})
	e.call("PUT", "/api/schedules/sweep", key, `{"every":"15m","kind":"sweeper"}`)

	c := e.chrome(t)
	c.login(key)
	confirm := chromedp.CSS(`form.confirm button`)

	c.open("/executions/"+failed.ID, `form[action$="/retry"] button`)
	c.do("ask to retry", chromedp.Click(chromedp.CSS(`form[action$="/retry"] button`)), chromedp.WaitVisible(confirm))
	c.shot("confirm")
	if got := e.get(failed.ID).Status; got != store.StatusFailed {
		t.Fatalf("the confirmation page alone retried the execution: %s", got)
	}
	c.do("confirm the retry", chromedp.Click(confirm), chromedp.WaitVisible(chromedp.CSS(".status.queued")))
	if got := e.get(failed.ID).Status; got != store.StatusQueued {
		t.Fatalf("after a confirmed retry the execution is %s", got)
	}

	c.open("/executions/"+doomed.ID, `form[action$="/delete"] button`)
	c.do("force delete", chromedp.Click(chromedp.CSS(`form[action$="/delete"] button`)), chromedp.WaitVisible(confirm),
		chromedp.Click(confirm), chromedp.WaitVisible(chromedp.CSS(".notice")))
	if _, err := e.store.Get(context.Background(), &store.GetParams{ID: doomed.ID}); err == nil {
		t.Fatal("the execution is still there after a confirmed delete")
	}

	c.open("/executions/"+flow.ID, "form.signal")
	c.do("approve", chromedp.SetValue(chromedp.ID("signal-data"), `{"approved": true, "by": "ops"}`),
		chromedp.Click(chromedp.CSS("form.signal button")), chromedp.WaitVisible(confirm))
	if msg := c.text(".confirm-message"); !strings.Contains(msg, `{"approved":true,"by":"ops"}`) {
		t.Errorf("the approval's confirmation: %q", msg)
	}
	c.do("confirm the approval", chromedp.Click(confirm), chromedp.WaitVisible(chromedp.CSS(".status.queued")))
	page, err := e.store.Steps(context.Background(), &store.StepsParams{ID: flow.ID})
	var steps []*store.Step
	if page != nil {
		steps = page.Items
	}
	if err != nil || len(steps) != 3 || string(steps[2].Result) != `{"approved":true,"by":"ops"}` {
		t.Fatalf("the journal after the approval: %v %+v", err, steps)
	}

	c.open("/schedule?name=sweep", `form[action="/schedules/pause"] button`)
	c.do("pause", chromedp.Click(chromedp.CSS(`form[action="/schedules/pause"] button`)), chromedp.WaitVisible(confirm),
		chromedp.Click(confirm), chromedp.WaitVisible(chromedp.CSS(`form[action="/schedules/resume"] button`)))
	if s, _ := e.store.GetSchedule(context.Background(), &store.GetScheduleParams{Tenant: "a", Name: "sweep"}); s.Enabled {
		t.Fatal("the schedule is enabled after a confirmed pause")
	}
	c.do("resume", chromedp.Click(chromedp.CSS(`form[action="/schedules/resume"] button`)), chromedp.WaitVisible(confirm),
		chromedp.Click(confirm), chromedp.WaitVisible(chromedp.CSS(`form[action="/schedules/pause"] button`)))
	if s, _ := e.store.GetSchedule(context.Background(), &store.GetScheduleParams{Tenant: "a", Name: "sweep"}); !s.Enabled {
		t.Fatal("the schedule is paused after a confirmed resume")
	}

	c.do("run now", chromedp.Click(chromedp.CSS(`form[action="/schedules/trigger"] button`)), chromedp.WaitVisible(confirm),
		chromedp.Click(confirm), chromedp.WaitVisible(chromedp.CSS(`form[action$="/cancel"]`)))
	if kind := c.text("dl dd:nth-of-type(2)"); kind != "sweeper" {
		t.Errorf("Run now led to an execution of kind %q", kind)
	}
	c.noScriptErrors()
}
