package console

import (
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/latch-run/latch/store"
)

type schedulesPage struct {
	Admin  bool
	Tenant string // the admin's filter
	Items  []*store.Schedule
	Next   string // the next page's URL, "" on the last
}

// listSchedules is GET /schedules: one page in tenant, name order.
func (c *Console) listSchedules(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	page := schedulesPage{Admin: identityFrom(r.Context()).Admin, Tenant: q.Get("tenant")}
	p := store.ListSchedulesParams{Tenant: scope(r, page.Tenant), Limit: pageSize + 1,
		After: store.ScheduleRef{Tenant: q.Get("after_tenant"), Name: q.Get("after")}}
	if p.Tenant != "" && p.After.Name != "" {
		p.After.Tenant = p.Tenant
	}
	ctx, cancel := c.storeCtx(r)
	defer cancel()
	items, err := c.cfg.Store.ListSchedules(ctx, &p)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	page.Items = items
	if len(items) > pageSize {
		page.Items = items[:pageSize]
		last := page.Items[pageSize-1]
		next := url.Values{"after": {last.Name}, "after_tenant": {last.Tenant}}
		if page.Tenant != "" {
			next.Set("tenant", page.Tenant)
		}
		page.Next = "/schedules?" + next.Encode()
	}
	c.render(w, r, http.StatusOK, "schedules", page)
}

// triggerSchedule is POST /schedules/trigger (form fields tenant and
// name; a path could not carry a schedule named ".."): a tick now,
// as the API's trigger fires it, then to the execution it made. Each press
// is a tick of its own (under overlap skip, a press while one runs is
// recorded as skipped). A tenant key triggers only its own tenant's
// schedules.
func (c *Console) triggerSchedule(w http.ResponseWriter, r *http.Request) {
	if !parseAction(w, r) {
		return
	}
	id := identityFrom(r.Context())
	tenant, name := r.PostForm.Get("tenant"), r.PostForm.Get("name")
	if tenant == "" || name == "" {
		c.fail(w, r, store.ErrNotFound)
		return
	}
	if !id.Admin && tenant != id.Tenant {
		c.fail(w, r, store.ErrNotFound)
		return
	}
	ctx, cancel := c.storeCtx(r)
	defer cancel()
	if _, err := c.cfg.Store.GetSchedule(ctx, &store.GetScheduleParams{Tenant: tenant, Name: name}); err != nil {
		c.fail(w, r, err)
		return
	}
	if !c.confirmed(w, r, confirmPage{Title: "Run schedule " + name + " now?", Button: "Run now",
		Back:    scheduleURL(tenant, name),
		Message: "An off-cycle tick of schedule " + name + " of tenant " + tenant + " starts one execution now, under the tenant's quota; the regular ticks are unchanged."}) {
		return
	}
	now := c.cfg.Now()
	res, err := c.cfg.Store.FireSchedule(ctx, &store.FireScheduleParams{Tenant: tenant, Name: name,
		Tick: now.UTC().Truncate(time.Second), Trigger: true, Now: now})
	switch {
	case errors.Is(err, store.ErrQuotaExceeded):
		c.render(w, r, http.StatusConflict, "error", errorPage{Title: "Quota exceeded",
			Message: "Tenant " + tenant + " has as many executions in flight as its quota allows; nothing was started."})
		return
	case err != nil:
		c.fail(w, r, err)
		return
	case res.Execution == nil:
		c.fail(w, r, errors.New("console: FireSchedule answered a trigger without an execution"))
		return
	}
	http.Redirect(w, r, "/executions/"+url.PathEscape(res.Execution.ID), http.StatusSeeOther)
}
