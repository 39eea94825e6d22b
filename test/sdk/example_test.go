package sdk

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/latch-run/latch/remote"
)

// The example examples/remote-worker, a module of its own that requires
// latch through a replace of this repository: it builds from its go.mod
// and go.sum with no module download (GOPROXY=off, -mod=readonly: what it
// needs is what this module pins, in the cache this module's build
// filled), and runs against `latch serve`: a worker process is SIGKILLed
// in the flow's last step, another finishes the flow, and the charge,
// recorded before the kill, happened once.
func TestRemoteWorkerExample(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "remote-worker")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race") // reuses this build's cache
	}
	build := exec.Command("go", append(args, ".")...)
	build.Dir = filepath.Join("..", "..", "examples", "remote-worker")
	build.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=readonly", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build in examples/remote-worker, offline: %v\n%s", err, out)
	}

	srv := startScenarioServer(t)
	admin := remote.New(srv.url, goAdminKey)
	_, key, c := remoteTenant(t, admin, srv, "example")
	effect := filepath.Join(t.TempDir(), "effect")
	env := append(os.Environ(), "LATCH_URL="+srv.url, "LATCH_KEY="+key, "EFFECT_FILE="+effect)
	proc := func(extra []string, args ...string) *workerProc {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(slices.Clone(env), extra...)
		return startProc(t, cmd)
	}

	// Worker A hangs in the flow's last step.
	a := proc([]string{"HANG=notify"}, "work")
	if l := a.line(t); !strings.HasPrefix(l, "worker started ") {
		t.Fatalf("worker A said %q", l)
	}
	order := proc(nil, "order", "42")
	submitted := order.line(t)
	id, ok := strings.CutPrefix(submitted, "submitted ")
	if !ok {
		t.Fatalf("order said %q", submitted)
	}
	if l := a.line(t); l != "hanging in notify of order 42 attempt 1" {
		t.Fatalf("worker A said %q", l)
	}
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.exited

	// Worker B finishes it once the server has rescued A's lease (3 s).
	b := proc(nil, "work")
	if l := b.line(t); !strings.HasPrefix(l, "worker started ") {
		t.Fatalf("worker B said %q", l)
	}
	result := order.line(t)
	<-order.exited
	if order.err != nil {
		t.Fatalf("order: %v\n%s", order.err, order.stderr.String())
	}
	want := `succeeded {"approval":{"by":"ann"},"charge":"ch_` + id + `","order":42,"shipped":["shipped parcel 1","shipped parcel 2"]}`
	if result != want {
		t.Fatalf("order said %q, want %q", result, want)
	}
	raw, err := os.ReadFile(effect)
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != "charged 42\n" {
		t.Fatalf("the effect file is %q, want one charge", raw)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	runs, err := c.Attempts(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var outcomes []string
	for _, r := range runs.Items {
		if r.Outcome != nil {
			outcomes = append(outcomes, string(*r.Outcome))
		}
	}
	// Suspended for the approval, then the run killed in notify (expired),
	// then B's: it resumes from the journal.
	if len(outcomes) < 3 || !slices.Contains(outcomes, "expired") || outcomes[len(outcomes)-1] != "succeeded" {
		t.Fatalf("runs %q, want the killed run expired and the last succeeded", outcomes)
	}
	steps := map[string]json.RawMessage{}
	for s, err := range c.Steps(ctx, id, remote.PageOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		steps[s.Name] = s.Result
	}
	if len(steps) != 5 || string(steps["notify"]) != `"notified"` {
		t.Fatalf("journal %v, want charge, approval, ship, ship/wait and notify", steps)
	}

	// The same order again is the same execution, already done.
	again := proc(nil, "order", "42")
	if l := again.line(t); l != submitted {
		t.Fatalf("the order again said %q, want %q", l, submitted)
	}
	if l := again.line(t); l != want {
		t.Fatalf("the order again said %q, want %q", l, want)
	}

	// SIGTERM: B stops and exits 0.
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var out []string
	for l := range b.lines {
		out = append(out, l)
	}
	<-b.exited
	if b.err != nil || !slices.Equal(out, []string{"worker stopped"}) {
		t.Fatalf("worker B after SIGTERM: %v, said %q; stderr:\n%s", b.err, out, b.stderr.String())
	}
}
