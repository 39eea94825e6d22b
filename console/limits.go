package console

import (
	"net/http"
	"time"

	"github.com/latch-run/latch/store"
)

type limitsPage struct {
	Admin  bool
	Tenant string // the admin's filter
	Now    time.Time
	Rates  []rateRow
	Keys   []*store.ConcurrencyKeyUse
}

// rateRow is one rate limit and when its bucket next allows a start.
type rateRow struct {
	*store.RateLimit
	Interval time.Duration
	FreeAt   time.Time // now when a start is allowed now
	Free     bool      // a start is allowed now
}

// limits is GET /limits: the rate limits (each bucket's state) and the
// concurrency keys with running executions, against their limits.
func (c *Console) limits(w http.ResponseWriter, r *http.Request) {
	page := limitsPage{Admin: identityFrom(r.Context()).Admin, Tenant: r.URL.Query().Get("tenant"), Now: c.cfg.Now()}
	tenant := scope(r, page.Tenant)
	ctx, cancel := c.storeCtx(r)
	defer cancel()
	rates, err := c.cfg.Store.ListRateLimits(ctx, &store.ListRateLimitsParams{Tenant: tenant})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	for _, rl := range rates {
		at := rl.FreeAt(rl.TAT, page.Now)
		page.Rates = append(page.Rates, rateRow{RateLimit: rl, Interval: rl.Interval(), FreeAt: at, Free: !at.After(page.Now)})
	}
	keys, err := c.cfg.Store.ConcurrencyKeys(ctx, &store.ConcurrencyKeysParams{Tenant: tenant})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	page.Keys = keys
	c.render(w, r, http.StatusOK, "limits", page)
}
