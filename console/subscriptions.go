package console

import (
	"net/http"

	"github.com/latch-run/latch/store"
)

// subscriptionsShown bounds the rows of the subscriptions page. A tenant
// has at most store.MaxSubscriptions; the admin's page of every tenant's
// shows the first subscriptionsShown in tenant, name order and says so.
const subscriptionsShown = 1000

type subscriptionsPage struct {
	Admin  bool
	Tenant string // the admin's filter
	Items  []*store.Subscription
	// Cut: there are more than the Items shown.
	Cut bool
}

// listSubscriptions is GET /subscriptions: the subscriptions of the
// tenant (the admin's: every tenant's, or one tenant's with ?tenant=),
// in tenant, name order: each one's event, the kind and queue of the
// executions it starts, and whether it is enabled.
func (c *Console) listSubscriptions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	page := subscriptionsPage{Admin: identityFrom(r.Context()).Admin, Tenant: q.Get("tenant")}
	ctx, cancel := c.storeCtx(r)
	defer cancel()
	items, err := c.cfg.Store.ListSubscriptions(ctx, &store.ListSubscriptionsParams{Tenant: scope(r, page.Tenant)})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	if len(items) > subscriptionsShown {
		items, page.Cut = items[:subscriptionsShown], true
	}
	page.Items = items
	c.render(w, r, http.StatusOK, "subscriptions", page)
}
