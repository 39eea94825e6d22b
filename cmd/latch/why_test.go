package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestWhyCommand: latch why names what holds an execution back, as a
// table and as JSON; a running one shows that nothing does.
func TestWhyCommand(t *testing.T) {
	srv, key := tenantServer(t)
	var x, y struct {
		ID string `json:"execution_id"`
	}
	call(t, srv.URL, "POST", "/api/executions", key, `{"kind":"resize-image","queue":"media"}`, 201, &x)

	code, out, errOut := cli(t, "why", "-o", "table", x.ID)
	if code != 0 || !strings.HasPrefix(out, "GATE") || !strings.Contains(out, "no_worker") ||
		!strings.Contains(out, `"resize-image"`) {
		t.Fatalf("why: %d %q %s", code, out, errOut)
	}
	code, out, _ = cli(t, "why", "--json", x.ID)
	var got struct {
		Status string `json:"status"`
		Gates  []struct {
			Gate string `json:"gate"`
			Kind string `json:"kind"`
		} `json:"gates"`
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || got.Status != "queued" ||
		len(got.Gates) != 1 || got.Gates[0].Gate != "no_worker" || got.Gates[0].Kind != "resize-image" {
		t.Errorf("why --json: %d %s", code, out)
	}

	call(t, srv.URL, "POST", "/api/executions", key, `{"kind":"echo"}`, 201, &y)
	call(t, srv.URL, "POST", "/api/workers/claim", key, `{"worker_id":"w1","kinds":["echo"]}`, 200, nil)
	code, out, errOut = cli(t, "why", "-o", "table", y.ID)
	if code != 0 || !strings.Contains(out, "nothing holds it back") || !strings.Contains(out, "running") {
		t.Errorf("why of a running execution: %d %q %s", code, out, errOut)
	}

	if code, _, errOut := cli(t, "why", "0193a6e4-7c1e-7b3a-9f1e-2d9c3e8a4b10"); code != exitNotFound {
		t.Errorf("why of a missing execution: exit %d, want %d (%s)", code, exitNotFound, errOut)
	}
	if code, _, _ := cli(t, "why"); code != exitUsage {
		t.Errorf("why without an id: exit %d, want %d", code, exitUsage)
	}
}
