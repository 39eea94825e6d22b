package console

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/latch-run/latch/store"
)

// executionFilter is the filter form of the executions page.
type executionFilter struct {
	Tenant   string // the admin's only
	Status   string
	Kind     string
	Queue    string
	DedupKey string
	Schedule string
	Parent   string // an execution id: its children, in spawn order
	// ID is the find box: a whole execution id (the page redirects to
	// it) or its first store.MinIDPrefix or more characters.
	ID string
	// Error is text to find in the executions' last error (errorSearch).
	Error string
}

type executionsPage struct {
	Admin    bool
	Filter   executionFilter
	Statuses []store.Status
	Items    []*store.Execution
	Next     string // the next page's URL, "" on the last
	// Newer is the previous page's URL, from the cursors the pages came
	// through (backParam), "" on the first page or when they are no
	// longer known; Newest the first page's, "" on it.
	Newer  string
	Newest string
	// Count says how many match, in words: exactly on a list of one
	// page, "about N" where the store counts them cheaply (QueueStats:
	// running or suspended executions), "many" otherwise.
	Count   string
	Problem string // why the filter was not applied
	Deleted string // the execution just deleted, to say so
}

var allStatuses = []store.Status{store.StatusScheduled, store.StatusQueued, store.StatusRunning,
	store.StatusSuspended, store.StatusSucceeded, store.StatusFailed, store.StatusCancelled, store.StatusSkipped}

// deletedID is the id a delete's redirect names, "" unless it looks like
// an execution id: a link cannot make the page say anything else.
func deletedID(s string) string {
	if len(s) == 0 || len(s) > 64 {
		return ""
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || c == '-') {
			return ""
		}
	}
	return s
}

// scope is the tenant a request reads: a tenant key's own, or the tenant
// the admin filters on ("" = every tenant).
func scope(r *http.Request, filter string) string {
	id := identityFrom(r.Context())
	if id.Admin {
		return filter
	}
	return id.Tenant
}

// backParam is the query parameter that keeps the cursors (after) of the
// pages a list came through, oldest first ("" for the first page), so
// that a page links to the one before it: the store pages one way only.
// It keeps at most maxBack of them; past that, Newest still leads back.
const (
	backParam = "back"
	maxBack   = 20
)

// errorSearch: text to find in the executions' last error (the error
// parameter) is no store filter: no backend indexes error text, and a
// LIKE over the history is an unbounded scan. The console reads one List
// page of errorSearchPage executions instead, failed ones unless a status
// is given, the other filters applied, and shows those whose error holds
// the text (case-insensitively), saying how many it examined; Older pages
// on to the next ones.
const (
	errorSearchPage = store.MaxListLimit
	maxErrorSearch  = 200
)

