package latch_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch"
	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/postgres"
	"github.com/latch-run/latch/store/sqlite"
)

// pgLatest and pgAll are what a PostgreSQL schema's report says of this
// build's migrations.
var (
	pgLatest = postgres.SchemaVersion()
	pgAll    = func() []int {
		v := make([]int, pgLatest)
		for i := range v {
			v[i] = i + 1
		}
		return v
	}()
)

func pgStatus(version int) string {
	s := fmt.Sprintf("schema version %d, this latch knows up to %d", version, pgLatest)
	if version == pgLatest {
		return s + " (up to date)"
	}
	return s + fmt.Sprintf(" (%d pending)", pgLatest-version)
}

// redisURL is LATCH_TEST_REDIS_URL with a key prefix of the test's own,
// whose keys are removed when the test ends.
func redisURL(t *testing.T, what string) string {
	t.Helper()
	base := testdb.URL(t, testdb.RedisEnv, what)
	prefix := testdb.Name("latch_facade_")
	t.Cleanup(func() {
		opt, err := goredis.ParseURL(base)
		if err != nil {
			t.Error(err)
			return
		}
		rdb := goredis.NewClient(opt)
		defer rdb.Close()
		ctx := context.Background()
		keys, err := rdb.Keys(ctx, "{"+prefix+"}:*").Result()
		if err == nil && len(keys) > 0 {
			err = rdb.Unlink(ctx, keys...).Err()
		}
		if err != nil {
			t.Errorf("remove the keys of prefix %s: %v", prefix, err)
		}
	})
	return testdb.WithParams(t, base, map[string]string{"prefix": prefix})
}

// migrate runs latch.Migrate and checks its report.
func migrate(t *testing.T, storeURL, op string, want ...string) *latch.Migration {
	t.Helper()
	m, err := latch.Migrate(t.Context(), storeURL, op)
	if err != nil {
		t.Fatalf("Migrate(%s): %v", op, err)
	}
	if !reflect.DeepEqual(m.Report, want) {
		t.Fatalf("Migrate(%s) reports %q, want %q", op, m.Report, want)
	}
	return m
}

func TestMigrateSQLite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	want := fmt.Sprintf("schema version %d (up to date: SQLite migrates itself when opened)", sqlite.SchemaVersion())
	status := fmt.Sprintf("schema version %d, this latch knows up to %d (up to date)", sqlite.SchemaVersion(), sqlite.SchemaVersion())
	for i, u := range []string{"sqlite:" + filepath.Join(dir, "a.db"), "sqlite://" + filepath.Join(dir, "b.db"), filepath.Join(dir, "c.db")} {
		// status reads: on a file that does not exist it is an error, and
		// the file is not made.
		file := filepath.Join(dir, string(rune('a'+i))+".db")
		if _, err := latch.Migrate(t.Context(), u, "status"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("status of %s before up: %v, want fs.ErrNotExist", u, err)
		}
		if _, err := os.Stat(file); !os.IsNotExist(err) {
			t.Fatalf("status made %s: %v", file, err)
		}
		migrate(t, u, "up", want)
		migrate(t, u, "status", status)
	}
	// down is refused before the file is touched.
	path := filepath.Join(dir, "d.db")
	if _, err := latch.Migrate(t.Context(), "sqlite:"+path, "down"); !errors.Is(err, errors.ErrUnsupported) ||
		err.Error() != "latch: migrate down is for PostgreSQL stores; a SQLite store migrates itself when opened" {
		t.Fatalf("down on SQLite: %v, want ErrUnsupported", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("down on SQLite made the file: %v", err)
	}
}

func TestMigrateRefusesBadInput(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a.db")
	for _, c := range []struct{ url, op string }{{"sqlite:" + path, "sideways"}, {"sqlite:" + path, ""}, {"mysql://x", "up"}, {"sqlite:", "status"}} {
		if _, err := latch.Migrate(t.Context(), c.url, c.op); !errors.Is(err, latch.ErrInvalid) {
			t.Errorf("Migrate(%q, %q) = %v, want ErrInvalid", c.url, c.op, err)
		}
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a refused migrate made the file: %v", err)
	}
}

func TestMigratePostgres(t *testing.T) {
	t.Parallel()
	u := testdb.PostgresSchema(t, "latch_migrate_", "latch.Migrate on PostgreSQL")
	migrate(t, u, "status", pgStatus(0))
	if m := migrate(t, u, "up", fmt.Sprintf("applied migrations %v", pgAll), pgStatus(pgLatest)); !reflect.DeepEqual(m.Ran, pgAll) {
		t.Fatalf("up ran %v, want %v", m.Ran, pgAll)
	}
	migrate(t, u, "up", "nothing to migrate", pgStatus(pgLatest))
	migrate(t, u, "down", fmt.Sprintf("reverted migration [%d]", pgLatest), pgStatus(pgLatest-1))
	migrate(t, u, "up", fmt.Sprintf("applied migrations [%d]", pgLatest), pgStatus(pgLatest))
	migrate(t, u, "status", pgStatus(pgLatest))
}

func TestMigrateRedis(t *testing.T) {
	t.Parallel()
	u := redisURL(t, "latch.Migrate on Redis")
	for _, op := range []string{"up", "down", "status"} {
		migrate(t, u, op, "a Redis store has no schema: nothing to migrate")
	}
}

// Whether a store is shared by servers in several processes is the
// store's to say (store.Sharer), whatever the URL's spelling.
func TestStoreSharedAcrossProcesses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pg := testdb.PostgresSchema(t, "latch_shared_", "store.Sharer on PostgreSQL")
	if _, err := latch.Migrate(t.Context(), pg, "up"); err != nil {
		t.Fatal(err)
	}
	redis := redisURL(t, "store.Sharer on Redis")
	for u, want := range map[string]bool{
		"sqlite:" + filepath.Join(dir, "a.db"):   false,
		"sqlite://" + filepath.Join(dir, "b.db"): false,
		filepath.Join(dir, "c.db"):               false,
		"SQLITE:" + filepath.Join(dir, "d"):      false,
		pg:                                       true,
		redis:                                    true,
	} {
		c, err := latch.Open(t.Context(), u)
		if err != nil {
			t.Fatal(err)
		}
		if got := store.SharedAcrossProcesses(c.Store()); got != want {
			t.Errorf("%s: shared across processes = %v, want %v", u, got, want)
		}
		c.Close()
	}
}

func TestNeedsMigrate(t *testing.T) {
	t.Parallel()
	for u, want := range map[string]bool{
		"sqlite:latch.db":                 false,
		"sqlite://latch.db":               false,
		"latch.db":                        false,
		"redis://127.0.0.1:6379/0":        false,
		"postgres://u@127.0.0.1/latch":    true,
		" POSTGRESQL://u@127.0.0.1/latch": true,
		"mysql://x":                       false,
	} {
		if got := latch.NeedsMigrate(u); got != want {
			t.Errorf("NeedsMigrate(%q) = %v, want %v", u, got, want)
		}
	}
}
