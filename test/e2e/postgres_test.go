package e2e

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/latch-run/latch/internal/testdb"
)

// postgresStore creates a schema of its own in the database named by
// LATCH_TEST_POSTGRES_URL, migrates it with `latch migrate up` as an
// operator would, drops it when t ends, and returns its store URL. Without
// the variable the test is skipped, saying so.
func postgresStore(t *testing.T) string {
	t.Helper()
	store := testdb.PostgresSchema(t, "latch_e2e_", "multi-server PostgreSQL test")

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