// listExecutions is GET /executions: one page, newest first.
func (c *Console) listExecutions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := executionFilter{Tenant: q.Get("tenant"), Status: q.Get("status"), Kind: q.Get("kind"),
		Queue: q.Get("queue"), DedupKey: q.Get("dedup_key"), Schedule: q.Get("schedule"), Parent: q.Get("parent_id"),
		ID: strings.ToLower(strings.TrimSpace(q.Get("id"))), Error: strings.TrimSpace(q.Get("error"))}
	page := executionsPage{Admin: identityFrom(r.Context()).Admin, Filter: f, Statuses: allStatuses,
		Deleted: deletedID(q.Get("deleted"))}
	if f.ID != "" && store.IsExecutionID(f.ID) {
		c.findExecution(w, r, page)
		return
	}
	if f.ID != "" && !store.IsIDPrefix(f.ID) {
		page.Problem = "Find takes an execution id or its first " + strconv.Itoa(store.MinIDPrefix) +
			" or more characters (as 0190a1b2 or 0190a1b2-7c3d); " + f.ID + " is neither."
		c.render(w, r, http.StatusBadRequest, "executions", page)
		return
	}
	if len(f.Error) > maxErrorSearch {
		page.Problem = "Error text is at most " + strconv.Itoa(maxErrorSearch) + " characters."
		c.render(w, r, http.StatusBadRequest, "executions", page)
		return
	}
	if f.ID != "" && f.Parent != "" {
		page.Problem = "Find by id does not combine with Parent: clear one of them."
		c.render(w, r, http.StatusBadRequest, "executions", page)
		return
	}
	if f.Status != "" && !store.Status(f.Status).Valid() {
		page.Problem = "Unknown status " + f.Status + "."
		c.render(w, r, http.StatusBadRequest, "executions", page)
		return
	}
	if f.Parent != "" && !store.IsExecutionID(f.Parent) {
		page.Problem = "Parent " + f.Parent + " is not an execution id."
		c.render(w, r, http.StatusBadRequest, "executions", page)
		return
	}
	p := store.ListParams{Tenant: scope(r, f.Tenant), Status: store.Status(f.Status), Kind: f.Kind,
		Queue: f.Queue, DedupKey: f.DedupKey, Schedule: f.Schedule, ParentID: f.Parent, IDPrefix: f.ID,
		Limit: pageSize, After: q.Get("after"), MaxBytes: maxListBytes, Scan: c.cfg.ListScan}
	ctx, cancel := c.storeCtx(r)
	defer cancel()
	if f.Error != "" {
		// errorSearch: one page of the latest errorSearchPage executions
		// (failed unless another status is given), matched here.
		p.Limit = errorSearchPage
		if p.Status == "" {
			p.Status = store.StatusFailed
		}
	}
	res, err := c.cfg.Store.List(ctx, &p)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	page.Items = res.Items
	if f.Error != "" {
		page.Items = nil
		needle := strings.ToLower(f.Error)
		for _, x := range res.Items {
			if strings.Contains(strings.ToLower(x.Error), needle) {
				page.Items = append(page.Items, x)
			}
		}
	}
	// base is this page's query without its paging.
	base := url.Values{}
	for k, v := range q {
		if k != "deleted" && k != "after" && k != backParam && k != "id" && k != "error" {
			base[k] = v
		}
	}
	if f.ID != "" {
		base.Set("id", f.ID)
	}
	if f.Error != "" {
		base.Set("error", f.Error)
	}
	back := backCursors(q[backParam])
	link := func(after string, back []string) string {
		v := url.Values{}
		for k, x := range base {
			v[k] = x
		}
		if after != "" {
			v.Set("after", after)
		}
		if len(back) > 0 {
			v[backParam] = back
		}
		return "/executions?" + v.Encode()
	}
	if res.Next != "" {
		trail := append(slices.Clone(back), p.After)
		if len(trail) > maxBack {
			trail = trail[len(trail)-maxBack:]
		}
		page.Next = link(res.Next, trail)
	}
	if p.After != "" {
		page.Newest = link("", nil)
		if n := len(back); n > 0 {
			page.Newer = link(back[n-1], back[:n-1])
		}
	}
	if f.Error == "" {
		page.Count = c.countWords(ctx, &p, res)
	} else {
		which := "latest"
		if p.After != "" {
			which = "next"
		}
		page.Count = strconv.Itoa(len(page.Items)) + " with that error among the " + which + " " +
			strconv.Itoa(len(res.Items)) + " " + string(p.Status) + " examined"
	}
	c.render(w, r, http.StatusOK, "executions", page)
}

// backCursors are the back parameter's cursors, or none when one of them
// is neither "" nor an execution id: a link cannot make the page lead
// anywhere else.
func backCursors(vs []string) []string {
	if len(vs) > maxBack {
		vs = vs[len(vs)-maxBack:]
	}
	for _, v := range vs {
		if v != "" && !store.IsExecutionID(v) {
			return nil
		}
	}
	return vs
}

// countWords says how many executions p matches: exactly when res is the
// whole list (the first page, with no next), "about N" when QueueStats
// counts them (running or suspended, by tenant and queue only: it counts
// executions in flight, bounded by the tenants' limits, not a COUNT(*)
// over the history), "many" otherwise.
func (c *Console) countWords(ctx context.Context, p *store.ListParams, res *store.ListResult) string {
	if p.After == "" && res.Next == "" {
		switch len(res.Items) {
		case 0:
			return ""
		case 1:
			return "1 execution"
		}
		return strconv.Itoa(len(res.Items)) + " executions"
	}
	shown := strconv.Itoa(len(res.Items)) + " shown of "
	if (p.Status == store.StatusRunning || p.Status == store.StatusSuspended) && p.Kind == "" && p.DedupKey == "" &&
		p.Schedule == "" && p.ParentID == "" && p.IDPrefix == "" {
		stats, err := c.cfg.Store.QueueStats(ctx, &store.QueueStatsParams{Tenant: p.Tenant, Now: c.cfg.Now()})
		if err == nil {
			n := 0
			for _, s := range stats {
				if p.Queue != "" && s.Queue != p.Queue {
					continue
				}
				if p.Status == store.StatusRunning {
					n += s.Running
				} else {
					n += s.Suspended
				}
			}
			return shown + "about " + strconv.Itoa(n) + " " + string(p.Status)
		}
	}
	return shown + "many"
}

