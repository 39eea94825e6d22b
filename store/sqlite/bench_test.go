package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/storebench"
)

// go test -run '^$' -bench . ./store/sqlite
func BenchmarkStore(b *testing.B) {
	storebench.Benchmarks(b, func(b *testing.B) store.Store {
		s, err := Open(context.Background(), filepath.Join(b.TempDir(), "latch.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	})
}
