package sqlite

import (
	"context"
	"testing"

	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/storetest"
)

// go test -run '^$' -bench . ./store/sqlite
func BenchmarkStore(b *testing.B) {
	storetest.Benchmarks(b, func(b *testing.B) store.Store {
		s, err := Open(context.Background(), testdb.SQLite(b))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	})
}
