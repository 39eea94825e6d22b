package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/latch-run/latch"
	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/postgres"
	"github.com/latch-run/latch/store/sqlite"
)

// latch migrate prints what it did and the schema's state; down on SQLite
// is a usage error that touches nothing.
func TestMigrateCommand(t *testing.T) {
	dir := t.TempDir()
	sqliteLine := fmt.Sprintf("schema version %d (up to date: SQLite migrates itself when opened)\n", sqlite.SchemaVersion())
	sqliteStatus := fmt.Sprintf("schema version %d, this latch knows up to %d (up to date)", sqlite.SchemaVersion(), sqlite.SchemaVersion())
	for i, u := range []string{"sqlite:" + filepath.Join(dir, "a.db"), "sqlite://" + filepath.Join(dir, "b.db"), filepath.Join(dir, "c.db")} {
		file := filepath.Join(dir, string(rune('a'+i))+".db")
		// A status reads: on a store that does not exist it says so,
		// exits 3 and creates nothing.
		code, out, errOut := cli(t, "migrate", "status", "--store", u)
		if code != exitNotFound || out != "" || !strings.Contains(errOut, "no SQLite store at "+u) {
			t.Errorf("migrate status --store %s before up: %d %q %q; want 3 and the store named", u, code, out, errOut)
		}
		if _, err := os.Stat(file); !os.IsNotExist(err) {
			t.Errorf("migrate status made %s: %v", file, err)
		}
		if code, out, errOut := cli(t, "migrate", "up", "--store", u); code != 0 || out != sqliteLine || errOut != "" {
			t.Errorf("migrate up --store %s: %d %q %q", u, code, out, errOut)
		}
		if got := migrateStatus(t, u); got != sqliteStatus {
			t.Errorf("migrate status --store %s: %q, want %q", u, got, sqliteStatus)
		}
	}
	d := filepath.Join(dir, "d.db")
	code, out, errOut := cli(t, "migrate", "down", "--store", "sqlite:"+d)
	if code != 2 || out != "" ||
		errOut != "latch migrate down: migrate down is for PostgreSQL stores; a SQLite store migrates itself when opened\nrun 'latch migrate down -h' for usage\n" {
		t.Errorf("migrate down on SQLite: %d %q %q", code, out, errOut)
	}
	if _, err := os.Stat(d); !os.IsNotExist(err) {
		t.Errorf("migrate down on SQLite made the file: %v", err)
	}
	if code, _, errOut := cli(t, "migrate", "up", "--store", "mysql://x"); code != 1 || !strings.Contains(errOut, `store URL "mysql://x"`) {
		t.Errorf("migrate up on an unknown URL: %d %q", code, errOut)
	}

	pg := testdb.PostgresSchema(t, "latch_cli_migrate_", "latch migrate on PostgreSQL")
	latest := postgres.SchemaVersion()
	status := fmt.Sprintf("schema version %d, this latch knows up to %d (up to date)\n", latest, latest)
	for _, c := range []struct{ op, want string }{
		{"up", fmt.Sprintf("applied migrations %v\n", all(latest)) + status},
		{"up", "nothing to migrate\n" + status},
		{"down", fmt.Sprintf("reverted migration [%d]\nschema version %d, this latch knows up to %d (1 pending)\n", latest, latest-1, latest)},
		{"up", fmt.Sprintf("applied migrations [%d]\n", latest) + status},
	} {
		if code, out, errOut := cli(t, "migrate", c.op, "--store", pg); code != 0 || out != c.want || errOut != "" {
			t.Errorf("migrate %s on PostgreSQL: %d %q %q, want %q", c.op, code, out, errOut, c.want)
		}
	}

	if got := migrateStatus(t, pg) + "\n"; got != status {
		t.Errorf("migrate status on PostgreSQL: %q, want %q", got, status)
	}

	redis := testdb.WithParams(t, testdb.URL(t, testdb.RedisEnv, "latch migrate on Redis"), map[string]string{"prefix": testdb.Name("latch_cli_migrate_")})
	for _, op := range []string{"up", "down"} {
		if code, out, errOut := cli(t, "migrate", op, "--store", redis); code != 0 || out != "a Redis store has no schema: nothing to migrate\n" || errOut != "" {
			t.Errorf("migrate %s on Redis: %d %q %q", op, code, out, errOut)
		}
	}
	if got := migrateStatus(t, redis); got != "a Redis store has no schema: nothing to migrate" {
		t.Errorf("migrate status on Redis: %q", got)
	}
}

// all is 1..n.
func all(n int) []int {
	v := make([]int, n)
	for i := range v {
		v[i] = i + 1
	}
	return v
}

// sharedStore is a store that says it is shared across processes.
type sharedStore struct{ store.Store }

func (sharedStore) SharedAcrossProcesses() bool { return true }

// The console-secret warning is for a store other processes share, however
// its URL is spelled, and never when the secret is set.
func TestWarnConsoleSecret(t *testing.T) {
	dir := t.TempDir()
	warns := func(st store.Store, secret []byte) bool {
		var buf bytes.Buffer
		warnConsoleSecret(st, secret, slog.New(slog.NewTextHandler(&buf, nil)))
		return strings.Contains(buf.String(), consoleSecretEnv)
	}
	for _, u := range []string{"sqlite:" + filepath.Join(dir, "a.db"), "sqlite://" + filepath.Join(dir, "b.db"), filepath.Join(dir, "c.db")} {
		c, err := latch.Open(t.Context(), u)
		if err != nil {
			t.Fatal(err)
		}
		if warns(c.Store(), nil) {
			t.Errorf("%s: warned of the console secret for a SQLite file", u)
		}
		if !warns(sharedStore{c.Store()}, nil) {
			t.Errorf("%s: no warning for a shared store", u)
		}
		if warns(sharedStore{c.Store()}, []byte("a secret of thirty-two bytes or more")) {
			t.Errorf("%s: warned though the secret is set", u)
		}
		c.Close()
	}
}

// latch prove on a PostgreSQL store it cannot open says the store must
// exist and be migrated first; on another store it does not.
func TestProveHintsMigrate(t *testing.T) {
	hint := "latch migrate up --store URL"
	if code, _, errOut := cli(t, "prove", "--store", "postgres://u@127.0.0.1:1/latch?connect_timeout=2", "--duration", "1s"); code != 1 || !strings.Contains(errOut, hint) {
		t.Errorf("prove on an unreachable PostgreSQL: %d %q, want the hint %q", code, errOut, hint)
	}
	if code, _, errOut := cli(t, "prove", "--store", "redis://127.0.0.1:1/0", "--duration", "1s"); code != 1 || strings.Contains(errOut, hint) {
		t.Errorf("prove on an unreachable Redis: %d %q, want no hint", code, errOut)
	}
}

// migrateStatus runs latch migrate status --store u, piped (so JSON), and
// returns its one line of report.
func migrateStatus(t *testing.T, u string) string {
	t.Helper()
	code, out, errOut := cli(t, "migrate", "status", "--store", u)
	var m struct {
		Report []string `json:"report"`
	}
	if err := json.Unmarshal([]byte(out), &m); code != 0 || err != nil || len(m.Report) != 1 || errOut != "" {
		t.Fatalf("migrate status --store %s: %d %q %q (%v)", u, code, out, errOut, err)
	}
	return m.Report[0]
}
