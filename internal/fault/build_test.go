package fault

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// crasher is testdata/crasher built once by TestMain, with the given extra
// build flags: bin is the binary, diag the build's output, err its failure.
type crasher struct {
	flags     []string
	bin, diag string
	err       error
}

// The two builds TestBuilds runs: with the tag faults, and without it but
// with the compiler's inlining decisions printed.
var (
	faultsCrasher = &crasher{flags: []string{"-tags", "faults"}}
	plainCrasher  = &crasher{flags: []string{"-gcflags=-m"}}
)

// TestMain builds the crashers before any test runs: their build (a
// minute or more with empty Go caches on a busy machine) is not counted in
// a test's time. Nothing is built with -short, or without a go command.
func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "latch-fault-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if goCmd, err := exec.LookPath("go"); err == nil && !testing.Short() {
		for i, c := range []*crasher{faultsCrasher, plainCrasher} {
			c.bin = filepath.Join(dir, fmt.Sprintf("crasher%d", i))
			args := append([]string{"build", "-o", c.bin}, c.flags...)
			out, err := exec.Command(goCmd, append(args, "./testdata/crasher")...).CombinedOutput()
			c.diag = string(out)
			if err != nil {
				c.err = fmt.Errorf("go build %v ./testdata/crasher: %w\n%s", c.flags, err, out)
			}
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// get answers the crasher's binary and build output, failing t when it
// was not built.
func (c *crasher) get(t *testing.T) (string, string) {
	t.Helper()
	switch {
	case c.err != nil:
		t.Fatal(c.err)
	case c.bin == "":
		t.Skip("SKIP: no go command to build testdata/crasher with")
	}
	return c.bin, c.diag
}

// runCrasher runs bin hitting point n times with LATCH_FAULTS=faults.
func runCrasher(t *testing.T, bin, faults, point string, n string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command(bin, point, n)
	cmd.Env = append(os.Environ(), Env+"="+faults)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

func killedBySIGKILL(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// A program built with -tags faults dies by SIGKILL at the hit its rule
// names, after one line on stderr, and not before; built without the tag,
// it ignores LATCH_FAULTS, and its calls of Point are inlined away.
func TestBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIP: builds programs; not run with -short")
	}
	t.Parallel()
	t.Run("faults", func(t *testing.T) {
		t.Parallel()
		bin, _ := faultsCrasher.get(t)

		out, errOut, err := runCrasher(t, bin, " worker.handler.started = @3 ,api.submit.committed=0", WorkerHandlerStarted, "5")
		if !killedBySIGKILL(err) {
			t.Errorf("@3: want death by SIGKILL, got %v; stdout:\n%s\nstderr:\n%s", err, out, errOut)
		}
		if out != "hit 1\nhit 2\nhit 3\n" {
			t.Errorf("@3: stdout %q: want death at the 3rd hit", out)
		}
		want := `latch: fault point worker.handler.started fired at hit 3 (LATCH_FAULTS rule "worker.handler.started = @3"): SIGKILL` + "\n"
		if errOut != want {
			t.Errorf("@3: stderr %q, want %q", errOut, want)
		}

		// Probability 1: the first hit.
		if out, _, err := runCrasher(t, bin, "api.complete.committed=1", APICompleteCommitted, "3"); !killedBySIGKILL(err) || out != "hit 1\n" {
			t.Errorf("probability 1: %v, stdout %q", err, out)
		}
		// Rules for other points, probability 0, or none: never.
		for _, faults := range []string{"", "api.submit.committed=0", "api.batch.committed=1,worker.handler.returned=@1"} {
			out, errOut, err := runCrasher(t, bin, faults, APISubmitCommitted, "50")
			if err != nil || !strings.HasSuffix(out, "hit 50\nsurvived\n") || errOut != "" {
				t.Errorf("LATCH_FAULTS=%q: %v, stdout %q, stderr %q", faults, err, out, errOut)
			}
		}
		// A mistake stops the program at start-up, naming it.
		out, errOut, err = runCrasher(t, bin, "api.submit.commited=1", APISubmitCommitted, "1")
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || out != "" ||
			!strings.Contains(errOut, `unknown point "api.submit.commited"`) {
			t.Errorf("a misspelt point: %v, stdout %q, stderr %q", err, out, errOut)
		}
	})
	t.Run("normal", func(t *testing.T) {
		t.Parallel()
		bin, diag := plainCrasher.get(t)
		if !strings.Contains(diag, "inlining call to fault.Point") {
			t.Errorf("the call of Point is not inlined:\n%s", diag)
		}
		out, errOut, err := runCrasher(t, bin, WorkerHandlerStarted+"=@1", WorkerHandlerStarted, "3")
		if err != nil || out != "hit 1\nhit 2\nhit 3\nsurvived\n" || errOut != "" {
			t.Errorf("built without the tag: %v, stdout %q, stderr %q", err, out, errOut)
		}
	})
}
