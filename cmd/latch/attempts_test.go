package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAttemptsCommand: latch attempts shows a failed run and the run after
// it, as a table and as JSON.
func TestAttemptsCommand(t *testing.T) {
	srv, key := tenantServer(t)

	var x struct {
		ID string `json:"execution_id"`
	}
	call(t, srv.URL, "POST", "/api/executions", key, `{"kind":"echo","max_attempts":2}`, 201, &x)
	var claim struct {
		Leases []struct {
			Token string `json:"lease_token"`
		} `json:"leases"`
	}
	call(t, srv.URL, "POST", "/api/workers/claim", key, `{"worker_id":"worker-a"}`, 200, &claim)
	// A failure's message over two lines stays on its row of the table.
	call(t, srv.URL, "POST", "/api/executions/"+x.ID+"/fail", key,
		`{"lease_token":"`+claim.Leases[0].Token+`","error":"upstream said 503\nretry later","retry_after_seconds":0}`, 200, nil)
	call(t, srv.URL, "POST", "/api/workers/claim", key, `{"worker_id":"worker-b"}`, 200, &claim)

	code, out, errOut := cli(t, "attempts", "-o", "table", x.ID)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "ATTEMPT") {
		t.Fatalf("attempts: %d %q %s", code, out, errOut)
	}
	if f := strings.Fields(lines[1]); f[0] != "1" || f[1] != "worker-a" || f[4] != "failed" ||
		!strings.HasSuffix(lines[1], "upstream said 503 retry later") {
		t.Errorf("the failed run's row: %q", lines[1])
	}
	if f := strings.Fields(lines[2]); len(f) != 5 || f[0] != "2" || f[1] != "worker-b" || f[3] != "-" || f[4] != "running" {
		t.Errorf("the running run's row: %q", lines[2])
	}

	call(t, srv.URL, "POST", "/api/executions/"+x.ID+"/complete", key, `{"lease_token":"`+claim.Leases[0].Token+`"}`, 200, nil)
	code, out, _ = cli(t, "attempts", "--json", x.ID)
	var history struct {
		Items []struct {
			WorkerID string  `json:"worker_id"`
			Outcome  *string `json:"outcome"`
			Error    *string `json:"error"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &history); code != 0 || err != nil || len(history.Items) != 2 {
		t.Fatalf("attempts --json: %d %s", code, out)
	}
	if a, b := history.Items[0], history.Items[1]; a.Error == nil || *a.Error != "upstream said 503\nretry later" ||
		b.WorkerID != "worker-b" || b.Outcome == nil || *b.Outcome != "succeeded" || b.Error != nil {
		t.Errorf("attempts --json: %s", out)
	}

	if code, _, errOut := cli(t, "attempts", "0193a6e4-7c1e-7b3a-9f1e-2d9c3e8a4b10"); code != exitNotFound {
		t.Errorf("attempts of a missing execution: exit %d, want %d (%s)", code, exitNotFound, errOut)
	}
	if code, _, _ := cli(t, "attempts"); code != exitUsage {
		t.Errorf("attempts without an id: exit %d, want %d", code, exitUsage)
	}
}

func TestShorten(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"ééééééééééé", 10, "ééééééé..."},
	} {
		if got := shorten(c.in, c.max); got != c.want {
			t.Errorf("shorten(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
}
