package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/latch-run/latch"
)

// A fan-out under SIGKILL (I13): parents each spawn fanItems children
// (latch.Map) and wait for all of them, run by three worker processes on
// one store, every one of them SIGKILLed as the first spawn admits its
// children and twice more while children run. After
// the restarts every parent has exactly the children of its one spawn
// (no duplicate, none of another spawn: the tenant holds parents×items
// children in all), its fan-in step holds every child succeeded, its
// runs show the one suspension its wait made (resumed once), and it
// succeeded with the sum of its children's results.

const (
	fanParents = 6
	fanItems   = 50
	// fanWorkerEnv makes the test binary a fan-out worker process on the
	// store URL it holds (TestMain).
	fanWorkerEnv = "LATCH_E2E_FANOUT_WORKER"
	fanTenant    = "fan"
)

func TestFanOutSurvivesKillsSQLite(t *testing.T) {
	t.Parallel()
	testFanOutSurvivesKills(t, "sqlite:"+filepath.Join(t.TempDir(), "latch.db"))
}

func TestFanOutSurvivesKillsPostgres(t *testing.T) {
	t.Parallel()
	testFanOutSurvivesKills(t, postgresStore(t))
}

func TestFanOutSurvivesKillsRedis(t *testing.T) {
	t.Parallel()
	testFanOutSurvivesKills(t, redisStore(t))
}

func TestFanOutSurvivesKillsRedisCluster(t *testing.T) {
	t.Parallel()
	testFanOutSurvivesKills(t, redisClusterStore(t))
}

// fanWorker is the worker process: parents map their items to children,
// each child sleeps a little (so that kills find children running) and
// answers its item. It runs until killed.
func fanWorker(url string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	c, err := latch.Open(ctx, url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fan worker:", err)
		return 1
	}
	defer c.Close()
	w := c.NewWorker(latch.WorkerOptions{LeaseDuration: 2 * time.Second, Slots: 16, TenantSlots: 16})
	w.Handle("fan-parent", func(ctx context.Context, j *latch.Job) (any, error) {
		var n int
		if err := j.Decode(&n); err != nil {
			return nil, latch.Permanent(err)
		}
		items := make([]int, n)
		for i := range items {
			items[i] = i
		}
		got, err := latch.Results[int](latch.Map(ctx, j, "children", "fan-child", items))
		if err != nil {
			return nil, err
		}
		sum := 0
		for _, v := range got {
			sum += v
		}
		return sum, nil
	})
	w.Handle("fan-child", func(ctx context.Context, j *latch.Job) (any, error) {
		var item int
		if err := j.Decode(&item); err != nil {
			return nil, latch.Permanent(err)
		}
		select {
		case <-time.After(150 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return item, nil
	})
	if err := w.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "fan worker:", err)
		return 1
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = w.Stop(sctx)
	return 0
}

// fanWorkers are three worker processes: the test binary run as fanWorker.
type fanWorkers struct {
	t     *testing.T
	store string
	logs  *lockedWriter
	procs []*exec.Cmd
}

func (w *fanWorkers) startAll() {
	w.t.Helper()
	for range 3 {
		cmd := exec.Command(os.Args[0], "-test.run", "^$")
		cmd.Env = append(os.Environ(), fanWorkerEnv+"="+w.store)
		cmd.Stdout, cmd.Stderr = w.logs, w.logs
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			w.t.Fatal(err)
		}
		w.procs = append(w.procs, cmd)
	}
}

func (w *fanWorkers) killAll() {
	for _, p := range w.procs {
		p.Process.Signal(syscall.SIGKILL)
		p.Wait()
	}
	w.procs = nil
}

