package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/storetest"
)

// go test -run '^$' -bench . ./store/sqlite
func BenchmarkStore(b *testing.B) {
	storetest.Benchmarks(b, func(b *testing.B) store.Store {
		s, err := Open(context.Background(), filepath.Join(b.TempDir(), "latch.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	})
}
