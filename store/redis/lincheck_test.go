package redis_test

import (
	"testing"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/redis"
	"github.com/latch-run/latch/test/lincheck"
)

// newServers opens n stores on one fresh key prefix, each with its own
// client, as n servers on one Redis would; the prefix's keys are checked
// for consistency, then deleted, when t ends.
func newServers(t *testing.T, n int) []store.Store {
	t.Helper()
	url := redisURL(t)
	return openServers(t, url, newPrefix(t, url), n)
}

// newClusterServers is newServers on the Redis Cluster, each server a
// tenant router (what a redis-cluster:// URL opens); every namespace is
// checked for consistency when t ends.
func newClusterServers(t *testing.T, n int) []store.Store {
	t.Helper()
	url := clusterURL(t)
	prefix := newClusterPrefix(t, url)
	servers := make([]store.Store, n)
	for i := range servers {
		r := openRouter(t, url, prefix)
		t.Cleanup(func() { r.Close() })
		servers[i] = r
	}
	t.Cleanup(func() { redis.CheckRouterConsistency(t, servers[0].(*redis.Router)) })
	return servers
}

func openServers(t *testing.T, url, prefix string, n int) []store.Store {
	t.Helper()
	servers := make([]store.Store, n)
	for i := range servers {
		s := open(t, url, prefix)
		t.Cleanup(func() { s.Close() })
		servers[i] = s
	}
	t.Cleanup(func() { redis.CheckConsistency(t, servers[0].(*redis.Store)) })
	return servers
}

// TestLinearizable checks concurrent histories of the Redis store with
// porcupine against the sequential model, the clients spread over three
// stores on one key prefix: TestLinearizable/redis/Tenants and
// .../Contention, each on a key prefix of its own; and the same on the
// Redis Cluster, TestLinearizable/redis-cluster/...
func TestLinearizable(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		redisURL(t)
		lincheck.Check(t, newServers)
	})
	t.Run("redis-cluster", func(t *testing.T) {
		clusterURL(t)
		lincheck.Check(t, newClusterServers)
	})
}

// TestProperty runs the seeded model-based property test on Redis:
// TestProperty/redis, every case on one key prefix; and on the Redis
// Cluster through a tenant router, TestProperty/redis-cluster.
func TestProperty(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		redisURL(t)
		lincheck.Property(t, newStore)
	})
	t.Run("redis-cluster", func(t *testing.T) {
		clusterURL(t)
		lincheck.Property(t, newRouterStore)
	})
}
