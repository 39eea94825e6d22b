package redis

import (
	"context"
	"errors"
	"fmt"

	"github.com/latch-run/latch/store"
)

// The background passes (Rescue, Promote, Wake) visit only the tenants
// whose hint of that kind is due, earliest first, each tenant's pass being
// its namespace's script, until the call's limit is spent; a tenant whose
// pass took less than it was allowed is done, and its hint is refreshed
// from its index. An idle tenant costs them nothing. Prune visits every
// tenant (it runs seldom), then the home namespace (servers, workers,
// activity), and re-derives every hint (repairHints). None of them runs a
// repair otherwise: that is the repair goroutine's (router_repair.go).

// pass runs one such pass: fn does tenant t's part with at most left and
// returns how much it did. A tenant whose part fails is skipped: the pass
// goes on with the others (one tenant's primary out of reach must not hold
// back every other tenant's expired leases and due work), and the errors
// come back joined at the end.
func (r *Router) pass(ctx context.Context, what string, nowUS int64, limit int, fn func(t string, v *Store, left int) (int, error)) error {
	names, err := r.hinted(ctx, what, nowUS, 0)
	if err != nil {
		return err
	}
	var errs []error
	left := limit
	for _, t := range names {
		if left <= 0 || ctx.Err() != nil {
			break
		}
		n, err := fn(t, r.view(t), left)
		if err != nil {
			r.unsure(err)
			errs = append(errs, fmt.Errorf("tenant %s: %w", t, err))
			continue
		}
		if n > 0 {
			r.lower(ctx, t, 0, hintClaim) // requeued, promoted, woken, or a key's slot freed
		}
		left -= n
		if left > 0 {
			if err := r.refresh(ctx, t, what); err != nil {
				errs = append(errs, fmt.Errorf("tenant %s: %w", t, err))
			}
		}
	}
	if err := ctx.Err(); err != nil && len(errs) == 0 {
		return err
	}
	return errors.Join(errs...)
}

func (r *Router) Rescue(ctx context.Context, p *store.RescueParams) (*store.RescueResult, error) {
	out := &store.RescueResult{}
	err := r.pass(ctx, hintRescue, us(now(p.Now)), store.BatchLimit(p.Limit), func(t string, v *Store, left int) (int, error) {
		res, err := v.Rescue(ctx, &store.RescueParams{Now: p.Now, Limit: left})
		if err != nil {
			return 0, err
		}
		out.Requeued += res.Requeued
		out.Failed += res.Failed
		out.Cancelled += res.Cancelled
		return res.Requeued + res.Failed + res.Cancelled, nil
	})
	return out, err
}

func (r *Router) Promote(ctx context.Context, p *store.PromoteParams) (*store.PromoteResult, error) {
	out := &store.PromoteResult{}
	err := r.pass(ctx, hintPromote, us(now(p.Now)), store.BatchLimit(p.Limit), func(t string, v *Store, left int) (int, error) {
		res, err := v.Promote(ctx, &store.PromoteParams{Now: p.Now, Limit: left})
		if err != nil {
			return 0, err
		}
		out.Promoted += res.Promoted
		return res.Promoted, nil
	})
	return out, err
}

func (r *Router) Wake(ctx context.Context, p *store.WakeParams) (*store.WakeResult, error) {
	out := &store.WakeResult{}
	err := r.pass(ctx, hintWake, us(now(p.Now)), store.BatchLimit(p.Limit), func(t string, v *Store, left int) (int, error) {
		res, err := v.Wake(ctx, &store.WakeParams{Now: p.Now, Limit: left})
		if err != nil {
			return 0, err
		}
		out.Woken += res.Woken
		return res.Woken, nil
	})
	return out, err
}

// Prune prunes every tenant (a failing one is skipped, its error joined to
// the answer), then the home namespace, then re-derives every hint
// (repairHints), whatever failed before.
func (r *Router) Prune(ctx context.Context, p *store.PruneParams) (*store.PruneResult, error) {
	out := &store.PruneResult{}
	var errs []error
	names, err := r.tenants(ctx)
	if err != nil {
		errs = append(errs, err)
	}
	left := store.BatchLimit(p.Limit)
	for _, t := range names {
		if left <= 0 || ctx.Err() != nil {
			break
		}
		res, err := r.view(t).Prune(ctx, &store.PruneParams{Now: p.Now, Limit: left})
		if err != nil {
			errs = append(errs, fmt.Errorf("tenant %s: %w", t, err))
			continue
		}
		out.Executions += res.Executions
		out.DedupKeys += res.DedupKeys
		left -= res.Executions
	}
	if res, err := r.home.Prune(ctx, &store.PruneParams{Now: p.Now, Limit: max(left, 1)}); err != nil {
		errs = append(errs, err)
	} else {
		out.Executions += res.Executions
		out.DedupKeys += res.DedupKeys
	}
	errs = append(errs, r.repairHints(ctx))
	return out, errors.Join(errs...)
}
