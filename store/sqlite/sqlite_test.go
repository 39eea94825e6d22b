package sqlite_test

import (
	"testing"

	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/sqlite"
	"github.com/latch-run/latch/store/storetest"
)

// TestStore runs the shared conformance suite: TestStore/sqlite/<Family>/<Case>.
func TestStore(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store {
			s, err := sqlite.Open(t.Context(), testdb.SQLite(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		})
	})
}

// TestStoreReopen runs the suite's durability checks (I8) on a file that is
// closed and opened again.
func TestStoreReopen(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		storetest.RunReopen(t, func(t *testing.T) storetest.Reopen {
			path := testdb.SQLite(t)
			return func(t *testing.T) store.Store {
				s, err := sqlite.Open(t.Context(), path)
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
		})
	})
}
