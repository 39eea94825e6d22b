package console_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/latch-run/latch/store"
)

// eval is the value of a script run in the tab.
func eval[T any](c *chrome, script string) T {
	c.t.Helper()
	v, err := chromedp.Run(c.ctx, chromedp.Evaluate[T](script))
	if err != nil {
		c.t.Fatalf("evaluate %s: %v", script, err)
	}
	return v
}

// tabTitle is the tab's title.
func (c *chrome) tabTitle() string {
	c.t.Helper()
	s, err := chromedp.Run(c.ctx, chromedp.Title())
	if err != nil {
		c.t.Fatalf("read the title: %v", err)
	}
	return s
}

// colorScheme makes the tab's prefers-color-scheme scheme ("" = the
// browser's own).
func (c *chrome) colorScheme(scheme string) {
	c.t.Helper()
	p := emulation.SetEmulatedMediaParams{}
	if scheme != "" {
		p.Features = []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}
	}
	c.do("emulate prefers-color-scheme "+scheme, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, p)
		return err
	}))
}

// luminance is the relative luminance (0 black, 1 white) of the computed
// CSS property prop of the first element sel matches.
func (c *chrome) luminance(sel, prop string) float64 {
	c.t.Helper()
	return eval[float64](c, `(() => {
		const m = getComputedStyle(document.querySelector(`+jsString(sel)+`)).`+prop+`.match(/[\d.]+/g).map(Number);
		const lin = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
		return 0.2126 * lin(m[0]) + 0.7152 * lin(m[1]) + 0.0722 * lin(m[2]);
	})()`)
}

func jsString(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

// TestBrowserConsoleAsAPersonMeetsIt (issue 31): in a real browser, a 404
// keeps the navigation; a signal refused as not JSON keeps what was typed
// and leads back to the execution; a schedule shows the attempts and
// timeout its executions get; every tab names its page; the runs of a
// retried execution are numbered apart; at 390 px wide no page is wider
// than the screen and step results wrap as text, not a character a line;
// with prefers-color-scheme dark the pages are dark.
func TestBrowserConsoleAsAPersonMeetsIt(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	flow := e.approvalFlow("a")
	done := e.failThenSucceed("a") // a step result of 500 x's
	retried := e.retriedTwice("a")
	deep := e.submit("a", store.Submission{Kind: "nested", Payload: deepJSON(10000)})
	e.call("PUT", "/api/schedules/sweep", key, `{"every":"15m","kind":"sweeper"}`)

	c := e.chrome(t)
	c.login(key)

	c.open("/schedule?name=sweep", "dl")
	if got := c.tabTitle(); got != "schedule sweep · a · latch" {
		t.Errorf("the schedule's tab title %q", got)
	}
	if body := c.text("dl"); !strings.Contains(body, "3, timeout 300 s") || strings.Contains(body, "default,") {
		t.Errorf("the schedule's settings do not say its effective attempts and timeout:\n%s", body)
	}

	c.open("/no/such/page", "h1")
	if h, title := c.text("h1"), c.tabTitle(); h != "Not found" || title != "Not found · latch" {
		t.Errorf("an unknown page: %q, tab %q", h, title)
	}
	c.do("log out from a 404", chromedp.WaitVisible(chromedp.CSS(`header nav`)),
		chromedp.WaitVisible(chromedp.CSS(`form[action="/logout"] button`)))

	c.open("/executions/"+flow.ID, "form.signal")
	if got := c.tabTitle(); got != "exec "+flow.ID+" · checkout · latch" {
		t.Errorf("the execution's tab title %q", got)
	}
	typed := `{"approved": yes}`
	back := chromedp.CSS(`main a[href="/executions/` + flow.ID + `"]`)
	c.do("send data that is not JSON", chromedp.SetValue(chromedp.ID("signal-data"), typed),
		chromedp.Click(chromedp.CSS("form.signal button")), chromedp.WaitVisible(back))
	if h := c.text("h1"); h != "Data is not JSON" {
		t.Fatalf("after sending data that is not JSON: %q", h)
	}
	if got := eval[string](c, `document.getElementById("signal-data").value`); got != typed {
		t.Errorf("the refusal's form holds %q, want what was typed, %q", got, typed)
	}
	c.do("go back to the execution", chromedp.Click(back), chromedp.WaitVisible(chromedp.CSS(`table.steps`)))
	if got := e.get(flow.ID).Status; got != store.StatusSuspended {
		t.Errorf("the refused signal left the execution %s", got)
	}

	c.open("/executions/"+retried.ID, "table.attempts")
	if got := c.text("table.attempts tbody tr:nth-child(3)"); !strings.HasPrefix(strings.TrimSpace(got), "3") ||
		!strings.Contains(got, "1 after a retry") {
		t.Errorf("the third run of a retried execution reads %q, want run 3, attempt 1 after a retry", got)
	}

	// A phone: 390 px wide.
	c.do("a phone's viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulatePortrait))
	for _, p := range []struct{ path, wait string }{
		{"/executions", "table tbody tr"}, {"/executions/" + flow.ID, "form.signal"}, {"/executions/" + done.ID, "table.steps"},
		{"/executions/" + retried.ID, "table.attempts"}, {"/executions/" + deep.ID, "p.truncated"},
		{"/schedules", "a.open"}, {"/schedule?name=sweep", "table.ticks"}, {"/overview", "svg.chart"}, {"/limits", "table.keys"},
		{"/no/such/page", "h1"},
	} {
		c.open(p.path, p.wait)
		if w := eval[int](c, `document.documentElement.scrollWidth`); w > 390 {
			t.Errorf("at 390 px wide %s is %d px wide", p.path, w)
		}
		if p.path == "/executions/"+done.ID {
			c.shot("phone-execution")
			// The 500-character result wraps as text: a column of a few
			// characters would be a character a line.
			if w := eval[float64](c, `document.querySelector("table.steps tr.tick:last-child td.result").getBoundingClientRect().width`); w < 150 {
				t.Errorf("at 390 px wide a step result's column is %.0f px wide", w)
			}
		}
	}

	// Dark.
	c.do("a desktop's viewport", chromedp.EmulateViewport(shotW, shotH))
	c.colorScheme("dark")
	c.open("/executions/"+done.ID, "table.steps")
	if l := c.luminance("body", "backgroundColor"); l > 0.1 {
		t.Errorf("with prefers-color-scheme dark the page's background has luminance %.2f", l)
	}
	if l := c.luminance("body", "color"); l < 0.5 {
		t.Errorf("with prefers-color-scheme dark the text has luminance %.2f", l)
	}
	if l := c.luminance(".json", "backgroundColor"); l > 0.1 {
		t.Errorf("with prefers-color-scheme dark a JSON block's background has luminance %.2f", l)
	}
	c.shot("dark-execution")
	c.colorScheme("light")
	c.open("/executions/"+done.ID, "table.steps")
	if l := c.luminance("body", "backgroundColor"); l < 0.9 {
		t.Errorf("with prefers-color-scheme light the page's background has luminance %.2f", l)
	}
	c.noScriptErrors()
}
