package sdk

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/latch-run/latch"
)

// The shared SDK scenario of sdk/SCENARIO.md in Go, step by step. Go's SDK
// is the root package latch: its Client and Worker open the server's store
// (here the SQLite file `latch serve` runs on) rather than calling its HTTP
// API, so each request of the scenario is the Client method that does the
// same, and the server shares the store with them: it is the one rescuing
// expired leases (the workers run no maintenance of their own).

// scenarioWorkerEnv makes the test binary a worker process of part (b)
// (see TestMain and scenarioWorkerMain): its value is the store URL.
const scenarioWorkerEnv = "LATCH_SCENARIO_WORKER"

const goAdminKey = "lk_go-sdk-scenario-admin-key-for-the-tests"

// scenarioServer is the scenario's `latch serve`: a fresh SQLite file,
// a free port of 127.0.0.1, no in-process workers, expired leases rescued
// every 200 ms.
type scenarioServer struct {
	url   string // http://127.0.0.1:PORT
	store string // sqlite:PATH, the server's store
}

func startScenarioServer(t *testing.T) *scenarioServer {
	t.Helper()
	bin := os.Getenv("LATCH_BIN")
	if bin == "" {
		bin = latchBin
	}
	dir := t.TempDir()
	store := "sqlite:" + filepath.Join(dir, "latch.db")
	base := startServe(t, bin, goAdminKey, "--store", store, "--workers", "0",
		"--rescue-interval", "200ms", "--shutdown-grace", "1s", "--console=false")
	return &scenarioServer{url: base, store: store}
}

// startServe starts `latch serve` with args on a free port of 127.0.0.1,
// LATCH_ADMIN_KEY set to adminKey, and answers its base URL once /readyz
// answers 200. It is stopped (SIGINT) when the test ends. A
// port taken between choosing it and listening on it is chosen again.
func startServe(t *testing.T, bin, adminKey string, args ...string) string {
	t.Helper()
	for range 3 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		logs := new(lockedBuffer)
		cmd := exec.Command(bin, append([]string{"serve", "--addr", addr}, args...)...)
		cmd.Env = append(os.Environ(), "LATCH_ADMIN_KEY="+adminKey)
		cmd.Stdout, cmd.Stderr = logs, logs
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		stop := func() {
			_ = cmd.Process.Signal(os.Interrupt)
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
		}
		base := "http://" + addr
		ready, err := waitReady(base, exited)
		if ready {
			t.Cleanup(stop)
			return base
		}
		stop()
		if strings.Contains(logs.String(), "address already in use") {
			continue
		}
		t.Fatalf("latch serve %s: %v:\n%s", strings.Join(args, " "), err, logs.String())
	}
	t.Fatal("latch serve: no free port in 3 tries")
	return ""
}

// waitReady polls base's /readyz (a process we cannot be notified by) for
// up to 30 s, or until the process exits.
func waitReady(base string, exited <-chan struct{}) (bool, error) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false, errors.New("exited at start")
		default:
		}
		if res, err := http.Get(base + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return true, nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false, errors.New("not ready after 30 s")
}

// lockedBuffer is a bytes.Buffer that a process's output and the test can
// share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var tenantSeq atomic.Int64

// newTenant makes a tenant of its own for one part of the scenario.
func newTenant(t *testing.T, c *latch.Client, prefix string) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), tenantSeq.Add(1))
	if _, err := c.CreateTenant(t.Context(), name, latch.TenantOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

func TestGoScenario(t *testing.T) {
	srv := startScenarioServer(t)
	c, err := latch.Open(t.Context(), srv.store)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })

	t.Run("a_one_dedup_key_64_concurrent_submits", func(t *testing.T) { scenarioA(t, c) })
	t.Run("b_worker_killed_mid_job", func(t *testing.T) { scenarioB(t, c, srv) })
	t.Run("c_two_step_flow_waits_for_a_signal", func(t *testing.T) { scenarioC(t, c) })
}

