package redis

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/latch-run/latch/store"
)

// Rate limits (I7) are one hash per tenant and rate key, ratelimit:<c>
// with c = scoped(tenant, key): the settings, the emission interval in
// whole microseconds and the bucket's TAT, which claim.lua alone moves, in
// the script that starts the execution it charges.

// PutRateLimit implements store.Store (put_rate_limit.lua). The interval
// Per/Rate is kept in whole microseconds, rounded up where it is not whole,
// so that the bucket never allows more than the limit says (I7); like every
// time in this store, Per is kept to the microsecond.
func (s *Store) PutRateLimit(ctx context.Context, p *store.PutRateLimitParams) (*store.RateLimit, error) {
	rl := p.Limit
	if err := rl.Validate(); err != nil {
		return nil, err
	}
	iv := (rl.Interval() + time.Microsecond - 1) / time.Microsecond
	arr, err := s.run(ctx, "put rate limit", scriptPutRateLimit,
		[]string{s.k.rateLimit(scoped(rl.Tenant, rl.Key)), s.k.tenant(rl.Tenant), s.k.rateLimits(rl.Tenant)},
		s.k.ns, rl.Tenant, rl.Key, rl.Rate, itoa(durUS(rl.Per)), rl.Burst, itoa(int64(iv)), itoa(us(now(p.Now))))
	if err != nil {
		return nil, err
	}
	if err := status(arr, fmt.Sprintf("tenant %q", rl.Tenant)); err != nil {
		return nil, err
	}
	return parseRateLimit(asMap(at(arr, 1))), nil
}

// GetRateLimit implements store.Store.
func (s *Store) GetRateLimit(ctx context.Context, p *store.GetRateLimitParams) (*store.RateLimit, error) {
	m, err := s.rdb.HGetAll(ctx, s.k.rateLimit(scoped(p.Tenant, p.Key))).Result()
	if err != nil {
		return nil, fmt.Errorf("redis: get rate limit: %w", interpretError(err))
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("rate limit %q: %w", p.Key, store.ErrNotFound)
	}
	return parseRateLimit(m), nil
}

// ListRateLimits implements store.Store with one read script
// (list_rate_limits.lua), from each tenant's index of its rate keys.
func (s *Store) ListRateLimits(ctx context.Context, p *store.ListRateLimitsParams) ([]*store.RateLimit, error) {
	arr, err := s.run(ctx, "list rate limits", scriptListRateLimits, []string{s.k.tenants()}, s.k.ns, p.Tenant)
	if err != nil {
		return nil, err
	}
	var out []*store.RateLimit
	for _, h := range arr {
		out = append(out, parseRateLimit(asMap(h)))
	}
	slices.SortFunc(out, func(a, b *store.RateLimit) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Key, b.Key))
	})
	return out, nil
}

// DeleteRateLimit implements store.Store (delete_rate_limit.lua).
func (s *Store) DeleteRateLimit(ctx context.Context, p *store.DeleteRateLimitParams) error {
	arr, err := s.run(ctx, "delete rate limit", scriptDeleteRateLimit,
		[]string{s.k.rateLimit(scoped(p.Tenant, p.Key)), s.k.rateLimits(p.Tenant)}, s.k.ns, p.Key)
	if err != nil {
		return err
	}
	return status(arr, fmt.Sprintf("rate limit %q", p.Key))
}

func parseRateLimit(m map[string]string) *store.RateLimit {
	rl := &store.RateLimit{
		Tenant:    m["tenant"],
		Key:       m["key"],
		Rate:      int(hashInt(m, "rate")),
		Per:       fromDurUS(hashInt(m, "per")),
		Burst:     int(hashInt(m, "burst")),
		CreatedAt: fromUS(hashInt(m, "created")),
		UpdatedAt: fromUS(hashInt(m, "updated")),
	}
	if _, ok := m["tat"]; ok {
		rl.TAT = fromUS(hashInt(m, "tat"))
	}
	return rl
}
