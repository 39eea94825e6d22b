package postgres_test

import (
	"sync"
	"testing"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/storetest"
)

// benchPoolSize is the benchmark store's pool: enough for the 64 clients of
// the contended workload to be in the database at once, well under the
// server's max_connections.
const benchPoolSize = 64

// LATCH_TEST_POSTGRES_URL=postgres://... go test -run '^$' -bench . ./store/postgres
func BenchmarkStore(b *testing.B) {
	databaseURL(b)
	storetest.Benchmarks(b, func(b *testing.B) store.Store {
		schema, _ := newSchema(b)
		s := openSchema(b, databaseURL(b), schema, benchPoolSize)
		b.Cleanup(func() { s.Close() })
		warmUp(b, s, benchPoolSize)
		return s
	})
}

// warmUp opens the pool's connections before the clock starts, as a running
// server's pool would have them: the first round of a workload should not
// pay for connecting.
func warmUp(b testing.TB, s store.Store, n int) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if err := s.Ping(b.Context()); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
}
