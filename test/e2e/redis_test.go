package e2e

import (
	"context"
	"os"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/internal/testdb"
)

// requireBackends reports whether a backend test must run rather than skip
// (CI sets LATCH_REQUIRE_BACKENDS).
func requireBackends() bool { return os.Getenv("LATCH_REQUIRE_BACKENDS") != "" }

// redisStore returns a store URL on the Redis named by LATCH_TEST_REDIS_URL
// with a random key prefix of its own, and removes every key of that prefix
// (SCAN + UNLINK, never FLUSHDB: other packages share the database) when t
// ends. Without the variable the test is skipped, saying so.
func redisStore(t *testing.T) string {
	t.Helper()
	base := testdb.URL(t, testdb.RedisEnv, "multi-server Redis test")
	opt, err := goredis.ParseURL(base)
	if err != nil {
		t.Fatalf("LATCH_TEST_REDIS_URL: %v", err)
	}
	rdb := goredis.NewClient(opt)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		t.Fatalf("connect to LATCH_TEST_REDIS_URL: %v", err)
	}
	prefix := testdb.Name("latch_e2e_")
	t.Cleanup(func() {
		defer rdb.Close()
		n, err := unlinkMatching(rdb, "*"+prefix+"*")
		if err != nil {
			t.Errorf("remove the keys of prefix %s: %v", prefix, err)
			return
		}
		if n == 0 && !t.Skipped() {
			t.Errorf("no key under prefix %s: was the store URL's prefix honoured?", prefix)
		}
	})
	return testdb.WithParams(t, base, map[string]string{"prefix": prefix})
}

// unlinkMatching removes the keys matching pattern with SCAN and UNLINK and
// returns how many it removed.
func unlinkMatching(rdb *goredis.Client, pattern string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	removed := 0
	var cursor uint64
	for {
		keys, next, err := rdb.Scan(ctx, cursor, pattern, 1000).Result()
		if err != nil {
			return removed, err
		}
		if len(keys) > 0 {
			n, err := rdb.Unlink(ctx, keys...).Result()
			if err != nil {
				return removed, err
			}
			removed += int(n)
		}
		if cursor = next; cursor == 0 {
			return removed, nil
		}
	}
}

// Three `latch serve` processes on one Redis key prefix: the multi-server
// scenario of testThreeServers (one id and one run per key across servers;
// nothing lost, nothing run twice, inflight exact across a SIGKILL).
func TestRedisThreeServers(t *testing.T) {
	t.Parallel()
	testThreeServers(t, redisStore(t))
}
