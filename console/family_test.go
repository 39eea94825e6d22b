package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latch-run/latch/console"
	"github.com/latch-run/latch/store"
)

// spawn has the running execution of lease l spawn n children of kind
// under step.
func (e *env) spawn(l store.Lease, step, kind string, n int) []store.ChildRef {
	e.t.Helper()
	items := make([]store.Submission, n)
	for i := range items {
		items[i] = store.Submission{Kind: kind, Payload: []byte(fmt.Sprintf(`{"n":%d}`, i))}
	}
	res, err := e.store.Spawn(context.Background(), &store.SpawnParams{ExecutionID: l.ExecutionID, Token: l.Token,
		Step: step, Items: items, Now: time.Now()})
	if err != nil || len(res.Children) != n {
		e.t.Fatalf("spawn %s: %v %+v", step, err, res)
	}
	return res.Children
}

// claimID claims until it holds execution id (the tenant's other ready
// executions it claims on the way are left running) and returns its lease.
func (e *env) claimID(tenant, id string) store.Lease {
	e.t.Helper()
	for range 50 {
		if l := e.claim(tenant, "worker-"+tenant); l.ExecutionID == id {
			return l
		}
	}
	e.t.Fatalf("claimed 50 executions of %s, none %s", tenant, id)
	return store.Lease{}
}

// batchFamily is a flow of tenant ("batch") that spawned 3 children
// under "ship" and 1 under "invoice", and waits for the children of
// "ship"; its first "ship" child spawned 2 children of its own under
// "label" and waits for them, for an hour at most; its last "ship" child
// succeeded. It returns the parent and its children in spawn order.
func (e *env) batchFamily(tenant string) (*store.Execution, []store.ChildRef) {
	e.t.Helper()
	ctx := context.Background()
	parent := e.submit(tenant, store.Submission{Kind: "batch", Priority: 9})
	l := e.claimID(tenant, parent.ID)
	kids := e.spawn(l, "ship", "ship-parcel", 3)
	kids = append(kids, e.spawn(l, "invoice", "send-invoice", 1)...)
	if _, err := e.store.Suspend(ctx, &store.SuspendParams{ExecutionID: parent.ID, Token: l.Token, Step: "shipped",
		Children: "ship", Now: time.Now()}); err != nil {
		e.t.Fatalf("suspend for the children: %v", err)
	}
	cl := e.claimID(tenant, kids[0].ID)
	e.spawn(cl, "label", "print-label", 2)
	if _, err := e.store.Suspend(ctx, &store.SuspendParams{ExecutionID: kids[0].ID, Token: cl.Token, Step: "labelled",
		Children: "label", Timeout: time.Hour, Now: time.Now()}); err != nil {
		e.t.Fatalf("suspend for the labels: %v", err)
	}
	last := e.claimID(tenant, kids[2].ID)
	if _, err := e.store.Complete(ctx, &store.CompleteParams{ExecutionID: kids[2].ID, Token: last.Token,
		Result: []byte(`{"tracking":"Z1"}`), Now: time.Now()}); err != nil {
		e.t.Fatalf("complete: %v", err)
	}
	return e.get(parent.ID), kids
}

