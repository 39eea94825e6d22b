package redis_test

import (
	"testing"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/redis"
	"github.com/latch-run/latch/test/lincheck"
)

// newLincheckStore opens a Store on a fresh key prefix, dropped when t ends,
// and checks the namespace's internal consistency first.
func newLincheckStore(t *testing.T) store.Store {
	url := redisURL(t)
	s := open(t, url, newPrefix(t, url))
	t.Cleanup(func() { s.Close() })
	t.Cleanup(func() { redis.CheckConsistency(t, s) })
	return s
}

// TestLinearizable checks concurrent histories of the Redis store with
// porcupine against the sequential model: TestLinearizable/redis/...
func TestLinearizable(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		redisURL(t)
		lincheck.Check(t, newLincheckStore)
	})
}

// TestProperty runs the seeded model-based property test on Redis.
func TestProperty(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		redisURL(t)
		lincheck.Property(t, newLincheckStore)
	})
}
