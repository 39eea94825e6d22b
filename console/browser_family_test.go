package console_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserFamily: in a real browser, a parent's page says why it waits
// (for the children of a step) and shows its children as a tree with
// their own children; a count opens the list of the children in that
// status, and a child's page leads back to its parent.
func TestBrowserFamily(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	parent, kids := e.batchFamily("a")

	c := e.chrome(t)
	c.login(key)
	c.open("/executions/"+parent.ID, "section.family ul.tree")
	if why := c.text("section.gates"); !strings.Contains(why, "Why it waits") ||
		!strings.Contains(why, "Waiting for the children of step ship to end.") {
		t.Errorf("the parent's explanation: %q", why)
	}
	fam := c.text("section.family")
	for _, want := range []string{"Spawned 4 by steps ship (3), invoice (1).", "1 succeeded", "1 suspended",
		"step ship", "step invoice", "label", "print-label", kids[3].ID} {
		if !strings.Contains(fam, want) {
			t.Errorf("the parent's family lacks %q:\n%s", want, fam)
		}
	}
	if n, err := chromedp.Run(c.ctx, chromedp.Evaluate[int](`document.querySelectorAll("section.family li.child").length`)); err != nil || n != 6 {
		t.Errorf("the tree shows %d children (%v), want 4 and 2 of the first's", n, err)
	}
	c.shot("execution-family")

	c.do("open the succeeded children", chromedp.Click(chromedp.CSS(`section.family a.count.succeeded`)),
		chromedp.WaitVisible(chromedp.CSS(`td.step`)))
	if h := c.text("h1"); !strings.Contains(h, "Children of "+parent.ID) {
		t.Errorf("the count led to %q", h)
	}
	if rows := c.text("table tbody"); !strings.Contains(rows, kids[2].ID) || strings.Contains(rows, kids[0].ID) {
		t.Errorf("the succeeded children: %q", rows)
	}
	c.shot("executions-children")
	if got := c.tabTitle(); got != "children of exec "+parent.ID+" · latch" {
		t.Errorf("the children list's tab title %q", got)
	}

	c.open("/executions/"+kids[0].ID, "dd.parent a")
	if w := c.text("dd.waits-for"); !strings.HasPrefix(w, "Waiting for the children of step label to end until ") {
		t.Errorf("the child waits for %q", w)
	}
	c.do("go up to the parent", chromedp.Click(chromedp.CSS("dd.parent a")), chromedp.WaitVisible(chromedp.CSS("section.family")))
	if h := c.text("h1"); !strings.Contains(h, parent.ID) {
		t.Errorf("the parent link led to %q", h)
	}

	// On a phone the tree and the filtered list fit the screen.
	c.do("a phone's viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulatePortrait))
	for _, p := range []struct{ path, wait string }{
		{"/executions/" + parent.ID, "section.family ul.tree"}, {"/executions/" + kids[0].ID, "dd.parent a"},
		{"/executions?parent_id=" + parent.ID, "td.step"},
	} {
		c.open(p.path, p.wait)
		if w := eval[int](c, `document.documentElement.scrollWidth`); w > 390 {
			t.Errorf("at 390 px wide %s is %d px wide", p.path, w)
		}
	}
	c.noScriptErrors()
}
