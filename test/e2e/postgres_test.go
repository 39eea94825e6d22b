package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// postgresStore creates a schema of its own in the database named by
// LATCH_TEST_POSTGRES_URL, migrates it with `latch migrate up` as an
// operator would, drops it when t ends, and returns its store URL. Without
// the variable the test is skipped, saying so.
func postgresStore(t *testing.T) string {
	t.Helper()
	base := os.Getenv("LATCH_TEST_POSTGRES_URL")
	if base == "" && os.Getenv("LATCH_REQUIRE_BACKENDS") != "" {
		t.Fatal("LATCH_REQUIRE_BACKENDS is set but LATCH_TEST_POSTGRES_URL is not")
	}
	if base == "" {
		t.Skip("SKIP: multi-server PostgreSQL test not run: set LATCH_TEST_POSTGRES_URL")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to LATCH_TEST_POSTGRES_URL: %v", err)
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	schema := "latch_e2e_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	q.Set("pool_max_conns", "10")
	u.RawQuery = q.Encode()
	store := u.String()

	// A server refuses the empty schema, naming the fix.
	out, err := exec.Command(binary, "serve", "--addr", "127.0.0.1:0", "--store", store).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "latch migrate up") {
		t.Fatalf("latch serve on an unmigrated schema: %v\n%s", err, out)
	}
	if out, err := exec.Command(binary, "migrate", "up", "--store", store).CombinedOutput(); err != nil {
		t.Fatalf("latch migrate up: %v\n%s", err, out)
	}
	return store
}

// Three `latch serve` processes on one PostgreSQL schema: the multi-server
// scenario of testThreeServers (one id and one run per key across servers;
// nothing lost, nothing run twice, inflight exact across a SIGKILL).
func TestPostgresThreeServers(t *testing.T) {
	t.Parallel()
	testThreeServers(t, postgresStore(t))
}
