package console

import (
	"context"
	"html/template"
	"net/http"
	"slices"
	"time"

	"github.com/latch-run/latch/store"
)

// aliveWithin: a server or worker seen within it counts as alive. Servers
// report every store.ReportEvery, so a minute is several missed reports.
const aliveWithin = time.Minute

type overviewPage struct {
	Admin    bool
	Tenant   string // the admin's filter
	Now      time.Time
	Queues   []*store.QueueStats
	Starts   template.HTML // chart of starts per minute
	Failures template.HTML // chart of failures per minute
	// StartsTotal and FailuresTotal are the hour's sums.
	StartsTotal, FailuresTotal int
	Servers                    []*store.Server // the admin's only
	Workers                    []*store.WorkerSeen
	// Unclaimed: ready work of kinds no live worker claims (unclaimed).
	Unclaimed []*store.ReadyKind
}

// overview is GET /overview: how deep each queue is, the last hour's
// starts and failures minute by minute, and who is alive (servers for the
// admin only: what runs behind the API is not a tenant's to see).
func (c *Console) overview(w http.ResponseWriter, r *http.Request) {
	id := identityFrom(r.Context())
	page := overviewPage{Admin: id.Admin, Tenant: r.URL.Query().Get("tenant"), Now: c.cfg.Now()}
	tenant := scope(r, page.Tenant)
	ctx, cancel := c.storeCtx(r)
	defer cancel()

	queues, err := c.cfg.Store.QueueStats(ctx, &store.QueueStatsParams{Tenant: tenant, Now: page.Now})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	page.Queues = queues

	mins, err := c.cfg.Store.Activity(ctx, &store.ActivityParams{Tenant: tenant,
		Since: store.MinuteOf(page.Now).Add(-(chartMinutes - 1) * time.Minute)})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	starts, failures := activitySeries(mins, page.Now)
	page.Starts, page.Failures = chart(starts, "starts", "starts"), chart(failures, "failures", "failures")
	for i := range starts.Counts {
		page.StartsTotal += starts.Counts[i]
		page.FailuresTotal += failures.Counts[i]
	}

	// The admin reads every server and worker, then keeps the workers of
	// the tenant filtered on; a tenant reads its own workers only.
	pres, err := c.cfg.Store.Presence(ctx, &store.PresenceParams{Tenant: tenant, Since: page.Now.Add(-aliveWithin)})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	if id.Admin {
		page.Servers = pres.Servers
		if tenant != "" {
			all, err := c.cfg.Store.Presence(ctx, &store.PresenceParams{Since: page.Now.Add(-aliveWithin)})
			if err != nil {
				c.fail(w, r, err)
				return
			}
			page.Servers = all.Servers
		}
	}
	for _, wk := range pres.Workers {
		if id.Admin || wk.Tenant == id.Tenant {
			page.Workers = append(page.Workers, wk)
		}
	}
	if page.Unclaimed, err = c.unclaimed(ctx, tenant, page.Now); err != nil {
		c.fail(w, r, err)
		return
	}
	c.render(w, r, http.StatusOK, "overview", page)
}

// unclaimed lists the tenants and kinds with work ready at now
// (store.Store.ReadyKinds) that no live worker claims: none of the
// tenant's workers, nor any worker of every tenant (in-process, or of the
// admin key), claims the kind. A worker claiming the kind in other queues
// counts: the warning is of kinds nothing runs; the execution's page
// (Explain) names its queue too. Every worker is read to decide, but only
// the kinds of tenant ("" = every one) are shown.
func (c *Console) unclaimed(ctx context.Context, tenant string, now time.Time) ([]*store.ReadyKind, error) {
	kinds, err := c.cfg.Store.ReadyKinds(ctx, &store.ReadyKindsParams{Tenant: tenant, Now: now})
	if err != nil || len(kinds) == 0 {
		return nil, err
	}
	pres, err := c.cfg.Store.Presence(ctx, &store.PresenceParams{Since: now.Add(-store.WorkerAlive)})
	if err != nil {
		return nil, err
	}
	var out []*store.ReadyKind
	for _, k := range kinds {
		if !slices.ContainsFunc(pres.Workers, func(w *store.WorkerSeen) bool {
			return (w.Tenant == "" || w.Tenant == k.Tenant) && (len(w.Kinds) == 0 || slices.Contains(w.Kinds, k.Kind))
		}) {
			out = append(out, k)
		}
	}
	return out, nil
}
