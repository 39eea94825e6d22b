package lincheck_test

import (
	"flag"
	"os"
	"testing"

	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/sqlite"
	"github.com/latch-run/latch/test/lincheck"
)

// TestMain sizes the property test for this package: rapid's 100 cases by
// default, 30 under the race detector (where the SQLite driver runs some
// twenty times slower), unless -rapid.checks or RAPID_CHECKS says otherwise.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	if _, env := os.LookupEnv("RAPID_CHECKS"); raceEnabled && !set && !env {
		if err := flag.Set("rapid.checks", "30"); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}

// newSQLite opens a fresh SQLite store in the test's temporary directory.
func newSQLite(t *testing.T) store.Store { return newSQLiteServers(t, 1)[0] }

// newSQLiteServers opens n stores on one fresh database file, as n servers
// sharing the file would: each its own connections and write lock handling.
func newSQLiteServers(t *testing.T, n int) []store.Store {
	t.Helper()
	path := testdb.SQLite(t)
	servers := make([]store.Store, n)
	for i := range servers {
		s, err := sqlite.Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		servers[i] = s
	}
	return servers
}

// TestLinearizable checks concurrent histories of the SQLite store with
// porcupine, its clients spread over three stores on one database file:
// TestLinearizable/sqlite/Tenants, .../Contention. PostgreSQL and
// Redis run Check and Property from their own packages (see doc.go).
func TestLinearizable(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { lincheck.Check(t, newSQLiteServers) })
}

// TestProperty runs the seeded model-based property test on SQLite.
func TestProperty(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { lincheck.Property(t, newSQLite) })
}