// findExecution answers the find box given a whole id: the execution's
// page when the reader may see it, else the list saying there is none.
func (c *Console) findExecution(w http.ResponseWriter, r *http.Request, page executionsPage) {
	ctx, cancel := c.storeCtx(r)
	defer cancel()
	_, err := c.cfg.Store.Get(ctx, &store.GetParams{Tenant: identityFrom(r.Context()).Tenant, ID: page.Filter.ID})
	switch {
	case errors.Is(err, store.ErrNotFound):
		page.Problem = "No execution " + page.Filter.ID + "."
		c.render(w, r, http.StatusNotFound, "executions", page)
	case err != nil:
		c.fail(w, r, err)
	default:
		http.Redirect(w, r, "/executions/"+url.PathEscape(page.Filter.ID), http.StatusSeeOther)
	}
}

type executionPage struct {
	Now      time.Time
	E        *store.Execution
	Payload  jsonView
	Result   jsonView // the zero jsonView when none
	Runs     []runRow
	Timeline []timelineRow // a flow's runs and steps; none for other executions
	Signal   *signalForm   // nil unless it waits for a signal
	// Waiting: it is neither running nor terminal; Gates are then what
	// holds it back now (store.Store.Explain), none when nothing does.
	Waiting bool
	Gates   []store.Gate
	// StepsCut: the journal holds more steps than the StepsShown first
	// ones the Timeline shows (history).
	StepsCut   bool
	StepsShown int
	// Family: its parent and its children (family.go).
	Family *family
	// WaitsFor is what a suspended execution waits for, in words, when
	// it waits for children or an event; "" else.
	WaitsFor string
}

// showExecution is GET /executions/{id}: the execution, its runs and its
// steps.
func (c *Console) showExecution(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := c.storeCtx(r)
	defer cancel()
	tenant := identityFrom(r.Context()).Tenant
	e, err := c.cfg.Store.Get(ctx, &store.GetParams{Tenant: tenant, ID: r.PathValue("id")})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	runs, timeline, spawns, cut, err := c.history(ctx, tenant, e)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	fam, err := c.readFamily(ctx, tenant, e, spawns)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	page := executionPage{Now: c.cfg.Now(), E: e, Payload: viewJSON(e.Payload), Result: viewJSON(e.Result),
		Runs: runs, Timeline: timeline, StepsCut: cut, StepsShown: stepsIn(timeline), Signal: signalFormOf(e, ""),
		Family: fam}
	if e.WaitingFor != "" && !waitsForSignal(e) {
		// A wait for a signal says so in its form, a sleep in Wakes.
		page.WaitsFor = waitWords(e)
	}
	if page.Waiting = e.Status.Waiting(); page.Waiting {
		x, err := c.cfg.Store.Explain(ctx, &store.ExplainParams{Tenant: tenant, ID: e.ID, Now: page.Now})
		if err != nil {
			c.fail(w, r, err)
			return
		}
		page.Gates = x.Gates
		for i := range page.Gates {
			// The store's sentence names every wait a signal; the
			// console says a wait for children or an event as such.
			if g := &page.Gates[i]; g.Gate == store.GateWaiting && page.WaitsFor != "" {
				g.Detail = page.WaitsFor
			}
		}
	}
	page.Payload.Raw = executionJSONURL(e.ID, "payload")
	page.Result.Raw = executionJSONURL(e.ID, "result")
	c.render(w, r, http.StatusOK, "execution", page)
}

// cancelExecution is POST /executions/{id}/cancel: as the API's cancel,
// then back to the execution's page.
func (c *Console) cancelExecution(w http.ResponseWriter, r *http.Request) {
	if !parseAction(w, r) {
		return
	}
	ctx, cancel := c.storeCtx(r)
	defer cancel()
	x, ok := c.actionExecution(ctx, w, r)
	if !ok {
		return
	}
	id := x.ID
	back := "/executions/" + url.PathEscape(id)
	if !c.confirmed(w, r, confirmPage{Title: "Cancel execution " + id + "?", Button: "Cancel execution", Back: back,
		Message: "Execution " + id + " (" + x.Kind + ", " + string(x.Status) + ") will be cancelled: at once unless it is running, " +
			"else when its worker sees the request at its next heartbeat."}) {
		return
	}
	_, err := c.cfg.Store.Cancel(ctx, &store.CancelParams{Tenant: identityFrom(r.Context()).Tenant, ID: id,
		Now: c.cfg.Now()})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/executions/"+url.PathEscape(id), http.StatusSeeOther)
}
