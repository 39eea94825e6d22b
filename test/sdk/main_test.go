package sdk

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// latchBin is the latch binary the SDKs' suites run against, built by
// TestMain, with the race detector when the tests run with it.
var latchBin string

// TestMain builds latch once, before any test runs: its build (minutes
// with empty Go caches on a busy machine) is not counted in a test's time.
// Run as a worker process of the Go scenario (scenarioWorkerEnv), the test
// binary builds nothing.
func TestMain(m *testing.M) {
	if storeURL := os.Getenv(scenarioWorkerEnv); storeURL != "" {
		os.Exit(scenarioWorkerMain(storeURL))
	}
	if url := os.Getenv(remoteScenarioWorkerEnv); url != "" {
		os.Exit(remoteScenarioWorkerMain(url))
	}
	dir, err := os.MkdirTemp("", "latch-sdk-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	latchBin = filepath.Join(dir, "latch")
	args := []string{"build", "-o", latchBin}
	if raceEnabled {
		// Like the test binaries: with empty caches, a build without -race
		// would compile every package of latch a second time.
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "github.com/latch-run/latch/cmd/latch")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ./cmd/latch: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
