// Package sdk runs the client SDKs' own test suites (sdk/python, ...)
// against a `latch serve` built from this tree, so `go test ./...` — the
// one test command — covers them too.
package sdk

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// tool finds a program the SDK tests need. Without it they skip, unless
// LATCH_REQUIRE_SDKS is set (CI sets it).
func tool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("LATCH_REQUIRE_SDKS") != "" {
		t.Fatalf("LATCH_REQUIRE_SDKS is set but %s is not on the PATH", name)
	}
	t.Skipf("no %s on the PATH", name)
	return ""
}

// TestPython runs sdk/python's unittest suite (client, worker, flows and
// the shared scenario of sdk/SCENARIO.md) against the built server.
func TestPython(t *testing.T) {
	py := tool(t, "python3")
	bin := latchBin
	cmd := exec.Command(py, "-m", "unittest", "discover", "-s", "tests")
	cmd.Dir = filepath.Join("..", "..", "sdk", "python")
	cmd.Env = append(os.Environ(), "LATCH_BIN="+bin, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -m unittest: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
