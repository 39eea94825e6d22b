package redis_test

import (
	"testing"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/storetest"
)

// LATCH_TEST_REDIS_URL=redis://127.0.0.1:6379/0 go test -run '^$' -bench . -benchtime 20000x ./store/redis
func BenchmarkStore(b *testing.B) {
	url := redisURL(b)
	storetest.Benchmarks(b, func(b *testing.B) store.Store {
		s := open(b, url, newPrefix(b, url))
		b.Cleanup(func() { s.Close() })
		return s
	})
}
