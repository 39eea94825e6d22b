package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/latch-run/latch"
)

// The order flow of examples/orderflow, run by three worker processes on
// one store, every one of them SIGKILLed in the middle of each step that
// calls out (reserve stock, charge card, send webhook), while the flow
// waits for its approval and while it sleeps: each step's effect is asked
// for once per idempotency key, no recorded step runs again, the sleep
// resumes across the restart and 32 identical approvals resume it once.
// Between the approval and the sleep its three parcels ship as children,
// each once.

func TestFlowSurvivesKillsSQLite(t *testing.T) {
	t.Parallel()
	testFlowSurvivesKills(t, "sqlite:"+filepath.Join(t.TempDir(), "latch.db"))
}

func TestFlowSurvivesKillsPostgres(t *testing.T) {
	t.Parallel()
	testFlowSurvivesKills(t, postgresStore(t))
}

func TestFlowSurvivesKillsRedis(t *testing.T) {
	t.Parallel()
	testFlowSurvivesKills(t, redisStore(t))
}

func testFlowSurvivesKills(t *testing.T, storeURL string) {
	bin := orderflowBin
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	shop := newShopWitness(t)
	workers := startOrderWorkers(t, bin, storeURL)
	defer func() { workers.killAll() }()

	// The test reads and signals through the Go client on the same store.
	c, err := latch.Open(ctx, storeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// Each step that calls out: its first call is held until every
	// worker is killed, so the step is cut short before it is recorded.
	shop.hold("/reserve")
	out, err := exec.CommandContext(ctx, bin, "submit", "-store", storeURL, "-shop", shop.url,
		"-id", "o-1", "-delivery", "25s").CombinedOutput()
	if err != nil {
		t.Fatalf("orderflow submit: %v\n%s", err, out)
	}
	id := strings.TrimSpace(string(out))
	for _, path := range []string{"/reserve", "/charge"} {
		if path != "/reserve" {
			shop.hold(path)
		}
		shop.waitHeld(t, ctx, path)
		workers.killAll()
		workers.startAll()
		shop.release(path)
	}

	// Suspended for the approval: no worker holds it; kill them anyway.
	x := waitFlow(t, ctx, c, id, "the wait for approval", func(x *latch.Execution) bool { return x.WaitingFor == "approve" })
	if x.Status != latch.StatusSuspended || x.WakeAt == nil {
		t.Fatalf("waiting for approval: status %s wake_at %v, want suspended with the 24h timeout", x.Status, x.WakeAt)
	}
	workers.killAll()
	workers.startAll()
	var wg sync.WaitGroup
	delivered := make(chan bool, 32)
	for range 32 {
		wg.Go(func() {
			d, err := c.Signal(ctx, "shop", id, "approve", map[string]string{"by": "ann"},
				latch.SignalOptions{IdempotencyKey: "approve:" + id})
			if err != nil {
				t.Errorf("signal: %v", err)
			}
			delivered <- d
		})
	}
	wg.Wait()
	close(delivered)
	for d := range delivered {
		if !d {
			t.Error("an identical approval answered delivered=false: each repeat must answer the first answer")
		}
	}

	// Asleep until the delivery window: kill every worker, restart later.
	x = waitFlow(t, ctx, c, id, "the delivery window sleep", func(x *latch.Execution) bool {
		return x.Status == latch.StatusSuspended && x.WaitingFor == ""
	})
	workers.killAll()
	time.Sleep(time.Second)
	shop.hold("/webhook")
	workers.startAll()
	shop.waitHeld(t, ctx, "/webhook")
	if time.Now().Before(x.WakeAt.Add(-time.Second)) {
		t.Errorf("the webhook was called at %s, before the delivery window %s", time.Now().Format(time.RFC3339), x.WakeAt)
	}
	workers.killAll()
	workers.startAll()
	shop.release("/webhook")

	x = waitFlow(t, ctx, c, id, "success", func(x *latch.Execution) bool { return x.Status.Terminal() })
	if x.Status != latch.StatusSucceeded {
		t.Fatalf("order ended %s (%s), want succeeded", x.Status, x.Error)
	}
	steps, err := c.Steps(ctx, "shop", id)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range steps {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, ","); got != "reserve stock,charge card,approval,ship,ship/wait,delivery window,send webhook" {
		t.Errorf("journal %s, want the seven steps once each in order", got)
	}
	// Each service: asked twice (the cut-short call and its repeat), with
	// one idempotency key: one effect. Never asked again once recorded.
	for _, path := range []string{"/reserve", "/charge", "/webhook"} {
		calls, keys := shop.calls(path)
		if calls != 2 || keys != 1 {
			t.Errorf("%s: %d calls with %d idempotency keys, want 2 calls with 1 key", path, calls, keys)
		}
	}
	// Each of the three parcels, a child execution, shipped once with its
	// own key; every child succeeded.
	if calls, keys := shop.calls("/ship"); calls != 3 || keys != 3 {
		t.Errorf("/ship: %d calls with %d idempotency keys, want one call for each of the 3 parcels", calls, keys)
	}
	kids, err := c.Children(ctx, "shop", id)
	if err != nil || len(kids) != 3 {
		t.Fatalf("children of the order: %v, %v; want its 3 parcels", kids, err)
	}
	for _, k := range kids {
		if k.Status != latch.StatusSucceeded {
			t.Errorf("parcel %s ended %s, want succeeded", k.ID, k.Status)
		}
	}
	if calls, _ := shop.calls("/refund"); calls != 0 {
		t.Errorf("/refund called %d times: the approval was lost", calls)
	}
}

// waitFlow polls the execution until ok holds.
func waitFlow(t *testing.T, ctx context.Context, c *latch.Client, id, what string, ok func(*latch.Execution) bool) *latch.Execution {
	t.Helper()
	for {
		x, err := c.Get(ctx, "shop", id)
		if err == nil && ok(x) {
			return x
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v (last: %+v, %v)", what, ctx.Err(), x, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// orderWorkers are three `orderflow worker` processes on one store.
type orderWorkers struct {
	t     *testing.T
	bin   string
	store string
	logs  *lockedWriter
	procs []*exec.Cmd
}

func startOrderWorkers(t *testing.T, bin, storeURL string) *orderWorkers {
	w := &orderWorkers{t: t, bin: bin, store: storeURL, logs: &lockedWriter{w: new(bytes.Buffer)}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("worker logs:\n%s", w.logs.String())
		}
	})
	w.startAll()
	return w
}

func (w *orderWorkers) startAll() {
	w.t.Helper()
	for range 3 {
		cmd := exec.Command(w.bin, "worker", "-store", w.store, "-lease", "2s")
		cmd.Stdout, cmd.Stderr = w.logs, w.logs
		if err := cmd.Start(); err != nil {
			w.t.Fatal(err)
		}
		w.procs = append(w.procs, cmd)
	}
}

// killAll SIGKILLs every worker process and reaps it.
func (w *orderWorkers) killAll() {
	for _, p := range w.procs {
		p.Process.Signal(syscall.SIGKILL)
		p.Wait()
	}
	w.procs = nil
}

// shopWitness stands for the outside services of an order. It counts the
// calls and idempotency keys of each path, and can hold a path's next
// call until released (or until the caller dies).
type shopWitness struct {
	url   string
	mu    sync.Mutex
	keys  map[string]map[string]int // path -> key -> calls
	armed map[string]bool           // the next call of path is held
	gates map[string]chan struct{}  // path -> closed on release
	hit   chan string               // a held call arrived
}

func newShopWitness(t *testing.T) *shopWitness {
	w := &shopWitness{keys: map[string]map[string]int{}, armed: map[string]bool{},
		gates: map[string]chan struct{}{}, hit: make(chan string, 16)}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w.url = "http://" + l.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(w.serve)}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return w
}

func (w *shopWitness) serve(rw http.ResponseWriter, r *http.Request) {
	w.mu.Lock()
	if w.keys[r.URL.Path] == nil {
		w.keys[r.URL.Path] = map[string]int{}
	}
	w.keys[r.URL.Path][r.Header.Get("Idempotency-Key")]++
	hold, release := w.armed[r.URL.Path], w.gates[r.URL.Path]
	w.armed[r.URL.Path] = false // only the next call is held
	w.mu.Unlock()
	if hold {
		w.hit <- r.URL.Path
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
	}
	rw.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(rw, `{"path":%q,"key":%q}`, r.URL.Path, r.Header.Get("Idempotency-Key"))
}

func (w *shopWitness) hold(path string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed[path] = true
	w.gates[path] = make(chan struct{})
}

// release lets a held call of path go; its caller is dead by then.
func (w *shopWitness) release(path string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ch, ok := w.gates[path]; ok {
		close(ch)
		delete(w.gates, path)
	}
}

func (w *shopWitness) waitHeld(t *testing.T, ctx context.Context, path string) {
	t.Helper()
	select {
	case got := <-w.hit:
		if got != path {
			t.Fatalf("held call to %s, want %s", got, path)
		}
	case <-ctx.Done():
		t.Fatalf("no call to %s came", path)
	}
}

func (w *shopWitness) calls(path string) (calls, keys int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, n := range w.keys[path] {
		calls += n
	}
	return calls, len(w.keys[path])
}