// TestExecutionFamily: a parent's page shows its children as a tree under
// their spawn steps, with their statuses, each child's own children one
// level down, counts per status linked to the filtered list, and says in
// words that it waits for the children of a step; a child's page links its
// parent and says what it waits for.
func TestExecutionFamily(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	parent, kids := e.batchFamily("a")
	b := e.browser()
	b.login(key)

	p := b.do("GET", "/executions/"+parent.ID, nil)
	if p.status != http.StatusOK {
		t.Fatalf("parent page: %d", p.status)
	}
	fam := block(p.body, `<section class="family">`)
	for _, want := range []string{
		"Spawned 4 by steps <strong>ship</strong> (3), <strong>invoice</strong> (1).",
		`<span class="step">step ship</span>`, `<span class="step">step invoice</span>`,
		`href="/executions?parent_id=` + parent.ID + `&amp;status=succeeded">1 succeeded</a>`,
		`">1 suspended</a>`, `">1 running</a>`,
		`<span class="step">label</span>`, "print-label",
		`<a class="all-children" href="/executions?parent_id=` + parent.ID + `">`,
	} {
		if !strings.Contains(fam, want) {
			t.Errorf("the parent's family lacks %q:\n%s", want, fam)
		}
	}
	// Spawn order, steps in turn: ship's three, then invoice's one.
	at := -1
	for i, k := range kids {
		j := strings.Index(fam, `href="/executions/`+k.ID+`"`)
		if j < at {
			t.Errorf("child %d (%s) is out of spawn order", i, k.ID)
		}
		at = j
	}
	why := block(p.body, `<section class="gates">`)
	if !strings.Contains(why, "Waiting for the children of step ship to end.") || strings.Contains(why, "signal") {
		t.Errorf("the parent's explanation:\n%s", why)
	}
	if strings.Contains(p.body, `class="signal"`) {
		t.Error("a wait for children offers the signal form")
	}

	c := b.do("GET", "/executions/"+kids[0].ID, nil)
	for _, want := range []string{`<dd class="parent"><a class="id" href="/executions/` + parent.ID + `">`,
		"spawn step <strong>ship</strong>, depth 1",
		`<dd class="waits-for">Waiting for the children of step label to end until `} {
		if !strings.Contains(c.body, want) {
			t.Errorf("the child's page lacks %q:\n%s", want, c.body)
		}
	}
	if why := block(c.body, `<section class="gates">`); !strings.Contains(why, ", then it times out.") {
		t.Errorf("the child's explanation:\n%s", why)
	}

	// The list filtered on the parent: its children in spawn order, with
	// their steps; with a status, only those.
	l := b.do("GET", "/executions?parent_id="+parent.ID, nil)
	if got, want := l.ids(), append([]string{parent.ID}, refIDs(kids)...); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("the children list links %v, want the parent then %v", got, want[1:])
	}
	if !strings.Contains(l.body, "Children of") || !strings.Contains(l.body, `name="parent_id" value="`+parent.ID+`"`) {
		t.Errorf("the children list does not say whose:\n%s", l.body)
	}
	l = b.do("GET", "/executions?status=succeeded&parent_id="+parent.ID, nil)
	if got := l.ids(); len(got) != 2 || got[1] != kids[2].ID {
		t.Errorf("the succeeded children: %v, want %s", got, kids[2].ID)
	}

	// Another tenant sees neither the family nor the list.
	other := e.browser()
	other.login(e.tenant("b"))
	if p := other.do("GET", "/executions?parent_id="+parent.ID, nil); len(p.ids()) != 1 || strings.Contains(p.body, "ship-parcel") {
		t.Errorf("tenant b lists tenant a's children: %v", p.ids())
	}
}

// block is the section of body that starts with start, to its end.
func block(body, start string) string {
	s := section(body, start)
	if j := strings.Index(s, "</section>"); j >= 0 {
		s = s[:j]
	}
	return s
}

func refIDs(rs []store.ChildRef) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

// TestExecutionsParentFilterRefusesBadID: a parent filter that is no
// execution id is refused with a 400 page that says why, and lists
// nothing.
func TestExecutionsParentFilterRefusesBadID(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	e.submit("a", store.Submission{})
	b := e.browser()
	b.login(key)
	p := b.do("GET", "/executions?parent_id="+url.QueryEscape("x' OR 1=1"), nil)
	if p.status != http.StatusBadRequest || !strings.Contains(p.body, "is not an execution id") || len(p.ids()) != 0 {
		t.Errorf("a bad parent filter: %d %v\n%s", p.status, p.ids(), p.body)
	}
}

// listCounter counts the store's List calls.
type listCounter struct {
	store.Store
	lists atomic.Int64
}

func (s *listCounter) List(ctx context.Context, p *store.ListParams) (*store.ListResult, error) {
	s.lists.Add(1)
	return s.Store.List(ctx, p)
}

// TestLargeFamilyIsBounded: an execution with 1,200 children renders a
// page of its first 20, counts of the first 500 (it says so), and a link
// to the full list, reading the store a bounded number of times.
func TestLargeFamilyIsBounded(t *testing.T) {
	var counter *listCounter
	e := newEnv(t, func(cfg *console.Config) {
		counter = &listCounter{Store: cfg.Store}
		cfg.Store = counter
	})
	key := e.tenant("a")
	parent := e.submit("a", store.Submission{Kind: "fan-out"})
	l := e.claimID("a", parent.ID)
	for _, step := range []string{"wave-1", "wave-2", "wave-3"} {
		e.spawn(l, step, "leaf", 400)
	}
	b := e.browser()
	b.login(key)
	before := counter.lists.Load()
	p := b.do("GET", "/executions/"+parent.ID, nil)
	lists := counter.lists.Load() - before
	fam := block(p.body, `<section class="family">`)
	for _, want := range []string{"Spawned 1200 by steps", "The first 500 now:", `">500 queued</a>`,
		"The tree shows the first 20 children."} {
		if !strings.Contains(fam, want) {
			t.Errorf("the family lacks %q:\n%.4000s", want, fam)
		}
	}
	if n := strings.Count(fam, `<li class="child">`); n != 20 {
		t.Errorf("the tree shows %d children, want 20", n)
	}
	if lists > 21 {
		t.Errorf("the page listed %d times, want at most 21 (one for the children, one per child shown)", lists)
	}
	if len(p.body) > 256<<10 {
		t.Errorf("the page is %d bytes", len(p.body))
	}
}
