package console_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/latch-run/latch/store"
)

// liveSwapped marks the page's live part, makes the store change, and
// waits for live.js to swap in a fresh one (the mark gone).
func (c *chrome) liveSwapped(tenant string) {
	c.t.Helper()
	eval[bool](c, `document.querySelector('#live .jsonview').dataset.old = '1', true`)
	c.e.submit(tenant, store.Submission{Kind: "nudge"})
	for deadline := time.Now().Add(15 * time.Second); ; {
		if eval[bool](c, `(document.querySelector('#live .jsonview') || {dataset: {old: '1'}}).dataset.old === undefined`) {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatal("the live part was not refreshed after a change")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A person on an execution's page folds and unfolds its payload, keeps
// the folds across the live part's refreshes, and copies the payload:
// the stored value when shown whole, what the raw link serves when cut.
// The clipboard is read through a hook the test puts on
// navigator.clipboard.writeText (headless Chrome has no clipboard to read
// back), which is what the Copy button calls.
func TestBrowserJSONViewFoldsAndCopies(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	tags := make([]string, 25)
	for i := range tags {
		tags[i] = "t" + string(rune('a'+i))
	}
	tagList, _ := json.Marshal(tags)
	payload := []byte(`{"note":"</script><img src=x onerror=alert(1)> \"quoted\"","order":{"id":"o-1","lines":[{"n":1,"sku":"a"}]},` +
		`"tags":` + string(tagList) + `}`)
	x := e.submit("a", store.Submission{Kind: "ship", Payload: json.RawMessage(payload)})
	big := `{"blob":"` + strings.Repeat("x", 40<<10) + `"}`
	y := e.submit("a", store.Submission{Kind: "ship", Payload: json.RawMessage(big)})

	c := e.chrome(t)
	c.login(key)
	c.open("/executions/"+x.ID, "#live .jsonview details.jn")
	c.liveSwapped("a")

	// The tags (25 items) start folded, saying what they hold; a click
	// unfolds them, another folds them again.
	tagsFold := `[...document.querySelectorAll('#live .jsonview details.jn')].find(d => d.querySelector(':scope > summary > .jk')?.textContent === '"tags"')`
	if eval[bool](c, tagsFold+`.open`) {
		t.Fatal("25 tags are unfolded when the page opens")
	}
	n := eval[string](c, tagsFold+`.dataset.n`)
	summary := `#live .jsonview details.jn[data-n="` + n + `"] > summary`
	if s := c.text(summary); !strings.Contains(s, `"tags": […] 25 items`) {
		t.Errorf("the folded tags read %q", s)
	}
	c.do("unfold the tags", chromedp.Click(chromedp.CSS(summary)))
	if !eval[bool](c, tagsFold+`.open`) || !strings.Contains(c.text(`#live .jsonview details.jn[data-n="`+n+`"]`), `"tm"`) {
		t.Fatal("a click on the folded tags did not unfold them")
	}
	if s := c.text(summary); strings.Contains(s, "25 items") {
		t.Errorf("the unfolded tags still read %q", s)
	}
	// The top level folds too.
	c.do("fold the payload", chromedp.Click(chromedp.CSS(`#live .jsonview details.jn[data-n="0"] > summary`)))
	if eval[bool](c, `document.querySelector('#live .jsonview details.jn[data-n="0"]').open`) ||
		!strings.Contains(c.text(`#live .jsonview details.jn[data-n="0"] > summary`), "{…} 3 keys") {
		t.Fatal("a click on the payload's top did not fold it")
	}
	c.do("unfold the payload", chromedp.Click(chromedp.CSS(`#live .jsonview details.jn[data-n="0"] > summary`)))

	// A refresh of the live part keeps the folds as they were left, and
	// the Copy button.
	c.liveSwapped("a")
	if !eval[bool](c, tagsFold+`.open`) || !eval[bool](c, `document.querySelector('#live .jsonview details.jn[data-n="0"]').open`) {
		t.Error("a refresh of the live part undid the folds")
	}

	// The hostile note is text on the page, nothing more.
	if eval[int](c, `document.querySelectorAll('#live .jsonview img, #live .jsonview script').length`) != 0 {
		t.Error("the payload's markup became elements")
	}

	// Copy copies the stored value, not the folded text.
	eval[bool](c, `navigator.clipboard.writeText = text => { window.copied = text; return Promise.resolve(); }, true`)
	c.do("copy the payload", chromedp.WaitVisible(chromedp.CSS(`#live .jsonview button.copy`)),
		chromedp.Click(chromedp.CSS(`#live .jsonview button.copy`)),
		chromedp.WaitVisible(chromedp.CSS(`#live .jsonview .copied:not(:empty)`)))
	if got := eval[string](c, `window.copied || ''`); got != string(payload) {
		t.Errorf("Copy copied %q, want the stored payload %s", got, payload)
	}
	if s := c.text(`#live .jsonview .copied`); s != "Copied" {
		t.Errorf("after Copy the page says %q", s)
	}

	// A payload cut on the page: the button says it copies the raw JSON,
	// and copies what the raw link serves.
	c.open("/executions/"+y.ID, "#live .jsonview p.truncated")
	eval[bool](c, `navigator.clipboard.writeText = text => { window.copied = text; return Promise.resolve(); }, true`)
	c.do("copy a cut payload", chromedp.WaitVisible(chromedp.CSS(`#live .jsonview button.copy`)),
		chromedp.Click(chromedp.CSS(`#live .jsonview button.copy`)),
		chromedp.WaitVisible(chromedp.CSS(`#live .jsonview .copied:not(:empty)`)))
	if label := c.text(`#live .jsonview button.copy`); label != "Copy raw JSON" {
		t.Errorf("a cut view's Copy button reads %q", label)
	}
	if got := eval[string](c, `window.copied || ''`); got != big {
		t.Errorf("Copy on a cut view copied %d bytes, want the %d the raw link serves", len(got), len(big))
	}
	c.noScriptErrors()
}
