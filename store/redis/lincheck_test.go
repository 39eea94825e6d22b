package redis_test

import (
	"testing"

	"github.com/latch-run/latch/test/lincheck"
)

// TestLinearizable checks concurrent histories of the Redis store with
// porcupine against the sequential model: TestLinearizable/redis/Tenants
// and .../Contention, each on a key prefix of its own.
func TestLinearizable(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		redisURL(t)
		lincheck.Check(t, newStore)
	})
}

// TestProperty runs the seeded model-based property test on Redis:
// TestProperty/redis, every case on one key prefix.
func TestProperty(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		redisURL(t)
		lincheck.Property(t, newStore)
	})
}
