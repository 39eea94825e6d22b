package console_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/latch-run/latch/store"
)

// TestBrowserSearch: in a real browser, the find box takes an id prefix
// (the list of those) or a whole id (its page), and Older then Newer
// come back to the same page.
func TestBrowserSearch(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	var ids []string
	for range 60 {
		ids = append(ids, e.submit("a", store.Submission{}).ID)
	}
	c := e.chrome(t)
	c.login(key)
	c.open("/executions", `input[name="id"]`)
	first := c.text("table tbody")

	c.do("find by prefix", chromedp.SendKeys(chromedp.CSS(`input[name="id"]`), ids[7][:30]),
		chromedp.Submit(chromedp.CSS(`input[name="id"]`)),
		chromedp.WaitVisible(chromedp.CSS(`input[name="id"][value="`+ids[7][:30]+`"]`)))
	if rows := c.text("table tbody"); !strings.Contains(rows, ids[7]) || strings.Contains(rows, ids[59]) {
		t.Errorf("the prefix's list: %q", rows)
	}

	c.open("/executions", `input[name="id"]`)
	c.do("find a whole id", chromedp.SendKeys(chromedp.CSS(`input[name="id"]`), ids[3]),
		chromedp.Submit(chromedp.CSS(`input[name="id"]`)), chromedp.WaitVisible(chromedp.CSS(`.actions`)))
	if h := c.text("h1"); !strings.Contains(h, ids[3]) {
		t.Errorf("the whole id led to %q", h)
	}

	c.open("/executions", `input[name="id"]`)
	c.do("older", chromedp.Click(chromedp.CSS(`p.more a:last-child`)), chromedp.WaitVisible(chromedp.CSS(`a[rel="prev"]`)))
	if rows := c.text("table tbody"); !strings.Contains(rows, ids[0]) || strings.Contains(rows, ids[59]) {
		t.Errorf("the older page: %q", rows)
	}
	c.do("newer", chromedp.Click(chromedp.CSS(`a[rel="prev"]`)), chromedp.WaitNotPresent(chromedp.CSS(`a[rel="prev"]`)))
	if rows := c.text("table tbody"); rows != first {
		t.Errorf("Newer did not come back to the first page")
	}
	c.noScriptErrors()
}
