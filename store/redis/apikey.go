package redis

import (
	"context"
	"fmt"
	"slices"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/store"
)

// A tenant's keys are named, by id, in the hash keyids:<T> (key id -> key
// hash); each key's record apikey:<hash> holds its tenant, key_id, created
// and, once used, used (microseconds).

// ListAPIKeys implements store.Store.
func (s *Store) ListAPIKeys(ctx context.Context, p *store.ListAPIKeysParams) ([]*store.APIKeyInfo, error) {
	n, err := s.rdb.Exists(ctx, s.k.tenant(p.Tenant)).Result()
	if err != nil {
		return nil, fmt.Errorf("redis: list api keys: %w", err)
	}
	if n == 0 {
		return nil, fmt.Errorf("tenant %q: %w", p.Tenant, store.ErrNotFound)
	}
	ids, err := s.rdb.HGetAll(ctx, s.k.keyIDs(p.Tenant)).Result()
	if err != nil {
		return nil, fmt.Errorf("redis: list api keys: %w", err)
	}
	cmds := make([]*goredis.SliceCmd, 0, len(ids))
	_, err = s.rdb.Pipelined(ctx, func(pipe goredis.Pipeliner) error {
		for _, hash := range ids {
			cmds = append(cmds, pipe.HMGet(ctx, s.k.apiKey(hash), "key_id", "created", "used"))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("redis: list api keys: %w", err)
	}
	out := make([]*store.APIKeyInfo, 0, len(cmds))
	for _, c := range cmds {
		v := c.Val()
		if len(v) != 3 || v[0] == nil {
			continue // deleted between the two reads
		}
		k := &store.APIKeyInfo{KeyID: asString(v[0]), CreatedAt: fromUS(asInt(v[1]))}
		if v[2] != nil {
			k.LastUsedAt = fromUS(asInt(v[2]))
		}
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b *store.APIKeyInfo) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return compareStrings(a.KeyID, b.KeyID)
	})
	return out, nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// DeleteAPIKey implements store.Store (delete_api_key.lua).
func (s *Store) DeleteAPIKey(ctx context.Context, p *store.DeleteAPIKeyParams) error {
	arr, err := s.run(ctx, "delete api key", scriptDeleteAPIKey, []string{s.k.keyIDs(p.Tenant)}, s.k.ns, p.KeyID)
	if err != nil {
		return err
	}
	return status(arr, fmt.Sprintf("tenant %q key %q", p.Tenant, p.KeyID))
}

// TouchAPIKey implements store.Store (touch_api_key.lua).
func (s *Store) TouchAPIKey(ctx context.Context, p *store.TouchAPIKeyParams) error {
	_, err := s.run(ctx, "touch api key", scriptTouchAPIKey, []string{s.k.apiKey(p.KeyHash)},
		s.k.ns, itoa(us(now(p.Now))), itoa(durUS(p.Every)))
	return err
}
