package console_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// TestExecutionsFindByID: the find box takes a whole id (straight to its
// page) or its first 8 or more characters (the list of those that start
// so), and a tenant never finds another's.
func TestExecutionsFindByID(t *testing.T) {
	e := newEnv(t)
	keyA := e.tenant("a")
	e.tenant("b")
	var mine []string
	for range 5 {
		mine = append(mine, e.submit("a", store.Submission{}).ID)
	}
	theirs := e.submit("b", store.Submission{})
	b := e.browser()
	b.login(keyA)

	// A whole id, in any case and with spaces around it, redirects.
	p := b.do("GET", "/executions?id="+url.QueryEscape(" "+strings.ToUpper(mine[2])+" "), nil)
	if p.status != http.StatusSeeOther || p.location != "/executions/"+mine[2] {
		t.Errorf("find %s: %d to %q, want 303 to its page", mine[2], p.status, p.location)
	}
	// Another tenant's whole id is not found, and not told apart from
	// an id nobody has.
	for _, id := range []string{theirs.ID, "01234567-89ab-7cde-8f01-23456789abcd"} {
		p := b.do("GET", "/executions?id="+id, nil)
		if p.status != http.StatusNotFound || !strings.Contains(p.body, "No execution "+id+".") || p.location != "" {
			t.Errorf("find %s as a: %d to %q, want 404 saying there is none", id, p.status, p.location)
		}
	}
	// A prefix lists exactly those of mine that start with it.
	for _, n := range []int{8, 13, 24, 35} {
		prefix := mine[4][:n]
		var want []string
		for i := len(mine) - 1; i >= 0; i-- {
			if strings.HasPrefix(mine[i], prefix) {
				want = append(want, mine[i])
			}
		}
		p := b.do("GET", "/executions?id="+prefix, nil)
		if got := p.ids(); p.status != http.StatusOK || !slices.Equal(got, want) {
			t.Errorf("find prefix %s: %d, %v, want %v", prefix, p.status, got, want)
		}
		if !strings.Contains(p.body, `name="id" value="`+prefix+`"`) {
			t.Errorf("find prefix %s: the box does not keep it", prefix)
		}
	}
	// b's id prefix finds none of b's for a.
	if p := b.do("GET", "/executions?id="+theirs.ID[:35], nil); slices.Contains(p.ids(), theirs.ID) {
		t.Errorf("a finds b's execution by its prefix")
	}
	// What is neither an id nor 8 of its characters is refused.
	for _, bad := range []string{"0190abc", "not-an-id", mine[0][:8] + "x", "0190abcd%27--"} {
		p := b.do("GET", "/executions?id="+url.QueryEscape(bad), nil)
		if p.status != http.StatusBadRequest || !strings.Contains(p.body, "Find takes an execution id") || len(p.ids()) != 0 {
			t.Errorf("find %q: %d, ids %v; want 400 saying what it takes", bad, p.status, p.ids())
		}
	}
	if p := b.do("GET", "/executions?id="+mine[0][:8]+"&parent_id="+mine[0], nil); p.status != http.StatusBadRequest {
		t.Errorf("find by prefix with a parent: %d, want 400", p.status)
	}

	// The admin finds any tenant's, by whole id and by prefix.
	admin := e.browser()
	admin.login(e.admin)
	if p := admin.do("GET", "/executions?id="+theirs.ID, nil); p.status != http.StatusSeeOther || p.location != "/executions/"+theirs.ID {
		t.Errorf("admin find %s: %d to %q", theirs.ID, p.status, p.location)
	}
	if p := admin.do("GET", "/executions?id="+theirs.ID[:30], nil); !slices.Contains(p.ids(), theirs.ID) {
		t.Errorf("admin find by prefix misses b's execution")
	}
}

// TestExecutionsFindByDedupKey: the dedup key field finds the tenant's
// execution of that key, never another tenant's of the same key.
func TestExecutionsFindByDedupKey(t *testing.T) {
	e := newEnv(t)
	keyA := e.tenant("a")
	e.tenant("b")
	mine := e.submit("a", store.Submission{DedupKey: "order-42"})
	e.submit("a", store.Submission{DedupKey: "order-43"})
	e.submit("b", store.Submission{DedupKey: "order-42"})
	b := e.browser()
	b.login(keyA)
	if ids := b.do("GET", "/executions?dedup_key=order-42", nil).ids(); !slices.Equal(ids, []string{mine.ID}) {
		t.Errorf("dedup key order-42 as a: %v, want only %s", ids, mine.ID)
	}
}

var (
	olderLink = regexp.MustCompile(`<a href="([^"]+)">Older executions</a>`)
	newerLink = regexp.MustCompile(`<a href="([^"]+)" rel="prev">Newer executions</a>`)
	newestLnk = regexp.MustCompile(`<a href="([^"]+)" rel="first">Newest</a>`)
)

