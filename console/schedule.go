package console

import (
	"cmp"
	"net/http"
	"net/url"
	"time"

	"github.com/latch-run/latch/store"
)

// ticksShown is how many of a schedule's latest ticks its page lists.
const ticksShown = 50

type schedulePage struct {
	S       *store.Schedule
	Now     time.Time
	Payload jsonView
	// Attempts and Timeout are what the schedule's executions get: its
	// own, or the defaults (as the API reports them).
	Attempts, Timeout int
	Ticks             []*store.Execution
	More              string // the executions page of every tick, when there are more
	Skipped           int    // skipped ticks among those shown
}

// scheduleURL is the page of tenant's schedule name. Both go in the query:
// a path could not carry a schedule named "..".
func scheduleURL(tenant, name string) string {
	return "/schedule?" + url.Values{"tenant": {tenant}, "name": {name}}.Encode()
}

// scheduleRef is the schedule a request names (query or form fields
// tenant and name), ok false when it names none or, for a tenant key,
// another tenant's (the caller answers not found either way). A tenant
// key may leave tenant out.
func scheduleRef(r *http.Request, v url.Values) (store.ScheduleRef, bool) {
	id := identityFrom(r.Context())
	ref := store.ScheduleRef{Tenant: v.Get("tenant"), Name: v.Get("name")}
	if !id.Admin {
		if ref.Tenant != "" && ref.Tenant != id.Tenant {
			return ref, false
		}
		ref.Tenant = id.Tenant
	}
	return ref, ref.Tenant != "" && ref.Name != ""
}

// showSchedule is GET /schedule?tenant=&name=: a schedule's settings, its
// next run and its latest ticks, newest first, each with what became of
// it: a skipped tick is one overlap skip dropped while an earlier
// execution was not terminal; a tick's dedup hits are fires and submits
// its dedup key answered with it.
func (c *Console) showSchedule(w http.ResponseWriter, r *http.Request) {
	ref, ok := scheduleRef(r, r.URL.Query())
	if !ok {
		c.fail(w, r, store.ErrNotFound)
		return
	}
	ctx, cancel := c.storeCtx(r)
	defer cancel()
	s, err := c.cfg.Store.GetSchedule(ctx, &store.GetScheduleParams{Tenant: ref.Tenant, Name: ref.Name})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	ticks, err := c.cfg.Store.List(ctx, &store.ListParams{Tenant: s.Tenant, Schedule: s.Name, Limit: ticksShown,
		MaxBytes: maxListBytes, Scan: c.cfg.ListScan})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	page := schedulePage{S: s, Now: c.cfg.Now(), Payload: viewJSON(s.Payload), Ticks: ticks.Items,
		Attempts: cmp.Or(s.MaxAttempts, store.DefaultMaxAttempts), Timeout: cmp.Or(s.TimeoutSeconds, store.DefaultTimeoutSeconds)}
	page.Payload.Raw = "/schedule/json?" + url.Values{"tenant": {s.Tenant}, "name": {s.Name}}.Encode()
	for _, x := range ticks.Items {
		if x.Status == store.StatusSkipped {
			page.Skipped++
		}
	}
	if ticks.Next != "" {
		page.More = "/executions?" + url.Values{"tenant": {s.Tenant}, "schedule": {s.Name}}.Encode()
	}
	c.render(w, r, http.StatusOK, "schedule", page)
}
