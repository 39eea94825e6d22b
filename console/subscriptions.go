package console

import (
	"net/http"
	"net/url"

	"github.com/latch-run/latch/store"
)

// subscriptionsPageSize is the rows of one subscriptions page: a tenant's
// every subscription (store.MaxSubscriptions) fits on one.
const subscriptionsPageSize = store.MaxSubscriptions

type subscriptionsPage struct {
	Admin  bool
	Tenant string // the admin's filter
	Items  []*store.Subscription
	Next   string // the next page's URL, "" on the last
}

// listSubscriptions is GET /subscriptions: one page of the subscriptions
// of the tenant (the admin's: every tenant's, or one tenant's with
// ?tenant=), in tenant, name order, from after_tenant and after: each
// one's event, the kind and queue of the executions it starts, and
// whether it is enabled.
func (c *Console) listSubscriptions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	page := subscriptionsPage{Admin: identityFrom(r.Context()).Admin, Tenant: q.Get("tenant")}
	p := store.ListSubscriptionsParams{Tenant: scope(r, page.Tenant), Limit: subscriptionsPageSize + 1,
		After: store.SubscriptionRef{Tenant: q.Get("after_tenant"), Name: q.Get("after")}}
	if p.Tenant != "" && p.After.Name != "" {
		p.After.Tenant = p.Tenant
	}
	ctx, cancel := c.storeCtx(r)
	defer cancel()
	items, err := c.cfg.Store.ListSubscriptions(ctx, &p)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	page.Items = items
	if len(items) > subscriptionsPageSize {
		page.Items = items[:subscriptionsPageSize]
		last := page.Items[subscriptionsPageSize-1]
		next := url.Values{"after": {last.Name}, "after_tenant": {last.Tenant}}
		if page.Tenant != "" {
			next.Set("tenant", page.Tenant)
		}
		page.Next = "/subscriptions?" + next.Encode()
	}
	c.render(w, r, http.StatusOK, "subscriptions", page)
}
