package console

import (
	"errors"
	"net/http"

	"github.com/latch-run/latch/store"
)

// tenantsPageSize is how many tenants one page of /tenants shows.
const tenantsPageSize = 100

type tenantsPage struct {
	Items []tenantRow
	Name  string // the name looked up, "" for none
	// Next is the ?after= of the next page, "" on the last.
	Next string
	// Problem says the name looked up is unknown.
	Problem string
}

// tenantRow is a tenant and the thresholds of its in-flight bar: past
// Low (70 % of the quota) it turns amber, past High (90 %) red.
type tenantRow struct {
	*store.Tenant
	Low, High int
}

func newTenantRow(t *store.Tenant) tenantRow {
	return tenantRow{Tenant: t, Low: t.MaxInflight * 7 / 10, High: t.MaxInflight * 9 / 10}
}

// tenants is GET /tenants, the admin's only: every tenant in name order,
// a page at a time (?after=), with its executions in flight against its
// quota and whether it is disabled; or one tenant looked up by ?name=.
func (c *Console) tenants(w http.ResponseWriter, r *http.Request) {
	if !identityFrom(r.Context()).Admin {
		c.fail(w, r, store.ErrNotFound)
		return
	}
	q := r.URL.Query()
	page := tenantsPage{Name: q.Get("name")}
	ctx, cancel := c.storeCtx(r)
	defer cancel()
	if page.Name != "" {
		t, err := c.cfg.Store.GetTenant(ctx, &store.GetTenantParams{Name: page.Name})
		switch {
		case errors.Is(err, store.ErrNotFound):
			page.Problem = "There is no tenant " + page.Name + "."
		case err != nil:
			c.fail(w, r, err)
			return
		default:
			page.Items = append(page.Items, newTenantRow(t))
		}
		c.render(w, r, http.StatusOK, "tenants", page)
		return
	}
	list, err := c.cfg.Store.ListTenants(ctx, &store.ListTenantsParams{After: q.Get("after"), Limit: tenantsPageSize + 1})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	if len(list) > tenantsPageSize {
		list = list[:tenantsPageSize]
		page.Next = list[len(list)-1].Name
	}
	for _, t := range list {
		page.Items = append(page.Items, newTenantRow(t))
	}
	c.render(w, r, http.StatusOK, "tenants", page)
}
