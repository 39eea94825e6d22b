package console

import (
	"net/http"
	"net/url"
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
}

type executionsPage struct {
	Admin    bool
	Filter   executionFilter
	Statuses []store.Status
	Items    []*store.Execution
	Next     string // the next page's URL, "" on the last
	Problem  string // why the filter was not applied
	Deleted  string // the execution just deleted, to say so
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

// listExecutions is GET /executions: one page, newest first.
func (c *Console) listExecutions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := executionFilter{Tenant: q.Get("tenant"), Status: q.Get("status"), Kind: q.Get("kind"),
		Queue: q.Get("queue"), DedupKey: q.Get("dedup_key"), Schedule: q.Get("schedule"), Parent: q.Get("parent_id")}
	page := executionsPage{Admin: identityFrom(r.Context()).Admin, Filter: f, Statuses: allStatuses,
		Deleted: deletedID(q.Get("deleted"))}
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
		Queue: f.Queue, DedupKey: f.DedupKey, Schedule: f.Schedule, ParentID: f.Parent, Limit: pageSize,
		After: q.Get("after"), MaxBytes: maxListBytes, Scan: c.cfg.ListScan}
	ctx, cancel := c.storeCtx(r)
	defer cancel()
	res, err := c.cfg.Store.List(ctx, &p)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	page.Items = res.Items
	if res.Next != "" {
		next := url.Values{}
		for k, v := range q {
			if k != "deleted" {
				next[k] = v
			}
		}
		next.Set("after", res.Next)
		page.Next = "/executions?" + next.Encode()
	}
	c.render(w, r, http.StatusOK, "executions", page)
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
