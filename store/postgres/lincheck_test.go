package postgres_test

import (
	"testing"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/test/lincheck"
)

// lincheckPoolSize gives each of lincheck.Check's 12 concurrent clients (its
// default) a connection of its own, so that the histories interleave in the
// database rather than in a pool's queue. Check and Property run one
// database at a time, and before the parallel tests of this package start.
const lincheckPoolSize = 12

func newLincheckStore(t *testing.T) store.Store { return newStore(t, lincheckPoolSize) }

// newLincheckServers opens n stores on one fresh schema, each with its own
// pool (together lincheckPoolSize connections), as n servers on one
// database would.
func newLincheckServers(t *testing.T, n int) []store.Store {
	t.Helper()
	acquireSlot(t)
	schema, _ := newSchema(t)
	servers := make([]store.Store, n)
	for i := range servers {
		s := openSchema(t, databaseURL(t), schema, int32(max(1, lincheckPoolSize/n)))
		t.Cleanup(func() { s.Close() })
		servers[i] = s
	}
	return servers
}

// TestLinearizable checks concurrent histories of the PostgreSQL store with
// porcupine against the sequential model, the clients spread over three
// stores on one schema: TestLinearizable/postgres/Tenants and
// .../Contention, each on a schema of its own.
func TestLinearizable(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		databaseURL(t)
		lincheck.Check(t, newLincheckServers)
	})
}

// TestProperty runs the seeded model-based property test on PostgreSQL:
// TestProperty/postgres, every case on one schema.
func TestProperty(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		databaseURL(t)
		lincheck.Property(t, newLincheckStore)
	})
}
