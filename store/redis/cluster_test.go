package redis_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/redis"
)

// clusterURL returns LATCH_TEST_REDIS_CLUSTER_URL (a redis-cluster:// URL),
// or skips t loudly when it is unset (fails under LATCH_REQUIRE_BACKENDS).
func clusterURL(t testing.TB) string {
	t.Helper()
	return testdb.URL(t, testdb.RedisClusterEnv, "the Redis Cluster suite")
}

// newClusterPrefix is newPrefix on the Redis Cluster: a key prefix of the
// test's own, whose keys are removed from every primary when t ends.
func newClusterPrefix(t testing.TB, url string) string {
	t.Helper()
	ns := testdb.RedisCluster(t, "latchtest-", "the Redis Cluster suite")
	if ns.URL != url {
		t.Fatalf("newClusterPrefix on %s, but the test cluster is %s", url, ns.URL)
	}
	return ns.Prefix
}

// newClusterStore is newStore on the Redis Cluster.
func newClusterStore(t *testing.T) store.Store {
	t.Helper()
	url := clusterURL(t)
	s := open(t, url, newClusterPrefix(t, url))
	t.Cleanup(func() { s.Close() })
	t.Cleanup(func() { redis.CheckConsistency(t, s) })
	return s
}

func TestClusterURL(t *testing.T) {
	addrs, user, dial, prefix, err := redis.ClusterOptions(
		"redis-cluster://u:p@127.0.0.1:7000,10.0.0.2:7001,[::1]:7002/0?prefix=jobs&dial_timeout=3s")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"127.0.0.1:7000", "10.0.0.2:7001", "[::1]:7002"}; !slices.Equal(addrs, want) {
		t.Errorf("addrs %q, want %q", addrs, want)
	}
	if user != "u" || dial != 3*time.Second || prefix != "jobs" {
		t.Errorf("user %q, dial_timeout %v, prefix %q; want u, 3s, jobs", user, dial, prefix)
	}
	for _, bad := range []string{
		"redis-cluster://127.0.0.1:7000/1",               // a cluster has database 0 only
		"redis-cluster://127.0.0.1:7000,,127.0.0.1:7001", // an empty address
		"redis-cluster://127.0.0.1:7000?nonsense=1",      // an unknown option
		"redis-cluster://127.0.0.1:7000?prefix={x}",      // a prefix that breaks the hash tag
	} {
		if s, err := redis.Open(t.Context(), bad); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", bad)
		}
	}
}

// TestClusterFunctionLibraryReloaded: a primary that lacks the function
// library (as a new primary after a resharding would) gets it again at the
// next call, which then runs as if nothing had happened; and the scripts,
// run by EVALSHA, survive primaries that lost their script cache.
func TestClusterFunctionLibraryReloaded(t *testing.T) {
	url := clusterURL(t)
	ctx := t.Context()
	s := open(t, url, newClusterPrefix(t, url))
	defer s.Close()
	scripts, err := redis.Open(ctx, url, redis.WithPrefix(newClusterPrefix(t, url)), redis.WithScripts())
	if err != nil {
		t.Fatal(err)
	}
	defer scripts.Close()
	cc := clusterAdmin(t, url)
	for _, st := range []*redis.Store{s, scripts} {
		if _, err := st.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme"}); err != nil {
			t.Fatal(err)
		}
	}
	// Only this build's library: other Stores of this build on the cluster
	// load it again too. SCRIPT FLUSH empties every primary's cache.
	if err := cc.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error {
		if err := c.FunctionDelete(ctx, redis.Library()).Err(); err != nil {
			return err
		}
		return c.ScriptFlush(ctx).Err()
	}); err != nil {
		t.Fatal(err)
	}
	for _, st := range []*redis.Store{s, scripts} {
		res, err := st.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: []store.Submission{{Kind: "echo", DedupKey: "k"}}})
		if err != nil || res.Items[0].Err != nil {
			t.Fatalf("admit after the primaries lost the library and the scripts: %v %v", err, res)
		}
		c, err := st.Claim(ctx, &store.ClaimParams{WorkerID: "w", Max: 1, LeaseDuration: time.Minute})
		if err != nil || len(c.Leases) != 1 {
			t.Fatalf("claim: %v %v", err, c)
		}
		if _, err := st.Complete(ctx, &store.CompleteParams{ExecutionID: c.Leases[0].ExecutionID, Token: c.Leases[0].Token}); err != nil {
			t.Fatal(err)
		}
		redis.CheckConsistency(t, st)
	}
	if err := cc.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error {
		libs, err := c.FunctionList(ctx, goredis.FunctionListQuery{LibraryNamePattern: redis.Library()}).Result()
		if err == nil && len(libs) != 1 {
			err = fmt.Errorf("%d libraries named %s", len(libs), redis.Library())
		}
		return err
	}); err != nil {
		t.Errorf("after the reload, not every primary has the library: %v", err)
	}
}

// TestClusterServerCommands: what is not addressed by a key goes where it
// belongs on a cluster: PING to the namespace's primary, CONFIG GET to
// every primary (the test cluster runs without persistence, so the warning
// names them all).
func TestClusterServerCommands(t *testing.T) {
	url := clusterURL(t)
	ctx := t.Context()
	s := open(t, url, newClusterPrefix(t, url))
	defer s.Close()
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	cc := clusterAdmin(t, url)
	var (
		mu        sync.Mutex
		primaries []string
	)
	if err := cc.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error {
		cfg, err := c.ConfigGet(ctx, "appendonly").Result()
		if err == nil && cfg["appendonly"] == "no" {
			mu.Lock()
			primaries = append(primaries, c.Options().Addr)
			mu.Unlock()
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	w, err := s.CheckDurability(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(primaries)
	if want := "primaries " + strings.Join(primaries, ", ") + ": Redis runs without persistence"; !strings.Contains(w, want) {
		t.Errorf("CheckDurability = %q, want it to say %q", w, want)
	}
}

// clusterAdmin is a cluster client of the test cluster, closed when t ends.
func clusterAdmin(t *testing.T, url string) *goredis.ClusterClient {
	t.Helper()
	rest, _, _ := strings.Cut(strings.TrimPrefix(url, "redis-cluster://"), "?")
	cc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: strings.Split(rest, ",")})
	t.Cleanup(func() { cc.Close() })
	return cc
}
