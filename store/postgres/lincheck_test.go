package postgres_test

import (
	"testing"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/test/lincheck"
)

// lincheckPoolSize gives each of lincheck.Check's 12 concurrent clients (its
// default) a connection of its own, so that the histories interleave in the
// database rather than in the pool's queue. Check and Property run one store
// at a time, and before the parallel tests of this package start.
const lincheckPoolSize = 12

func newLincheckStore(t *testing.T) store.Store { return newStore(t, lincheckPoolSize) }

// TestLinearizable checks concurrent histories of the PostgreSQL store with
// porcupine against the sequential model: TestLinearizable/postgres/Tenants
// and .../Contention, each on a schema of its own.
func TestLinearizable(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		databaseURL(t)
		lincheck.Check(t, newLincheckStore)
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
