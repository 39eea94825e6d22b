package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/latch-run/latch/api"
	"github.com/latch-run/latch/auth"
	"github.com/latch-run/latch/engine"
	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/kinds"
	"github.com/latch-run/latch/store/sqlite"
)

// cli runs the command line as a user would and returns its exit code and
// output.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestClientCommands drives every client command against a real server.
// testAdminKey is the admin key of the tests: as long as latch serve
// requires (minAdminKey).
const testAdminKey = "admin-key-of-the-cli-tests-0123456789"

func TestClientCommands(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv := httptest.NewServer(api.New(api.Config{Store: st, AdminKeyHash: auth.HashKey(testAdminKey)}).Handler())
	defer srv.Close()
	w := engine.NewWorker(engine.WorkerConfig{Store: st, Slots: 2})
	if err := kinds.Register(w, kinds.Options{HTTPAllow: []string{"*"}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(ctx)

	t.Setenv("LATCH_URL", srv.URL)
	t.Setenv("LATCH_KEY", testAdminKey)
	code, out, errOut := cli(t, "tenant", "create", "--max_inflight", "5", "acme")
	if code != 0 {
		t.Fatalf("tenant create: %d %s", code, errOut)
	}
	var ten struct {
		APIKey      string `json:"api_key"`
		MaxInflight int    `json:"max_inflight"`
	}
	if err := json.Unmarshal([]byte(out), &ten); err != nil || ten.APIKey == "" || ten.MaxInflight != 5 {
		t.Fatalf("tenant create printed %q (%v)", out, err)
	}
	t.Setenv("LATCH_KEY", ten.APIKey)

	code, out, errOut = cli(t, "submit", "--dedup-key", "order-1", "echo", `{"order": 1}`)
	if code != 0 {
		t.Fatalf("submit: %d %s", code, errOut)
	}
	var e struct {
		ID     string `json:"execution_id"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(out), &e); err != nil || e.ID == "" {
		t.Fatalf("submit printed %q", out)
	}
	code, out, _ = cli(t, "submit", "--dedup-key", "order-1", "echo", `{"order": 1}`)
	if code != 0 || !strings.Contains(out, e.ID) || !strings.Contains(out, `"deduplicated": true`) {
		t.Fatalf("second submit with the key: %d %s", code, out)
	}

	code, out, errOut = cli(t, "wait", "--timeout", "30s", e.ID)
	if code != 0 || !strings.Contains(out, `"succeeded"`) {
		t.Fatalf("wait: %d %s %s", code, out, errOut)
	}
	if code, out, _ = cli(t, "get", e.ID); code != 0 || !strings.Contains(out, `"order": 1`) {
		t.Fatalf("get: %d %s", code, out)
	}
	if code, out, _ = cli(t, "ls", "--status", "succeeded"); code != 0 || !strings.Contains(out, e.ID) {
		t.Fatalf("ls: %d %s", code, out)
	}
	if code, out, _ = cli(t, "cancel", e.ID); code != 0 || !strings.Contains(out, `"succeeded"`) {
		t.Fatalf("cancel of a finished execution must leave it as it is: %d %s", code, out)
	}
	if code, out, _ = cli(t, "tenant", "get", "acme"); code != 0 || !strings.Contains(out, `"inflight": 0`) {
		t.Fatalf("tenant get: %d %s", code, out)
	}

	// A job that cannot finish: wait reports a failure with exit code 1.
	code, out, _ = cli(t, "submit", "--max-attempts", "1", "sleep", `{"seconds": "soon"}`)
	if code != 0 {
		t.Fatalf("submit sleep: %d %s", code, out)
	}
	json.Unmarshal([]byte(out), &e)
	if code, out, _ = cli(t, "wait", e.ID); code != exitNotSucceeded || !strings.Contains(out, `"failed"`) {
		t.Fatalf("wait on a failing job: %d %s", code, out)
	}

	if code, _, errOut = cli(t, "rm", e.ID); code != 0 {
		t.Fatalf("rm: %d %s", code, errOut)
	}
	if code, _, errOut = cli(t, "get", e.ID); code != exitNotFound || !strings.Contains(errOut, "404 not_found") {
		t.Fatalf("get after rm: %d %s", code, errOut)
	}
	if code, _, errOut = cli(t, "submit", "echo", "{not json"); code != 2 {
		t.Fatalf("submit with a bad payload: %d %s", code, errOut)
	}
	if code, _, _ = cli(t, "frobnicate"); code != 2 {
		t.Fatalf("unknown command: exit %d, want 2", code)
	}
}