func scenarioA(t *testing.T, c *latch.Client) {
	ctx := t.Context()
	tenant := newTenant(t, c, "scenario-a")
	type answer struct {
		id           string
		deduplicated bool
		err          error
	}
	answers := make([]answer, 64)
	var ready, wg sync.WaitGroup
	barrier := make(chan struct{})
	ready.Add(64)
	for i := range answers {
		wg.Go(func() {
			ready.Done()
			<-barrier
			e, dedup, err := c.Submit(ctx, tenant, latch.SubmitRequest{
				Kind: "scenario-a", Payload: map[string]int{"n": 1}, DedupKey: "scenario-a",
			})
			answers[i] = answer{err: err, deduplicated: dedup}
			if e != nil {
				answers[i].id = e.ID
			}
		})
	}
	ready.Wait() // all 64 wait on the barrier
	close(barrier)
	wg.Wait()

	ids := map[string]bool{}
	fresh := 0
	for i, a := range answers {
		if a.err != nil {
			t.Fatalf("submit %d: %v", i, a.err)
		}
		ids[a.id] = true
		if !a.deduplicated {
			fresh++
		}
	}
	if len(ids) != 1 {
		t.Fatalf("64 submits of one dedup key gave %d execution ids: %v", len(ids), ids)
	}
	if fresh != 1 {
		t.Fatalf("%d answers have deduplicated false, want exactly 1 (and 63 true)", fresh)
	}
	page, err := c.List(ctx, tenant, latch.ListOptions{DedupKey: "scenario-a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 || !ids[page.Items[0].ID] {
		t.Fatalf("listing dedup key scenario-a: %d executions, want the one of the answers %v", len(page.Items), ids)
	}
	tn, err := c.GetTenant(ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	if tn.Inflight != 1 {
		t.Fatalf("the tenant's inflight is %d, want 1", tn.Inflight)
	}
}

// workerProc is a worker process of part (b): this test binary re-run
// with scenarioWorkerEnv set.
type workerProc struct {
	cmd    *exec.Cmd
	lines  chan string // its stdout, line by line; closed at EOF
	stderr *lockedBuffer
	exited chan struct{}
	err    error // cmd.Wait's, once exited is closed
}

func startWorkerProc(t *testing.T, storeURL, effect string, hang bool) *workerProc {
	t.Helper()
	return startScenarioWorkerProc(t, effect, hang, scenarioWorkerEnv+"="+storeURL)
}

// startProc starts cmd as a worker process, its stdout read line by line,
// killed when the test ends.
func startProc(t *testing.T, cmd *exec.Cmd) *workerProc {
	t.Helper()
	p := &workerProc{cmd: cmd, lines: make(chan string, 16), stderr: new(lockedBuffer), exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		defer close(p.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	go func() {
		<-read // Wait closes stdout: read it all first
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// line is the worker's next line of output, or the test fails after 30 s.
func (p *workerProc) line(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			<-p.exited
			t.Fatalf("the worker process ended (%v) without a line; stderr:\n%s", p.err, p.stderr.String())
		}
		return l
	case <-time.After(30 * time.Second):
		t.Fatalf("no line from the worker process in 30 s; stderr:\n%s", p.stderr.String())
		return ""
	}
}

func scenarioB(t *testing.T, c *latch.Client, srv *scenarioServer) {
	ctx := t.Context()
	tenant := newTenant(t, c, "scenario-b")
	effect := filepath.Join(t.TempDir(), "effect")
	if err := os.WriteFile(effect, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// 1. Submit.
	e, _, err := c.Submit(ctx, tenant, latch.SubmitRequest{Kind: "scenario-b", Payload: map[string]any{}, MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}

	// 2–3. Worker process A starts the job and hangs; it is SIGKILLed.
	a := startWorkerProc(t, srv.store, effect, true)
	if l := a.line(t); l != "started 1" {
		t.Fatalf("worker A said %q, want \"started 1\"", l)
	}
	running, err := c.Get(ctx, tenant, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	if running.Status != latch.StatusRunning || running.Attempt != 1 {
		t.Fatalf("while A runs it: %s, attempt %d; want running, attempt 1", running.Status, running.Attempt)
	}
	killWorkerA(t, a)

	// 4–5. Worker process B takes it once the server has rescued A's lease.
	b := startWorkerProc(t, srv.store, effect, false)
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	done, err := c.Wait(wctx, tenant, e.ID)
	if err != nil {
		t.Fatalf("%v; worker B's stderr:\n%s", err, b.stderr.String())
	}
	if done.Status != latch.StatusSucceeded || done.Attempt != 2 || string(done.Result) != `{"attempt":2}` {
		t.Fatalf("it ended %s, attempt %d, result %s; want succeeded, attempt 2, {\"attempt\":2}",
			done.Status, done.Attempt, done.Result)
	}

	// 6. The handlers' side effects: started twice, completed once.
	checkEffects(t, effect)

	// 7. The runs: A's expired, B's succeeded.
	attempts, err := c.Attempts(ctx, tenant, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	var runs, workers []string
	for _, x := range attempts {
		runs = append(runs, fmt.Sprintf("%d %s", x.Attempt, x.Outcome))
		workers = append(workers, x.WorkerID)
	}
	checkRuns(t, runs, workers)

	// 8. SIGTERM: B stops claiming and exits 0.
	stopWorkerB(t, b)
}

// scenarioWorkerMain is a worker process of part (b) (serveScenarioB):
// one slot, a 2 s lease (a heartbeat every third of it), no maintenance
// (the server rescues).
func scenarioWorkerMain(storeURL string) int {
	ctx, stop := signalContext()
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c, err := latch.Open(ctx, storeURL)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer c.Close()
	return serveScenarioB(ctx, c.NewWorker(latch.WorkerOptions{Slots: 1, LeaseDuration: 2 * time.Second, NoMaintenance: true, Logger: logger}))
}

func scenarioC(t *testing.T, c *latch.Client) {
	ctx := t.Context()
	tenant := newTenant(t, c, "scenario-c")
	sc := newScenarioCFlow()
	// runOnce runs a worker in this process for one claim.
	runOnce := func() error {
		t.Helper()
		return sc.runOnce(t, c.NewWorker(latch.WorkerOptions{Slots: 1, NoMaintenance: true,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	}
	// 1. Submit.
	e, _, err := c.Submit(ctx, tenant, latch.SubmitRequest{Kind: "scenario-c", Payload: map[string]int{"order": 7}})
	if err != nil {
		t.Fatal(err)
	}
	journal := func() []string {
		t.Helper()
		st, err := c.Steps(ctx, tenant, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range st {
			out = append(out, fmt.Sprintf("%s %s %d", s.Name, s.Result, s.Attempt))
		}
		return out
	}

	// 2. One claim: the flow records step one and suspends.
	checkFirstRun(t, runOnce())
	s, err := c.Get(ctx, tenant, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != latch.StatusSuspended || s.WaitingFor != "approve" || s.Attempt != 1 {
		t.Fatalf("after the first run: %s, waiting for %q, attempt %d; want suspended, approve, 1", s.Status, s.WaitingFor, s.Attempt)
	}
	sc.checkJournal(t, journal(), false)

	// 3. The signal ends the wait.
	delivered, err := c.Signal(ctx, tenant, e.ID, "approve", map[string]string{"by": "ann"}, latch.SignalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !delivered {
		t.Fatal("the signal was not delivered to the waiting flow")
	}

	// 4. One more claim: the flow resumes and completes, in the same attempt.
	if err := runOnce(); err != nil {
		t.Fatalf("the second run returned %v", err)
	}
	done, err := c.Get(ctx, tenant, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != latch.StatusSucceeded || done.Attempt != 1 ||
		string(done.Result) != `{"one":{"reserved":7},"two":{"shipped_by":"ann"}}` {
		t.Fatalf("after the second run: %s, attempt %d, result %s", done.Status, done.Attempt, done.Result)
	}

	// 5–6. The journal, in order, each at attempt 1; each step's function
	// ran once.
	sc.checkJournal(t, journal(), true)
}
