package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/latch-run/latch/api"
	"github.com/latch-run/latch/auth"
	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/sqlite"
)

// TestScheduleCommands drives `latch schedule` against a real server: apply
// creates, applying again changes nothing, ls and get show it, trigger
// fires it, rm removes it, and a bad entry is named.
func TestScheduleCommands(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", KeyHash: auth.HashKey("acme-key")}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.New(api.Config{Store: st, AdminKeyHash: auth.HashKey(testAdminKey)}).Handler())
	defer srv.Close()
	t.Setenv("LATCH_URL", srv.URL)
	t.Setenv("LATCH_KEY", "acme-key")

	file := filepath.Join(t.TempDir(), "sweeps.yaml")
	if err := os.WriteFile(file, []byte(`
rate_limits:
  - {key: example-com, rate: 2, per_seconds: 1}
schedules:
  - name: sweep-oslo
    every: 15m
    kind: echo
    overlap: skip
    rate_key: example-com
    payload: {city: oslo}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := cli(t, "schedule", "apply", "-f", file)
	if code != 0 || !strings.Contains(out, "rate limit example-com set") || !strings.Contains(out, "schedule sweep-oslo created, next run ") {
		t.Fatalf("first apply: %d %q %q", code, out, errOut)
	}
	code, out, errOut = cli(t, "schedule", "apply", "-f", file)
	if code != 0 || !strings.Contains(out, "schedule sweep-oslo updated") {
		t.Fatalf("second apply: %d %q %q", code, out, errOut)
	}

	code, out, _ = cli(t, "schedule", "ls")
	var list struct {
		Items []struct {
			Name    string `json:"name"`
			Every   string `json:"every"`
			RateKey string `json:"rate_key"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || len(list.Items) != 1 ||
		list.Items[0].Name != "sweep-oslo" || list.Items[0].Every != "15m" || list.Items[0].RateKey != "example-com" {
		t.Fatalf("ls: %d %q", code, out)
	}
	// ls pages with --limit and --cursor, passed to the server as they are.
	if code, out, _ = cli(t, "schedule", "ls", "--limit", "1"); code != 0 || !strings.Contains(out, `"next_cursor": null`) {
		t.Fatalf("ls --limit 1: %d %q", code, out)
	}
	if code, _, errOut := cli(t, "schedule", "ls", "--limit", "0"); code == 0 || !strings.Contains(errOut, "limit") {
		t.Fatalf("ls --limit 0: %d %q", code, errOut)
	}
	if code, out, _ = cli(t, "schedule", "get", "sweep-oslo"); code != 0 || !strings.Contains(out, `"overlap": "skip"`) {
		t.Fatalf("get: %d %q", code, out)
	}
	// Each trigger is a tick of its own; with --idempotency-key a repeat
	// answers the first one's execution.
	type triggered struct {
		ExecutionID  string  `json:"execution_id"`
		Schedule     string  `json:"schedule"`
		DedupKey     *string `json:"dedup_key"`
		Deduplicated bool    `json:"deduplicated"`
	}
	trigger := func(args ...string) triggered {
		t.Helper()
		code, out, errOut := cli(t, append([]string{"schedule", "trigger"}, args...)...)
		var x triggered
		if err := json.Unmarshal([]byte(out), &x); code != 0 || err != nil || x.Schedule != "sweep-oslo" {
			t.Fatalf("trigger %v: %d %q %q", args, code, out, errOut)
		}
		return x
	}
	if x := trigger("sweep-oslo"); x.DedupKey != nil || x.Deduplicated {
		t.Fatalf("trigger without a key: %+v", x)
	}
	k1 := trigger("--idempotency-key", "deploy-7", "sweep-oslo")
	k2 := trigger("--idempotency-key", "deploy-7", "sweep-oslo")
	if k1.Deduplicated || !k2.Deduplicated || k1.ExecutionID != k2.ExecutionID {
		t.Fatalf("repeated keyed trigger: %+v then %+v", k1, k2)
	}
	if code, out, _ = cli(t, "schedule", "rm", "sweep-oslo"); code != 0 || !strings.Contains(out, "deleted") {
		t.Fatalf("rm: %d %q", code, out)
	}
	if code, _, errOut = cli(t, "schedule", "get", "sweep-oslo"); code != exitNotFound || !strings.Contains(errOut, "404 not_found") {
		t.Fatalf("get after rm: %d %q", code, errOut)
	}

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("schedules:\n  - {name: broken, cron: '61 * * * *', kind: echo}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut = cli(t, "schedule", "apply", "-f", bad); code != exitUsage ||
		!strings.Contains(errOut, "schedule broken: 400 invalid_request") || !strings.Contains(errOut, "61") {
		t.Fatalf("apply of a bad cron: %d %q", code, errOut)
	}
	if code, _, errOut = cli(t, "schedule", "apply"); code != 2 {
		t.Fatalf("apply without -f: %d %q", code, errOut)
	}
	typo := filepath.Join(t.TempDir(), "typo.yaml")
	if err := os.WriteFile(typo, []byte("schedule:\n  - {name: x}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut = cli(t, "schedule", "apply", "-f", typo); code != 1 || !strings.Contains(errOut, "schedule") {
		t.Fatalf("apply of a misspelt file: %d %q", code, errOut)
	}
}

// TestHelpDoesNotShowTheKey: -h lists the flags, never LATCH_KEY's value.
func TestHelpDoesNotShowTheKey(t *testing.T) {
	t.Setenv("LATCH_KEY", "lk_secret-value")
	_, out, errOut := cli(t, "schedule", "ls", "-h")
	if strings.Contains(out+errOut, "lk_secret-value") {
		t.Fatalf("-h printed the key:\n%s%s", out, errOut)
	}
}

// TestSchedulePauseResume: pause stops a schedule's ticks (enabled false,
// no next run), resume starts them again, each changing nothing else; an
// unknown schedule is exit 3.
func TestSchedulePauseResume(t *testing.T) {
	srv, key := tenantServer(t)
	call(t, srv.URL, "PUT", "/api/schedules/sweep", key, `{"every":"15m","kind":"echo","payload":{"city":"oslo"},"max_attempts":5}`, 201, nil)
	get := func() map[string]any {
		var s map[string]any
		call(t, srv.URL, "GET", "/api/schedules/sweep", key, "", 200, &s)
		return s
	}
	before := get()
	if code, out, errOut := cli(t, "schedule", "pause", "sweep"); code != 0 || !strings.Contains(out, `"enabled": false`) {
		t.Fatalf("schedule pause: %d %q %q", code, out, errOut)
	}
	paused := get()
	if paused["enabled"] != false || paused["next_run_at"] != nil {
		t.Errorf("after pause: enabled %v, next_run_at %v; want false and null", paused["enabled"], paused["next_run_at"])
	}
	if code, _, errOut := cli(t, "schedule", "resume", "sweep"); code != 0 {
		t.Fatalf("schedule resume: %d %q", code, errOut)
	}
	resumed := get()
	if resumed["enabled"] != true || resumed["next_run_at"] == nil {
		t.Errorf("after resume: enabled %v, next_run_at %v; want true and a time", resumed["enabled"], resumed["next_run_at"])
	}
	for _, k := range []string{"every", "kind", "payload", "max_attempts", "overlap", "catchup", "queue"} {
		if !reflect.DeepEqual(before[k], resumed[k]) {
			t.Errorf("%s: %v before, %v after pause and resume", k, before[k], resumed[k])
		}
	}
	if code, _, errOut := cli(t, "schedule", "pause", "nope"); code != exitNotFound || !strings.Contains(errOut, "404 not_found") {
		t.Errorf("schedule pause of an unknown schedule: %d %q", code, errOut)
	}
}
