package console

import (
	"net/http"
	"net/url"

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
