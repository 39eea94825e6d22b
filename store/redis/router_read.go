package redis

import (
	"cmp"
	"context"
	"slices"

	"github.com/latch-run/latch/store"
)

// Reads over every tenant merge the tenants' answers: each tenant's read is
// its namespace's, in its order; lists ordered by tenant first are the
// tenants' lists one after the other, in name order.

// List with a tenant is the tenant namespace's. Over every tenant, each
// tenant's page is read with the same filters, After, Limit and Scan, and
// the pages are merged newest first: tenant i's page covers every id from
// its Next up (its whole rest when Next is ""), so the merged page holds
// the items at or above the highest Next of the tenants not done, which
// every tenant has covered, cut as every backend cuts a page
// (store.ListPage), that highest Next being where the merge resumes when
// the page is not cut. Paging on visits every match once, newest first, as
// the one-namespace List does; one call examines up to Scan ids per tenant.
//
// List of one parent's children (ParentID) is the namespace's that holds
// the parent: a family lives in its tenant's namespace.
func (r *Router) List(ctx context.Context, p *store.ListParams) (*store.ListResult, error) {
	if p.Tenant != "" {
		return r.view(p.Tenant).List(ctx, p)
	}
	if p.ParentID != "" {
		v, err := r.find(ctx, "", p.ParentID)
		if err != nil {
			return nil, err
		}
		return v.List(ctx, p)
	}
	limit, err := p.Paging()
	if err != nil {
		return nil, err
	}
	names, err := r.tenants(ctx)
	if err != nil {
		return nil, err
	}
	pages := make([]*store.ListResult, len(names))
	if err := r.each(ctx, names, func(ctx context.Context, i int, v *Store) error {
		tp := *p
		tp.Tenant = names[i]
		pg, err := v.List(ctx, &tp)
		pages[i] = pg
		return err
	}); err != nil {
		return nil, err
	}
	floor := "" // the highest Next of a tenant not done
	for _, pg := range pages {
		floor = max(floor, pg.Next)
	}
	var items []*store.Execution
	for _, pg := range pages {
		for _, e := range pg.Items {
			if e.ID >= floor {
				items = append(items, e)
			}
		}
	}
	slices.SortFunc(items, func(a, b *store.Execution) int { return cmp.Compare(b.ID, a.ID) })
	page := p.Page(limit)
	for _, e := range items {
		if page.Add(e) {
			break
		}
	}
	return page.Result(floor), nil
}

func (r *Router) QueueStats(ctx context.Context, p *store.QueueStatsParams) ([]*store.QueueStats, error) {
	if p.Tenant != "" {
		return r.view(p.Tenant).QueueStats(ctx, p)
	}
	return eachTenant(ctx, r, func(ctx context.Context, t string, v *Store) ([]*store.QueueStats, error) {
		tp := *p
		tp.Tenant = t
		return v.QueueStats(ctx, &tp)
	})
}

func (r *Router) ConcurrencyKeys(ctx context.Context, p *store.ConcurrencyKeysParams) ([]*store.ConcurrencyKeyUse, error) {
	if p.Tenant != "" {
		return r.view(p.Tenant).ConcurrencyKeys(ctx, p)
	}
	return eachTenant(ctx, r, func(ctx context.Context, t string, v *Store) ([]*store.ConcurrencyKeyUse, error) {
		tp := *p
		tp.Tenant = t
		return v.ConcurrencyKeys(ctx, &tp)
	})
}

func (r *Router) ListRateLimits(ctx context.Context, p *store.ListRateLimitsParams) ([]*store.RateLimit, error) {
	if p.Tenant != "" {
		return r.view(p.Tenant).ListRateLimits(ctx, p)
	}
	return eachTenant(ctx, r, func(ctx context.Context, t string, v *Store) ([]*store.RateLimit, error) {
		tp := *p
		tp.Tenant = t
		return v.ListRateLimits(ctx, &tp)
	})
}

// eachTenant concatenates fn's answers for every registered tenant, in
// name order.
func eachTenant[T any](ctx context.Context, r *Router, fn func(ctx context.Context, t string, v *Store) ([]T, error)) ([]T, error) {
	names, err := r.tenants(ctx)
	if err != nil {
		return nil, err
	}
	parts := make([][]T, len(names))
	if err := r.each(ctx, names, func(ctx context.Context, i int, v *Store) error {
		var err error
		parts[i], err = fn(ctx, names[i], v)
		return err
	}); err != nil {
		return nil, err
	}
	return slices.Concat(parts...), nil
}

// ListSchedules: with a tenant, the tenant namespace's. Over every tenant
// with DueBy (the scheduler's query), the tenants the fire hint names by
// DueBy, merged earliest first (then by tenant and name); a tenant with
// none due has its hint refreshed. Without DueBy, tenant then name order:
// the tenants' lists one after the other from After.
func (r *Router) ListSchedules(ctx context.Context, p *store.ListSchedulesParams) ([]*store.Schedule, error) {
	if p.Tenant != "" {
		return r.view(p.Tenant).ListSchedules(ctx, p)
	}
	limit := p.ListLimit()
	if !p.DueBy.IsZero() {
		names, err := r.hinted(ctx, hintFire, us(p.DueBy), 0)
		if err != nil {
			return nil, err
		}
		// A tenant whose read fails is left out: the others' due
		// schedules are still listed, with the failure as the error.
		parts := make([][]*store.Schedule, len(names))
		failed := make([]bool, len(names))
		eachErr := r.each(ctx, names, func(ctx context.Context, i int, v *Store) error {
			tp := *p
			tp.Tenant = names[i]
			var err error
			parts[i], err = v.ListSchedules(ctx, &tp)
			failed[i] = err != nil
			return err
		})
		for i, t := range names {
			if len(parts[i]) == 0 && !failed[i] {
				_ = r.refresh(ctx, t, hintFire)
			}
		}
		out := slices.Concat(parts...)
		slices.SortStableFunc(out, func(a, b *store.Schedule) int {
			if c := a.NextRunAt.Compare(b.NextRunAt); c != 0 {
				return c
			}
			if c := cmp.Compare(a.Tenant, b.Tenant); c != 0 {
				return c
			}
			return cmp.Compare(a.Name, b.Name)
		})
		return out[:min(len(out), limit)], eachErr
	}
	names, err := r.tenants(ctx)
	if err != nil {
		return nil, err
	}
	var out []*store.Schedule
	for _, t := range names {
		if t < p.After.Tenant || len(out) >= limit {
			continue
		}
		tp := *p
		tp.Tenant, tp.Limit = t, limit-len(out)
		if t != p.After.Tenant {
			tp.After = store.ScheduleRef{}
		}
		part, err := r.view(t).ListSchedules(ctx, &tp)
		if err != nil {
			return nil, err
		}
		out = append(out, part...)
	}
	return out, nil
}
