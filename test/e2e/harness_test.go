// Package e2e holds black-box tests: they build the latch binary, start
// `latch serve` processes and talk to them only over HTTP, as a user would,
// killing processes with SIGKILL where a test needs a crash.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const adminKey = "lk_e2e-admin-key-for-the-tests-only"

// binary is the latch binary the tests run; faultsBinary is the same built
// with -tags faults, whose crash points (internal/fault) LATCH_FAULTS arms;
// orderflowBin is examples/orderflow, the flow worker of flow_kill_test.go.
var binary, faultsBinary, orderflowBin string

// TestMain builds the binaries before any test runs: their build (minutes
// with empty Go caches on a busy machine) is not counted in a test's time.
func TestMain(m *testing.M) {
	if url := os.Getenv(fanWorkerEnv); url != "" { // a worker process of fanout_kill_test.go
		os.Exit(fanWorker(url))
	}
	if url := os.Getenv(evWorkerEnv); url != "" { // a worker process of events_kill_test.go
		os.Exit(evWorker(url))
	}
	dir, err := os.MkdirTemp("", "latch-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	err = build(filepath.Join(dir, "plain"), nil,
		"github.com/latch-run/latch/cmd/latch", "github.com/latch-run/latch/examples/orderflow")
	if err == nil {
		err = build(filepath.Join(dir, "faults"), []string{"faults"}, "github.com/latch-run/latch/cmd/latch")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "plain", "latch")
	orderflowBin = filepath.Join(dir, "plain", "orderflow")
	faultsBinary = filepath.Join(dir, "faults", "latch")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// build builds the packages into dir (each binary named after its
// package's directory), with the race detector when the tests run with
// it, and with the given build tags.
func build(dir string, tags []string, pkgs ...string) error {
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	if raceEnabled {
		args = append(args, "-race")
	}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	cmd := exec.Command("go", append(args, pkgs...)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %v (tags %q): %w", pkgs, tags, err)
	}
	return nil
}

// server is one `latch serve` process.
type server struct {
	t    *testing.T
	url  string
	cmd  *exec.Cmd
	logs *bytes.Buffer
	done chan struct{}
}

// serverOpts configure startServer.
type serverOpts struct {
	store   string
	workers int
	env     []string
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startServer starts `latch serve` and waits until /readyz answers 200.
func startServer(t *testing.T, o serverOpts) *server {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(binary, "serve", "--addr", addr, "--store", o.store, "--workers", fmt.Sprint(o.workers),
		"--lease-seconds", "2", "--rescue-interval", "300ms", "--shutdown-grace", "2s")
	// The http kind calls the tests' own servers on 127.0.0.1, an
	// internal address it reaches only when listed.
	cmd.Env = append(os.Environ(), "LATCH_ADMIN_KEY="+adminKey, "LATCH_HTTP_ALLOW=127.0.0.1")
	cmd.Env = append(cmd.Env, o.env...)
	s := &server{t: t, url: "http://" + addr, cmd: cmd, logs: &bytes.Buffer{}, done: make(chan struct{})}
	cmd.Stdout = &lockedWriter{w: s.logs}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		s.kill()
		if t.Failed() {
			t.Logf("logs of latch serve at %s:\n%s", s.url, s.cmd.Stdout.(*lockedWriter).String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(s.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s
			}
		}
		select {
		case <-s.done:
			t.Fatalf("latch serve exited during start-up:\n%s", s.cmd.Stdout.(*lockedWriter).String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("latch serve not ready after 30s:\n%s", s.cmd.Stdout.(*lockedWriter).String())
		}
	}
}

// startCluster starts three `latch serve` processes with 4 worker slots
// each on one store, creates tenant on them, and returns the servers and a
// client of the tenant for each.
func startCluster(t *testing.T, store, tenant string) ([3]*server, []*client) {
	t.Helper()
	var servers [3]*server
	for i := range servers {
		servers[i] = startServer(t, serverOpts{store: store, workers: 4})
	}
	key := createTenant(t, servers[0].url, tenant)
	clients := make([]*client, len(servers))
	for i, s := range servers {
		clients[i] = newClient(s.url, key)
		clients[i].hc.Timeout = 15 * time.Second
	}
	return servers, clients
}

// kill ends the process with SIGKILL and waits for it.
func (s *server) kill() {
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
	}
	<-s.done
}

// stop sends SIGTERM and waits for a graceful exit.
func (s *server) stop(t *testing.T) {
	t.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		t.Fatal("latch serve did not exit within 20s of SIGTERM")
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

// client calls the API with one key.
type client struct {
	base string
	key  string
	hc   *http.Client
}

func newClient(base, key string) *client {
	return &client{base: base, key: key, hc: &http.Client{Timeout: 90 * time.Second}}
}

// call sends body as JSON and decodes the answer into out; it returns the
// status code.
func (c *client) call(ctx context.Context, method, path string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if out != nil && len(data) > 0 && resp.StatusCode < 300 {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: %w: %s", method, path, err, data)
		}
	}
	if resp.StatusCode >= 300 && out == nil {
		return resp.StatusCode, nil
	}
	if resp.StatusCode >= 400 {
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, strings.TrimSpace(string(data)))
	}
	return resp.StatusCode, nil
}

type execution struct {
	ID           string `json:"execution_id"`
	Status       string `json:"status"`
	Attempt      int    `json:"attempt"`
	DedupKey     string `json:"dedup_key"`
	Deduplicated bool   `json:"deduplicated"`
}

type tenant struct {
	Name     string `json:"name"`
	APIKey   string `json:"api_key"`
	Inflight int    `json:"inflight"`
}

// createTenant makes a tenant through the admin API and returns its key.
func createTenant(t *testing.T, base, name string) string {
	t.Helper()
	var ten tenant
	if _, err := newClient(base, adminKey).call(context.Background(), "POST", "/api/tenants",
		map[string]any{"name": name}, &ten); err != nil {
		t.Fatal(err)
	}
	if ten.APIKey == "" {
		t.Fatal("tenant created without an api_key")
	}
	return ten.APIKey
}

// waitTerminal long-polls an execution until it is terminal.
func waitTerminal(ctx context.Context, c *client, id string) (*execution, error) {
	for {
		var e execution
		if _, err := c.call(ctx, "GET", "/api/executions/"+id+"?wait_seconds=10", nil, &e); err != nil {
			return nil, err
		}
		switch e.Status {
		case "succeeded", "failed", "cancelled", "skipped":
			return &e, nil
		}
		if ctx.Err() != nil {
			return &e, ctx.Err()
		}
	}
}
