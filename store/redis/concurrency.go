package redis

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/latch-run/latch/store"
)

// ConcurrencyKeys implements store.Store with one read script
// (concurrency_keys.lua): the running executions, grouped by tenant and
// key. (The counters ck:<c> count a key's running executions too, but
// not the largest limit among them, and nothing lists them.)
func (s *Store) ConcurrencyKeys(ctx context.Context, p *store.ConcurrencyKeysParams) ([]*store.ConcurrencyKeyUse, error) {
	arr, err := s.run(ctx, "concurrency keys", scriptConcurrencyKeys, []string{s.k.running()}, s.k.ns, p.Tenant)
	if err != nil {
		return nil, err
	}
	if len(arr)%4 != 0 {
		return nil, fmt.Errorf("redis: concurrency keys: unexpected reply of %d elements", len(arr))
	}
	var out []*store.ConcurrencyKeyUse
	for i := 0; i < len(arr); i += 4 {
		out = append(out, &store.ConcurrencyKeyUse{
			Tenant:  asString(arr[i]),
			Key:     asString(arr[i+1]),
			Running: int(asInt(arr[i+2])),
			Limit:   int(asInt(arr[i+3])),
		})
	}
	slices.SortFunc(out, func(a, b *store.ConcurrencyKeyUse) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Key, b.Key))
	})
	return out, nil
}