func testFanOutSurvivesKills(t *testing.T, storeURL string) {
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	c, err := latch.Open(ctx, storeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.EnsureTenant(ctx, fanTenant, latch.TenantOptions{}); err != nil {
		t.Fatal(err)
	}
	workers := &fanWorkers{t: t, store: storeURL, logs: &lockedWriter{w: new(bytes.Buffer)}}
	t.Cleanup(func() {
		workers.killAll()
		if t.Failed() {
			t.Logf("worker logs:\n%s", workers.logs.String())
		}
	})
	reqs := make([]latch.SubmitRequest, fanParents)
	for i := range reqs {
		reqs[i] = latch.SubmitRequest{Kind: "fan-parent", Payload: fanItems}
	}
	subs, err := c.SubmitMany(ctx, fanTenant, reqs)
	if err != nil {
		t.Fatal(err)
	}
	parents := make([]string, len(subs))
	for i, s := range subs {
		if s.Err != nil {
			t.Fatal(s.Err)
		}
		parents[i] = s.Execution.ID
	}
	workers.startAll()

	// Kill every worker as soon as the first spawn has admitted its
	// children (parents spawning, or between their spawn and their wait),
	// then while children run: once a quarter of them have succeeded,
	// then again past half.
	total := fanParents * fanItems
	for _, k := range []struct {
		what string
		when func(admitted, succeeded, running int) bool
	}{
		{"as the first children are admitted", func(admitted, _, _ int) bool { return admitted > 0 }},
		{"with a quarter of the children succeeded", func(_, ok, running int) bool { return ok >= total/4 && running > 0 }},
		{"with half of the children succeeded", func(_, ok, running int) bool { return ok >= total/2 && running > 0 }},
	} {
		for {
			admitted, ok, running := countKind(t, ctx, c, "fan-child")
			if k.when(admitted, ok, running) {
				t.Logf("SIGKILL of every worker %s: %d admitted, %d of %d succeeded, %d running", k.what, admitted, ok, total, running)
				break
			}
			if ok == total {
				t.Fatalf("every child ended before the kill %s: make the children slower", k.what)
			}
			sleepCtx(t, ctx, 20*time.Millisecond)
		}
		workers.killAll()
		workers.startAll()
	}

	for _, id := range parents {
		x, err := c.Wait(ctx, fanTenant, id)
		if err != nil {
			t.Fatalf("waiting for parent %s: %v", id, err)
		}
		checkFanParent(t, ctx, c, x)
	}
	// No child of another spawn: the tenant holds exactly the children
	// of the parents' spawns, each once.
	all := listKind(t, ctx, c, "fan-child")
	if len(all) != total {
		t.Errorf("the tenant holds %d children, want %d (%d parents × %d items)", len(all), total, fanParents, fanItems)
	}
}

// checkFanParent checks one ended parent of the fan-out.
func checkFanParent(t *testing.T, ctx context.Context, c *latch.Client, x *latch.Execution) {
	t.Helper()
	if x.Status != latch.StatusSucceeded {
		t.Errorf("parent %s ended %s (%s), want succeeded", x.ID, x.Status, x.Error)
		return
	}
	var sum int
	if err := json.Unmarshal(x.Result, &sum); err != nil || sum != fanItems*(fanItems-1)/2 {
		t.Errorf("parent %s result %s, want %d: every child's result once", x.ID, x.Result, fanItems*(fanItems-1)/2)
	}
	steps, err := c.Steps(ctx, fanTenant, x.ID)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range steps {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"children", "children/wait"}) {
		t.Errorf("parent %s journal %v, want the spawn and its wait once each", x.ID, names)
		return
	}
	var spawn struct{ Children []string }
	if err := json.Unmarshal(steps[0].Result, &spawn); err != nil {
		t.Fatal(err)
	}
	if n := len(spawn.Children); n != fanItems || len(slices.Compact(slices.Sorted(slices.Values(spawn.Children)))) != n {
		t.Errorf("parent %s spawned %d children (%d distinct), want %d once each", x.ID, n,
			len(slices.Compact(slices.Sorted(slices.Values(spawn.Children)))), fanItems)
	}
	kids, err := c.Children(ctx, fanTenant, x.ID)
	if err != nil {
		t.Fatal(err)
	}
	var kidIDs []string
	for _, k := range kids {
		kidIDs = append(kidIDs, k.ID)
		if k.Status != latch.StatusSucceeded {
			t.Errorf("child %s of %s ended %s, want succeeded", k.ID, x.ID, k.Status)
		}
	}
	if !slices.Equal(kidIDs, spawn.Children) {
		t.Errorf("parent %s has children %d, want exactly the %d of its spawn step in spawn order", x.ID, len(kidIDs), len(spawn.Children))
	}
	var fan struct {
		Children []struct {
			ID     string       `json:"execution_id"`
			Status latch.Status `json:"status"`
		} `json:"children"`
	}
	if err := json.Unmarshal(steps[1].Result, &fan); err != nil || len(fan.Children) != len(spawn.Children) {
		t.Fatalf("parent %s fan-in step %s (%v): want every child of the spawn", x.ID, steps[1].Result, err)
	}
	for i, o := range fan.Children {
		if i >= len(spawn.Children) || o.ID != spawn.Children[i] || o.Status != latch.StatusSucceeded {
			t.Errorf("parent %s fan-in child %d: %s %s, want %s succeeded", x.ID, i, o.ID, o.Status, spawn.Children[min(i, len(spawn.Children)-1)])
			break
		}
	}
	// Resumed once: of its runs, one ended suspended (the fan-in wait);
	// the last succeeded.
	runs, err := c.Attempts(ctx, fanTenant, x.ID)
	if err != nil {
		t.Fatal(err)
	}
	suspended := 0
	var outcomes []string
	for _, r := range runs {
		outcomes = append(outcomes, r.Outcome)
		if r.Outcome == "suspended" {
			suspended++
		}
	}
	if suspended != 1 || len(runs) == 0 || runs[len(runs)-1].Outcome != "succeeded" {
		t.Errorf("parent %s runs %v, want one suspended (its wait, resumed once) and the last succeeded", x.ID, outcomes)
	}
}

// countKind counts the tenant's executions of kind, those that succeeded
// and those that run.
func countKind(t *testing.T, ctx context.Context, c *latch.Client, kind string) (admitted, succeeded, running int) {
	t.Helper()
	xs := listKind(t, ctx, c, kind)
	admitted = len(xs)
	for _, x := range xs {
		switch x.Status {
		case latch.StatusSucceeded:
			succeeded++
		case latch.StatusRunning:
			running++
		}
	}
	return admitted, succeeded, running
}

// listKind lists every execution of kind in the tenant, each once.
func listKind(t *testing.T, ctx context.Context, c *latch.Client, kind string) []*latch.Execution {
	t.Helper()
	var out []*latch.Execution
	cursor := ""
	for {
		p, err := c.List(ctx, fanTenant, latch.ListOptions{Kind: kind, Limit: 500, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p.Items...)
		if p.NextCursor == "" {
			return out
		}
		cursor = p.NextCursor
	}
}

func sleepCtx(t *testing.T, ctx context.Context, d time.Duration) {
	t.Helper()
	select {
	case <-ctx.Done():
		t.Fatalf("timed out: %v", ctx.Err())
	case <-time.After(d):
	}
}
