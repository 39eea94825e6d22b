package console

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/latch-run/latch/store"
)

// maxTenantsShown bounds the tenants page: one GetTenant each.
const maxTenantsShown = 200

// maxSchedulesScanned bounds how many schedules the tenants page reads to
// find tenant names.
const maxSchedulesScanned = 2000

type tenantsPage struct {
	Items []tenantRow
	Name  string // the name looked up, "" for none
	// Problem says the name looked up is unknown, or that the list was
	// cut at maxTenantsShown.
	Problem string
}

// tenantRow is a tenant and the thresholds of its in-flight bar: past
// Low (70 % of the quota) it turns amber, past High (90 %) red.
type tenantRow struct {
	*store.Tenant
	Low, High int
}

// tenants is GET /tenants, the admin's only: each tenant's executions in
// flight against its quota, and whether it is disabled.
//
// The store has no listing of tenants. The page lists the tenants that
// have something the store does list: executions in flight (QueueStats),
// schedules or rate limits; any other tenant is found by name with the
// page's form (?name=).
func (c *Console) tenants(w http.ResponseWriter, r *http.Request) {
	if !identityFrom(r.Context()).Admin {
		c.fail(w, r, store.ErrNotFound)
		return
	}
	page := tenantsPage{Name: r.URL.Query().Get("name")}
	ctx, cancel := c.storeCtx(r)
	defer cancel()
	names := []string{page.Name}
	if page.Name == "" {
		var err error
		if names, err = c.tenantNames(ctx); err != nil {
			c.fail(w, r, err)
			return
		}
		if len(names) > maxTenantsShown {
			names = names[:maxTenantsShown]
			page.Problem = "Only the first tenants are shown: look one up by name."
		}
	}
	for _, name := range names {
		t, err := c.cfg.Store.GetTenant(ctx, &store.GetTenantParams{Name: name})
		switch {
		case errors.Is(err, store.ErrNotFound):
			if page.Name != "" {
				page.Problem = "There is no tenant " + name + "."
			}
			continue // deleted since it was listed
		case err != nil:
			c.fail(w, r, err)
			return
		}
		page.Items = append(page.Items, tenantRow{Tenant: t, Low: t.MaxInflight * 7 / 10, High: t.MaxInflight * 9 / 10})
	}
	c.render(w, r, http.StatusOK, "tenants", page)
}

// tenantNames are the names of the tenants with executions in flight,
// schedules or rate limits, sorted.
func (c *Console) tenantNames(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	queues, err := c.cfg.Store.QueueStats(ctx, &store.QueueStatsParams{Now: c.cfg.Now()})
	if err != nil {
		return nil, err
	}
	for _, q := range queues {
		seen[q.Tenant] = true
	}
	limits, err := c.cfg.Store.ListRateLimits(ctx, &store.ListRateLimitsParams{})
	if err != nil {
		return nil, err
	}
	for _, l := range limits {
		seen[l.Tenant] = true
	}
	// Schedules are listed in tenant order: page on from each tenant's
	// last schedule would still read them all, so read a bounded number.
	after := store.ScheduleRef{}
	for read := 0; read < maxSchedulesScanned; {
		page, err := c.cfg.Store.ListSchedules(ctx, &store.ListSchedulesParams{Limit: 500, After: after})
		if err != nil {
			return nil, err
		}
		for _, s := range page {
			seen[s.Tenant] = true
		}
		read += len(page)
		if len(page) < 500 {
			break
		}
		last := page[len(page)-1]
		after = store.ScheduleRef{Tenant: last.Tenant, Name: last.Name}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}
