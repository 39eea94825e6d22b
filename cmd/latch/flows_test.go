package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestFlowCommands drives signal, steps and retry against a real server,
// with the worker's side (claim, steps, suspend, fail) over HTTP.
func TestFlowCommands(t *testing.T) {
	srv, key := tenantServer(t)

	var x struct {
		ID string `json:"execution_id"`
	}
	call(t, srv.URL, "POST", "/api/executions", key, `{"kind":"flow","max_attempts":1}`, 201, &x)
	var claim struct {
		Leases []struct {
			Token string `json:"lease_token"`
		} `json:"leases"`
	}
	call(t, srv.URL, "POST", "/api/workers/claim", key, `{"worker_id":"w"}`, 200, &claim)
	tok := `"lease_token":"` + claim.Leases[0].Token + `"`
	call(t, srv.URL, "POST", "/api/executions/"+x.ID+"/steps", key, `{`+tok+`,"name":"reserve","result":{"seat":"12A"}}`, 200, nil)
	call(t, srv.URL, "POST", "/api/executions/"+x.ID+"/suspend", key, `{`+tok+`,"step":"approval","signal":"approve"}`, 200, nil)

	code, out, errOut := cli(t, "signal", "--idempotency-key", "k1", x.ID, "approve", `{"by": "ann"}`)
	if code != 0 || !strings.Contains(out, `"delivered": true`) {
		t.Fatalf("signal: %d %s %s", code, out, errOut)
	}
	if code, out, _ = cli(t, "signal", "--idempotency-key", "k1", x.ID, "approve"); code != 0 || !strings.Contains(out, `"delivered": true`) {
		t.Fatalf("repeated signal: %d %s", code, out)
	}
	if code, out, _ = cli(t, "signal", x.ID, "later"); code != 0 || !strings.Contains(out, `"delivered": false`) {
		t.Fatalf("signal nobody waits for: %d %s", code, out)
	}
	code, out, errOut = cli(t, "steps", x.ID, "-o", "table")
	if code != 0 || !strings.Contains(out, "STEP") || !strings.Contains(out, `{"seat":"12A"}`) ||
		!strings.Contains(out, `{"by":"ann"}`) || strings.Index(out, "reserve") > strings.Index(out, "approval") {
		t.Fatalf("steps: %d %s %s", code, out, errOut)
	}
	code, out, _ = cli(t, "steps", "--json", x.ID)
	var journal struct {
		Items []struct {
			Name string `json:"name"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &journal); code != 0 || err != nil || len(journal.Items) != 2 {
		t.Fatalf("steps --json: %d %s", code, out)
	}

	// Not failed: retry exits 4. Failed: it is queued again.
	if code, _, errOut = cli(t, "retry", x.ID); code != exitConflict || !strings.Contains(errOut, "409 not_failed") {
		t.Fatalf("retry of a queued execution: %d %s", code, errOut)
	}
	call(t, srv.URL, "POST", "/api/workers/claim", key, `{"worker_id":"w"}`, 200, &claim)
	tok = `"lease_token":"` + claim.Leases[0].Token + `"`
	call(t, srv.URL, "POST", "/api/executions/"+x.ID+"/fail", key, `{`+tok+`,"error":"no"}`, 200, nil)
	if code, _, errOut = cli(t, "signal", x.ID, "approve"); code != exitConflict || !strings.Contains(errOut, "409 not_active") {
		t.Fatalf("signal to a failed execution: %d %s", code, errOut)
	}
	if code, out, _ = cli(t, "retry", x.ID); code != 0 || !strings.Contains(out, `"queued"`) {
		t.Fatalf("retry: %d %s", code, out)
	}

	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"signal", x.ID}, exitUsage},
		{[]string{"signal", x.ID, "approve", "{not json"}, exitUsage},
		{[]string{"signal", x.ID, "approve", "1", "2"}, exitUsage},
		{[]string{"signal", x.ID, "a b"}, exitUsage},
		{[]string{"signal", "0193a6e4-7c1e-7b3a-9f1e-2d9c3e8a4b10", "approve"}, exitNotFound},
		{[]string{"steps", "0193a6e4-7c1e-7b3a-9f1e-2d9c3e8a4b10"}, exitNotFound},
		{[]string{"retry", "0193a6e4-7c1e-7b3a-9f1e-2d9c3e8a4b10"}, exitNotFound},
		{[]string{"retry"}, exitUsage},
	} {
		if code, _, errOut := cli(t, c.args...); code != c.want {
			t.Errorf("latch %s: exit %d, want %d (%s)", strings.Join(c.args, " "), code, c.want, errOut)
		}
	}
}

// TestChildrenCommand lists a flow's children against a real server: in
// spawn order, with each one's spawn step and status, and as JSON.
func TestChildrenCommand(t *testing.T) {
	srv, key := tenantServer(t)
	var x struct {
		ID string `json:"execution_id"`
	}
	call(t, srv.URL, "POST", "/api/executions", key, `{"kind":"order","queue":"flows"}`, 201, &x)
	var claim struct {
		Leases []struct {
			Token string `json:"lease_token"`
		} `json:"leases"`
	}
	call(t, srv.URL, "POST", "/api/workers/claim", key, `{"worker_id":"w","queues":["flows"]}`, 200, &claim)
	tok := `"lease_token":"` + claim.Leases[0].Token + `"`
	var spawned struct {
		Children []struct {
			ID string `json:"execution_id"`
		} `json:"children"`
	}
	call(t, srv.URL, "POST", "/api/executions/"+x.ID+"/children", key,
		`{`+tok+`,"step":"ship","items":[{"kind":"parcel"},{"kind":"label"}]}`, 201, &spawned)
	call(t, srv.URL, "POST", "/api/executions/"+spawned.Children[1].ID+"/cancel", key, ``, 200, nil)

	code, out, errOut := cli(t, "children", x.ID, "-o", "table")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !strings.Contains(lines[0], "STATUS") ||
		!strings.Contains(lines[1], spawned.Children[0].ID) || !strings.Contains(lines[1], "ship") || !strings.Contains(lines[1], "queued") ||
		!strings.Contains(lines[2], spawned.Children[1].ID) || !strings.Contains(lines[2], "cancelled") {
		t.Fatalf("children: %d\n%s%s", code, out, errOut)
	}
	code, out, _ = cli(t, "children", "--status", "cancelled", "--json", x.ID)
	var list struct {
		Items []struct {
			ID       string `json:"execution_id"`
			ParentID string `json:"parent_id"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || len(list.Items) != 1 ||
		list.Items[0].ID != spawned.Children[1].ID || list.Items[0].ParentID != x.ID {
		t.Fatalf("children --status cancelled --json: %d %s", code, out)
	}
	if code, out, _ = cli(t, "children", spawned.Children[0].ID, "-o", "table"); code != 0 || strings.Count(out, "\n") != 1 {
		t.Fatalf("a child without children: %d %s", code, out)
	}
	if code, _, _ = cli(t, "children"); code != exitUsage {
		t.Fatalf("children without an id: exit %d", code)
	}
}
