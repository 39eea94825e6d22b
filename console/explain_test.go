package console_test

import (
	"strings"
	"testing"

	"github.com/latch-run/latch/store"
)

// TestExecutionPageSaysWhyItWaits: a waiting execution's page names each
// gate that holds it back, with the holders of its concurrency key linked;
// a running one's page has no such section.
func TestExecutionPageSaysWhyItWaits(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	keyed := store.Submission{Kind: "resize-image", ConcurrencyKey: "acct", ConcurrencyLimit: 1}
	first := e.submit("a", keyed)
	second := e.submit("a", keyed)
	e.claim("a", "worker-1")

	b := e.browser()
	b.login(key)
	p := b.do("GET", "/executions/"+second.ID, nil)
	why := section(p.body, `<section class="gates">`)
	for _, want := range []string{"Why it waits", `class="gate concurrency_key"`, `class="gate no_worker"`,
		`&#34;resize-image&#34;`, `<a class="id" href="/executions/` + first.ID + `">`} {
		if !strings.Contains(why, want) {
			t.Errorf("the waiting execution's page lacks %q:\n%s", want, p.body)
		}
	}
	p = b.do("GET", "/executions/"+first.ID, nil)
	if strings.Contains(p.body, "Why it waits") {
		t.Errorf("the running execution's page explains a wait:\n%s", p.body)
	}
}
