package soak

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch"
	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/postgres"
)

// The short soak of CI: a few seconds at a modest rate on every backend,
// one after the other (the goroutine check counts the whole process's
// goroutines), with no breach allowed. LATCH_SOAK_DURATION and
// LATCH_SOAK_RATE make it longer or heavier:
//
//	LATCH_SOAK_DURATION=2m LATCH_SOAK_RATE=300 go test -run TestSoak/sqlite -v ./cmd/latch/internal/soak
func TestSoak(t *testing.T) {
	// Under the race detector the SQLite driver (pure Go) is many times
	// slower: a rate it keeps up with there.
	sqliteRate := 100
	if raceEnabled {
		sqliteRate = 25
	}
	// The package's tests stay within 40s under -race on a busy machine:
	// 8s on SQLite, 7s on the others.
	for _, b := range []struct {
		name string
		open func(t *testing.T) store.Store
		rate int
		d    time.Duration
	}{
		{"sqlite", sqliteStore, sqliteRate, 8 * time.Second},
		{"postgres", postgresStore, 100, 7 * time.Second},
		{"redis", redisStore, 100, 7 * time.Second},
	} {
		t.Run(b.name, func(t *testing.T) {
			st := b.open(t)
			runSoak(t, st, b.rate, b.d)
		})
	}
}

func runSoak(t *testing.T, st store.Store, rate int, d time.Duration) {
	t.Helper()
	if v := os.Getenv("LATCH_SOAK_DURATION"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			t.Fatalf("LATCH_SOAK_DURATION: %v", err)
		}
	}
	if v := os.Getenv("LATCH_SOAK_RATE"); v != "" {
		var err error
		if rate, err = strconv.Atoi(v); err != nil {
			t.Fatalf("LATCH_SOAK_RATE: %v", err)
		}
	}
	var out strings.Builder
	res, err := Run(t.Context(), Config{
		Store: st, Duration: d, Rate: rate, ReportEvery: 2 * time.Second,
		DrainTimeout: 20 * time.Second, Out: &out, TempDir: t.TempDir(),
	})
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res.Verdict())
	if !res.OK() {
		t.Errorf("the soak found breaches: %s", res.Verdict())
	}
}

func sqliteStore(t *testing.T) store.Store {
	c, err := latch.Open(t.Context(), "sqlite:"+testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.Store()
}

// postgresStore opens a schema of its own, migrated as an operator would
// (`latch migrate up`) and opened as `latch prove` does (latch.Open), and
// drops it when t ends.
func postgresStore(t *testing.T) store.Store {
	ctx := context.Background()
	storeURL := testdb.PostgresSchema(t, "latch_soak_", "the soak")
	if _, err := postgres.Migrate(ctx, storeURL, "up"); err != nil {
		t.Fatalf("migrate up: %v", err)
	}
	c, err := latch.Open(ctx, storeURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.Store()
}

// redisStore opens the Redis store under a key prefix of its own and
// removes the prefix's keys (testdb.Redis: never a flush, the database is
// shared) when t ends.
func redisStore(t *testing.T) store.Store {
	ns := testdb.Redis(t, "latch_soak_", "the soak")
	c, err := latch.Open(context.Background(), ns.StoreURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.Store()
}
