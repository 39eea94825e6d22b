package redis_test

import (
	"context"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/redis"
)

// TestOpenUpgradesOldRecords: a key and a rate limit written by a latch
// before key ids (no key_id, no keyids:<T>, no ratelimits:<T>) get them at
// the next Open, so the key can be listed and deleted, and a delete of the
// tenant takes the rate limit.
func TestOpenUpgradesOldRecords(t *testing.T) {
	url := redisURL(t)
	prefix := newPrefix(t, url)
	ctx := context.Background()
	base := time.Date(2031, time.March, 14, 9, 0, 0, 0, time.UTC)
	s := open(t, url, prefix)
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", Now: base}); err != nil {
		t.Fatal(err)
	}
	opt, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := goredis.NewClient(opt)
	defer rdb.Close()
	ns := "{" + prefix + "}"
	old := map[string]map[string]any{
		ns + ":apikey:hash-old":       {"tenant": "acme", "created": base.UnixMicro()},
		ns + ":ratelimit:4:acmek":     {"tenant": "acme", "key": "k", "rate": 1, "per": 1000000, "burst": 1, "iv": 1000000, "created": 1, "updated": 1},
		ns + ":apikey:hash-old-admin": {"admin": 1, "created": base.UnixMicro()},
		ns + ":schema":                nil, // an older latch wrote no version
	}
	for key, fields := range old {
		if fields == nil {
			if err := rdb.Del(ctx, key).Err(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := rdb.HSet(ctx, key, fields).Err(); err != nil {
			t.Fatal(err)
		}
	}

	s = open(t, url, prefix)
	ks, err := s.ListAPIKeys(ctx, &store.ListAPIKeysParams{Tenant: "acme"})
	if err != nil || len(ks) != 1 || !strings.HasPrefix(ks[0].KeyID, "key_") {
		t.Fatalf("keys after the upgrade: %v, %v; want the old key with an id", ks, err)
	}
	k, err := s.LookupAPIKey(ctx, &store.LookupAPIKeyParams{KeyHash: "hash-old"})
	if err != nil || k.KeyID != ks[0].KeyID {
		t.Fatalf("LookupAPIKey of the old key: %+v, %v", k, err)
	}
	redis.CheckConsistency(t, s)
	if err := s.DeleteTenant(ctx, &store.DeleteTenantParams{Name: "acme", Now: base}); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.Exists(ctx, ns+":ratelimit:4:acmek", ns+":apikey:hash-old").Result(); err != nil || n != 0 {
		t.Errorf("after the tenant's delete, %d of its old records are left (%v)", n, err)
	}
	redis.CheckConsistency(t, s)
}
