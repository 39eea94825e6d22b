package redis_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/redis"
	"github.com/latch-run/latch/store/storetest"
)

func openRouter(t testing.TB, url, prefix string) *redis.Router {
	t.Helper()
	r, err := redis.OpenRouter(context.Background(), url, redis.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// newRouterStore is newClusterStore through the tenant router.
func newRouterStore(t *testing.T) store.Store {
	t.Helper()
	url := clusterURL(t)
	r := openRouter(t, url, newClusterPrefix(t, url))
	t.Cleanup(func() { r.Close() })
	t.Cleanup(func() { redis.CheckRouterConsistency(t, r) })
	return r
}

func TestRouterStore(t *testing.T) {
	clusterURL(t)
	storetest.Run(t, newRouterStore)
}

// TestRouterSpreadsTenants shows what the router is for: eight tenants'
// keys land on more than one primary of the cluster, and each tenant's
// keys (its hash, executions, indexes, dedup map) all share one slot, so
// that each of its scripts runs on one node; the home namespace keeps the
// registry and API keys in a slot of its own.
func TestRouterSpreadsTenants(t *testing.T) {
	url := clusterURL(t)
	prefix := newClusterPrefix(t, url)
	r := openRouter(t, url, prefix)
	defer r.Close()
	ctx := t.Context()
	cc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: clusterAddrs(t, url)})
	defer cc.Close()

	primaries := map[string][]string{} // primary -> tenants
	for i := range 8 {
		name := fmt.Sprintf("tenant-%d", i)
		if _, err := r.CreateTenant(ctx, &store.CreateTenantParams{Name: name, KeyHash: "hash-" + name}); err != nil {
			t.Fatal(err)
		}
		res, err := r.Admit(ctx, &store.AdmitParams{Tenant: name, Items: []store.Submission{{Kind: "k", DedupKey: "d"}}})
		if err != nil || res.Items[0].Err != nil {
			t.Fatalf("admit: %v %v", err, res)
		}
		ns := r.TenantNamespace(name)
		if want := "{" + prefix + "/" + name + "}"; ns != want {
			t.Fatalf("namespace %q, want %q", ns, want)
		}
		// Every key of the tenant's namespace, found on every primary by
		// SCAN, is in the namespace's slot, on one primary.
		slot, err := cc.ClusterKeySlot(ctx, ns).Result()
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		var mu sync.Mutex
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error {
			ks, err := c.Keys(ctx, ns+":*").Result()
			mu.Lock()
			keys = append(keys, ks...)
			mu.Unlock()
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) < 5 {
			t.Fatalf("tenant %s: %d keys in its namespace (%v), want its hash, execution, indexes, dedup map", name, len(keys), keys)
		}
		for _, k := range keys {
			if s, err := cc.ClusterKeySlot(ctx, k).Result(); err != nil || s != slot {
				t.Errorf("tenant %s: key %s in slot %d, want %d (%v)", name, k, s, slot, err)
			}
		}
		m, err := cc.MasterForKey(ctx, ns)
		if err != nil {
			t.Fatal(err)
		}
		primaries[m.Options().Addr] = append(primaries[m.Options().Addr], name)
		// Its API key lives at home, with the registry.
		k, err := r.LookupAPIKey(ctx, &store.LookupAPIKeyParams{KeyHash: "hash-" + name})
		if err != nil || k.Tenant != name {
			t.Fatalf("lookup %s's key: %v %v", name, k, err)
		}
	}
	t.Logf("tenants by primary: %v", primaries)
	if len(primaries) < 2 {
		t.Errorf("8 tenants on %d primary, want them spread over at least 2 of the cluster's", len(primaries))
	}
	// Nothing of a tenant is in the home namespace but its registry entry
	// and creation record, keys and hints.
	var homeExec atomic.Int64
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error {
		ks, err := c.Keys(ctx, "{"+prefix+"}:exec:*").Result()
		homeExec.Add(int64(len(ks)))
		return err
	})
	if err != nil || homeExec.Load() != 0 {
		t.Errorf("home namespace holds %d executions (%v), want none", homeExec.Load(), err)
	}
}

// clusterAddrs lists the nodes a redis-cluster:// URL names.
func clusterAddrs(t testing.TB, url string) []string {
	t.Helper()
	_, rest, _ := strings.Cut(url, "://")
	rest, _, _ = strings.Cut(rest, "?")
	rest, _, _ = strings.Cut(rest, "/")
	return strings.Split(rest, ",")
}

// TestRouterPrimaryOnly (M3): whatever the URL says, the tenant router
// reads from the primaries only: a replica may lack the last writes, and a
// hint refresh that read one could drop a live hint.
func TestRouterPrimaryOnly(t *testing.T) {
	url := clusterURL(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	r := openRouter(t, url+sep+"read_only=true&route_by_latency=true&route_randomly=true", newClusterPrefix(t, url))
	defer r.Close()
	o := r.ClientOptions()
	if o.ReadOnly || o.RouteByLatency || o.RouteRandomly {
		t.Errorf("router's cluster options: ReadOnly %v RouteByLatency %v RouteRandomly %v, want all false", o.ReadOnly, o.RouteByLatency, o.RouteRandomly)
	}
}
