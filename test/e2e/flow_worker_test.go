package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFlowWorkerOverHTTP runs examples/http-flow-worker/flow_worker.py, a
// worker written against the HTTP API only, through a flow that waits for
// a signal: the first run reserves and suspends, the signal resumes it, the
// second run ships and completes. Each step is recorded once, and the
// resume is no new start.
func TestFlowWorkerOverHTTP(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("LATCH_REQUIRE_BACKENDS") != "" {
			t.Fatalf("LATCH_REQUIRE_BACKENDS is set but python3 is not on PATH: %v", err)
		}
		t.Skip("python3 is not on PATH")
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "examples", "http-flow-worker", "flow_worker.py"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := startServer(t, serverOpts{store: "sqlite:" + filepath.Join(t.TempDir(), "latch.db")})
	key := createTenant(t, srv.url, "acme")
	c := newClient(srv.url, key)

	runWorker := func(want string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, python, script)
		cmd.Env = append(os.Environ(), "LATCH_URL="+srv.url, "LATCH_KEY="+key, "LATCH_WAIT=2")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) {
			t.Fatalf("flow_worker.py: %v, want %q in its output:\n%s", err, want, out)
		}
	}

	var x flowExecution
	if _, err := c.call(ctx, "POST", "/api/executions", map[string]any{"kind": "py-flow", "payload": map[string]any{"order": 7}}, &x); err != nil {
		t.Fatal(err)
	}

	runWorker("waiting for approve")
	if _, err := c.call(ctx, "GET", "/api/executions/"+x.ID, nil, &x); err != nil {
		t.Fatal(err)
	}
	if x.Status != "suspended" || x.WaitingFor == nil || *x.WaitingFor != "approve" || x.WakeAt == nil || x.Attempt != 1 {
		t.Fatalf("after the first run: %+v", x)
	}
	runWorker("nothing to run") // a suspended execution is not claimed

	var sig struct {
		Delivered bool `json:"delivered"`
	}
	if _, err := c.call(ctx, "POST", "/api/executions/"+x.ID+"/signals/approve", map[string]any{"data": map[string]any{"by": "ann"}}, &sig); err != nil {
		t.Fatal(err)
	}
	if !sig.Delivered {
		t.Fatal("the signal did not reach the waiting flow")
	}

	runWorker("shipped")
	if _, err := c.call(ctx, "GET", "/api/executions/"+x.ID, nil, &x); err != nil {
		t.Fatal(err)
	}
	if x.Status != "succeeded" || x.Attempt != 1 ||
		string(x.Result) != `{"seat":{"order":7,"seat":"12A"},"shipped":{"by":"ann"}}` {
		t.Fatalf("after the second run: %+v (result %s)", x, x.Result)
	}
	var journal struct {
		Items []struct {
			Name    string          `json:"name"`
			Result  json.RawMessage `json:"result"`
			Attempt int             `json:"attempt"`
		} `json:"items"`
	}
	if _, err := c.call(ctx, "GET", "/api/executions/"+x.ID+"/steps", nil, &journal); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range journal.Items {
		names = append(names, s.Name)
		if s.Attempt != 1 {
			t.Errorf("step %s recorded at attempt %d, want 1", s.Name, s.Attempt)
		}
	}
	if strings.Join(names, ",") != "reserve,approval,ship" || string(journal.Items[2].Result) != `{"by":"ann"}` {
		t.Fatalf("journal %s, want reserve, approval and ship once each, in order", names)
	}
}

// flowExecution is the part of an execution this test reads.
type flowExecution struct {
	ID         string          `json:"execution_id"`
	Status     string          `json:"status"`
	Attempt    int             `json:"attempt"`
	Result     json.RawMessage `json:"result"`
	WakeAt     *time.Time      `json:"wake_at"`
	WaitingFor *string         `json:"waiting_for"`
}
