package console_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/latch-run/latch/store"
)

// TestBrowserSubscriptions: in a real browser, the navigation leads to
// the subscriptions page, which lists the tenant's subscriptions; a flow
// waiting for an event says so in words, with no signal form.
func TestBrowserSubscriptions(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	e.subscribe("a", "ship-paid", "order-paid", "ship-order", "orders", true)
	e.subscribe("a", "audit-paid", "order-paid", "audit", "", false)
	e.subscribe("a", "welcome", "user-signed-up", "send-welcome", "mail", true)

	c := e.chrome(t)
	c.login(key)
	c.do("open the subscriptions", chromedp.Click(chromedp.CSS(`header nav a[href="/subscriptions"]`)),
		chromedp.WaitVisible(chromedp.CSS("table.subscriptions")))
	body := c.text("table.subscriptions tbody")
	for _, want := range []string{"ship-paid", "order-paid", "ship-order", "orders", "audit-paid", "welcome", "user-signed-up"} {
		if !strings.Contains(body, want) {
			t.Errorf("the subscriptions page lacks %q:\n%s", want, body)
		}
	}
	if got := c.tabTitle(); got != "Subscriptions · latch" {
		t.Errorf("the subscriptions page's tab title %q", got)
	}
	c.shot("subscriptions")

	x := e.submit("a", store.Submission{Kind: "checkout"})
	l := e.claimID("a", x.ID)
	if _, err := e.store.Suspend(context.Background(), &store.SuspendParams{ExecutionID: x.ID, Token: l.Token,
		Step: "paid", Event: "order-paid", Timeout: time.Hour, Now: time.Now()}); err != nil {
		t.Fatalf("suspend for the event: %v", err)
	}
	c.open("/executions/"+x.ID, "dd.waits-for")
	if w := c.text("dd.waits-for"); !strings.HasPrefix(w, "Waiting for event order-paid until ") {
		t.Errorf("the flow waits for %q", w)
	}
	if why := c.text("section.gates"); !strings.Contains(why, "Waiting for event order-paid until ") {
		t.Errorf("Why it waits: %q", why)
	}
	if n := eval[int](c, `document.querySelectorAll("form.signal").length`); n != 0 {
		t.Error("a wait for an event offers the signal form")
	}
	c.noScriptErrors()
}
