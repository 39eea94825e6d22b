package e2e

import (
	"os"
	"testing"

	"github.com/latch-run/latch/internal/testdb"
)

// requireBackends reports whether a backend test must run rather than skip
// (CI sets LATCH_REQUIRE_BACKENDS).
func requireBackends() bool { return os.Getenv(testdb.RequireEnv) != "" }

// redisStore returns a store URL on the Redis named by LATCH_TEST_REDIS_URL
// with a random key prefix of its own (testdb.Redis, which removes every
// key of that prefix when t ends). Without the variable the test is
// skipped, saying so.
func redisStore(t *testing.T) string {
	t.Helper()
	ns := testdb.Redis(t, "latch_e2e_", "multi-server Redis test")
	// Runs before testdb's removal, once the servers have stopped.
	t.Cleanup(func() {
		n, err := ns.Keys(t)
		if err == nil && n == 0 && !t.Skipped() {
			t.Errorf("no key under prefix %s: was the store URL's prefix honoured?", ns.Prefix)
		}
	})
	return ns.StoreURL(t)
}

// Three `latch serve` processes on one Redis key prefix: the multi-server
// scenario of testThreeServers (one id and one run per key across servers;
// nothing lost, nothing run twice, inflight exact across a SIGKILL).
func TestRedisThreeServers(t *testing.T) {
	t.Parallel()
	testThreeServers(t, redisStore(t))
}

// redisClusterStore is redisStore on the Redis Cluster named by
// LATCH_TEST_REDIS_CLUSTER_URL (testdb.RedisCluster).
func redisClusterStore(t *testing.T) string {
	t.Helper()
	ns := testdb.RedisCluster(t, "latch_e2e_", "multi-server Redis Cluster test")
	t.Cleanup(func() {
		n, err := ns.Keys(t)
		if err == nil && n == 0 && !t.Skipped() {
			t.Errorf("no key under prefix %s: was the store URL's prefix honoured?", ns.Prefix)
		}
	})
	return ns.StoreURL(t)
}

// Three `latch serve` processes on one key prefix of a Redis Cluster
// (redis-cluster://): the same scenario as TestRedisThreeServers.
func TestRedisClusterThreeServers(t *testing.T) {
	t.Parallel()
	testThreeServers(t, redisClusterStore(t))
}