func linkOf(re *regexp.Regexp, body string) string {
	m := re.FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

// TestExecutionsPageBothWays: Older links go to the end and Newer links
// come back through the same pages, filters kept; the first page has no
// way back, and every later one a Newest link.
func TestExecutionsPageBothWays(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	for i := range 130 {
		kind := "even"
		if i%2 == 1 {
			kind = "odd"
		}
		e.submit("a", store.Submission{Kind: kind})
	}
	b := e.browser()
	b.login(key)
	for _, start := range []string{"/executions", "/executions?kind=odd"} {
		var forward [][]string
		path := start
		for path != "" {
			p := b.do("GET", path, nil)
			if len(forward) == 0 && (linkOf(newerLink, p.body) != "" || linkOf(newestLnk, p.body) != "") {
				t.Errorf("%s: the first page links back", start)
			}
			if len(forward) > 0 && linkOf(newestLnk, p.body) == "" {
				t.Errorf("%s: page %d has no Newest link", start, len(forward)+1)
			}
			forward = append(forward, p.ids())
			if len(forward) > 10 {
				t.Fatal("paging did not end")
			}
			path = linkOf(olderLink, p.body)
			if path == "" {
				// Back from the last page, one page at a time.
				var back [][]string
				for q := p; ; {
					newer := linkOf(newerLink, q.body)
					if newer == "" {
						break
					}
					if strings.Contains(start, "kind=odd") && !strings.Contains(newer, "kind=odd") {
						t.Errorf("Newer link %s drops the filter", newer)
					}
					q = b.do("GET", newer, nil)
					back = append(back, q.ids())
				}
				if len(back) != len(forward)-1 {
					t.Fatalf("%s: %d pages forward, %d back", start, len(forward), len(back))
				}
				for i, ids := range back {
					if want := forward[len(forward)-2-i]; !slices.Equal(ids, want) {
						t.Errorf("%s: page %d back differs from the way forward", start, len(forward)-1-i)
					}
				}
			}
		}
		wantPages := 3
		if strings.Contains(start, "odd") {
			wantPages = 2
		}
		if len(forward) != wantPages {
			t.Errorf("%s: %d pages, want %d", start, len(forward), wantPages)
		}
	}
	// A forged back cursor is dropped, not followed.
	p := b.do("GET", "/executions?after="+strings.Repeat("0", 8)+"-0000-7000-8000-000000000000&back=x'--", nil)
	if p.status != http.StatusOK || linkOf(newerLink, p.body) != "" || linkOf(newestLnk, p.body) == "" {
		t.Errorf("forged back: %d, newer %q, newest %q", p.status, linkOf(newerLink, p.body), linkOf(newestLnk, p.body))
	}
}

// TestExecutionsCounts: a list of one page says how many exactly; running
// executions count "about N" from QueueStats; other long lists "many".
func TestExecutionsCounts(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	for range 3 {
		e.submit("a", store.Submission{Kind: "few"})
	}
	for range 60 {
		e.submit("a", store.Submission{Kind: "lots"})
	}
	for range 52 {
		e.claim("a", "w")
	}
	b := e.browser()
	b.login(key)
	for path, want := range map[string]string{
		"/executions?kind=few":       `<span class="count">3 executions</span>`,
		"/executions?kind=lots":      `<span class="count">50 shown of many</span>`,
		"/executions?status=running": `<span class="count">50 shown of about 52 running</span>`,
		"/executions?status=queued":  `<span class="count">11 executions</span>`,
	} {
		if p := b.do("GET", path, nil); !strings.Contains(p.body, want) {
			t.Errorf("%s does not say %s", path, want)
		}
	}
	// QueueStats does not count by kind: no estimate then.
	if p := b.do("GET", "/executions?status=running&kind=lots", nil); strings.Contains(p.body, "about") {
		t.Errorf("running of one kind claims an estimate")
	}
}

// failWith ends a new execution of tenant failed for good with msg.
func (e *env) failWith(tenant, msg string) *store.Execution {
	e.t.Helper()
	x := e.submit(tenant, store.Submission{MaxAttempts: 1})
	l := e.claim(tenant, "worker-f")
	if _, err := e.store.Fail(context.Background(), &store.FailParams{ExecutionID: x.ID, Token: l.Token,
		Error: msg, Now: time.Now()}); err != nil {
		e.t.Fatalf("fail: %v", err)
	}
	return x
}

// TestExecutionsFindByError: error text is found among the failed
// executions one page examines (500, the latest first), says how many it
// examined, and pages on to older ones; another tenant's never show.
func TestExecutionsFindByError(t *testing.T) {
	e := newEnv(t)
	keyA := e.tenant("a")
	e.tenant("b")
	old := e.failWith("a", "Card DECLINED by issuer")
	for range 500 {
		e.failWith("a", "timeout")
	}
	recent := e.failWith("a", "card declined: insufficient funds")
	e.failWith("b", "card declined")
	e.submit("a", store.Submission{}) // queued: not examined
	b := e.browser()
	b.login(keyA)
	p := b.do("GET", "/executions?error="+url.QueryEscape(" card declined "), nil)
	if ids := p.ids(); p.status != http.StatusOK || !slices.Equal(ids, []string{recent.ID}) {
		t.Fatalf("error search, first page: %d %v, want only %s", p.status, ids, recent.ID)
	}
	if !strings.Contains(p.body, "1 with that error among the latest 500 failed examined") {
		t.Errorf("the first page does not say what it examined")
	}
	next := linkOf(olderLink, p.body)
	if !strings.Contains(next, "error=card+declined") {
		t.Fatalf("Older link %q does not keep the search", next)
	}
	p = b.do("GET", next, nil)
	if ids := p.ids(); !slices.Equal(ids, []string{old.ID}) || !strings.Contains(p.body, "among the next 2 failed examined") {
		t.Errorf("error search, second page: %v, want only %s", ids, old.ID)
	}
	if p := b.do("GET", "/executions?error="+strings.Repeat("x", 201), nil); p.status != http.StatusBadRequest {
		t.Errorf("a 201-character error search: %d, want 400", p.status)
	}
}
