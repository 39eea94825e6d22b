package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// recorded is one request the fake server got.
type recorded struct {
	method, path string
	query        map[string][]string
	header       http.Header
	body         map[string]any
}

// fakeServer answers every request with one object that suits every
// command (a terminal execution, a schedule, an empty page) and records
// the requests.
type fakeServer struct {
	mu   sync.Mutex
	reqs []recorded
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	data, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(data, &body)
	f.mu.Lock()
	f.reqs = append(f.reqs, recorded{r.Method, r.URL.Path, r.URL.Query(), r.Header.Clone(), body})
	f.mu.Unlock()
	if r.Method == http.MethodDelete {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"execution_id": "x1", "status": "succeeded", "attempt": 1, "name": "s1", "every": "1h",
		"kind": "echo", "enabled": true, "items": [], "next_cursor": null, "delivered": true}`)
}

func (f *fakeServer) take() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.reqs
	f.reqs = nil
	return r
}

// flagCase is how one command is run in TestFlagsAnywhere: its arguments,
// flags of its own, and a check that the flags took effect.
type flagCase struct {
	args     []string // positional, as many as the command takes at most (variadic: any)
	variadic bool     // takes any number of arguments: no surplus case
	flags    []string // flags and their values
	check    func(t *testing.T, reqs []recorded, code int, out, errOut string)
	local    bool // sends no request: checks what it printed or did
}

// lastReq is the last request, failing the test when there was none.
func lastReq(t *testing.T, reqs []recorded) recorded {
	t.Helper()
	if len(reqs) == 0 {
		t.Fatal("no request sent")
	}
	return reqs[len(reqs)-1]
}

// sent checks the client flags every client command has: --key and
// --tenant reached the server.
func sent(t *testing.T, reqs []recorded) recorded {
	t.Helper()
	r := lastReq(t, reqs)
	for _, q := range reqs {
		if q.header.Get("Authorization") != "Bearer flag-key" || q.header.Get("Latch-Tenant") != "flag-tenant" {
			t.Errorf("%s %s: Authorization %q, Latch-Tenant %q: --key and --tenant were not taken", q.method, q.path,
				q.header.Get("Authorization"), q.header.Get("Latch-Tenant"))
		}
		if strings.Contains(q.path, "--") || strings.Contains(q.path, "flag-") {
			t.Errorf("%s %s: a flag was taken for an argument", q.method, q.path)
		}
	}
	return r
}

func wantCode(t *testing.T, code, want int, errOut string) {
	t.Helper()
	if code != want {
		t.Fatalf("exit %d, want %d: %s", code, want, errOut)
	}
}

func bodyIs(t *testing.T, r recorded, field string, want any) {
	t.Helper()
	if got := r.body[field]; got != want {
		t.Errorf("%s %s: body %s = %v, want %v (body %v)", r.method, r.path, field, got, want, r.body)
	}
}

func tableOut(header string) func(t *testing.T, reqs []recorded, code int, out, errOut string) {
	return func(t *testing.T, reqs []recorded, code int, out, errOut string) {
		wantCode(t, code, 0, errOut)
		sent(t, reqs)
		if !strings.HasPrefix(out, header) {
			t.Errorf("-o table printed %q, want a table starting %s", out, header)
		}
	}
}

func justSent(t *testing.T, reqs []recorded, code int, _, errOut string) {
	wantCode(t, code, 0, errOut)
	sent(t, reqs)
}

// flagCases has a case for every command and subcommand of the commands
// table; TestFlagsAnywhere fails for a command without one.
func flagCases(t *testing.T) map[string]flagCase {
	dir := t.TempDir()
	schedFile := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(schedFile, []byte("schedules:\n  - {name: from-file, every: 1h, kind: echo}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const id = "0193a6e4-7c1e-7b3a-9f1e-2d9c3e8a4b10"
	return map[string]flagCase{
		"submit": {args: []string{"echo", `{"a":1}`}, flags: []string{"--dedup-key", "k1", "--timeout", "2s", "--delay", "3"},
			check: func(t *testing.T, reqs []recorded, code int, out, errOut string) {
				wantCode(t, code, 0, errOut)
				r := sent(t, reqs)
				bodyIs(t, r, "kind", "echo")
				bodyIs(t, r, "dedup_key", "k1")
				bodyIs(t, r, "timeout_seconds", 2.0)
				bodyIs(t, r, "delay_seconds", 3.0)
			}},
		"get": {args: []string{id}, flags: []string{"-o", "table"}, check: tableOut("EXECUTION_ID")},
		"ls": {flags: []string{"--status", "failed", "--dedup_key", "k1", "--limit", "7"},
			check: func(t *testing.T, reqs []recorded, code int, out, errOut string) {
				wantCode(t, code, 0, errOut)
				r := sent(t, reqs)
				for k, v := range map[string]string{"status": "failed", "dedup_key": "k1", "limit": "7"} {
					if got := strings.Join(r.query[k], ","); got != v {
						t.Errorf("query %s=%q, want %q", k, got, v)
					}
				}
			}},
		// The fake's execution has succeeded: only a timeout already run
		// out makes wait give up.
		"wait": {args: []string{id, id}, variadic: true, flags: []string{"--timeout", "1ns"},
			check: func(t *testing.T, reqs []recorded, code int, out, errOut string) {
				wantCode(t, code, exitTryLater, errOut)
				for _, r := range reqs {
					if !strings.HasSuffix(r.path, "/"+id) {
						t.Errorf("waited for %s", r.path)
					}
				}
			}},
		"cancel": {args: []string{id}, check: justSent},
		"rm": {args: []string{id}, flags: []string{"--force"}, check: func(t *testing.T, reqs []recorded, code int, out, errOut string) {
			wantCode(t, code, 0, errOut)
			if r := sent(t, reqs); r.method != "DELETE" || strings.Join(r.query["force"], "") != "true" {
				t.Errorf("%s %s?%v, want DELETE with force=true", r.method, r.path, r.query)
			}
		}},
		"signal": {args: []string{id, "approve", `{"by":"ann"}`}, flags: []string{"--idempotency-key", "i1"},
			check: func(t *testing.T, reqs []recorded, code int, out, errOut string) {
				wantCode(t, code, 0, errOut)
				r := sent(t, reqs)
				if r.header.Get("Idempotency-Key") != "i1" || !strings.HasSuffix(r.path, "/signals/approve") {
					t.Errorf("%s with Idempotency-Key %q", r.path, r.header.Get("Idempotency-Key"))
				}
			}},
		"retry": {args: []string{id}, check: justSent},
		"steps": {args: []string{id}, flags: []string{"-o", "table"}, check: tableOut("STEP")},
		"children": {args: []string{id}, flags: []string{"--status", "failed", "-o", "table"},
			check: func(t *testing.T, reqs []recorded, code int, out, errOut string) {
				wantCode(t, code, 0, errOut)
				r := sent(t, reqs)
				if r.path != "/api/executions" || strings.Join(r.query["parent_id"], "") != id || strings.Join(r.query["status"], "") != "failed" {
					t.Errorf("%s?%v, want the children of %s that failed", r.path, r.query, id)
				}
				if !strings.Contains(out, "EXECUTION_ID") || !strings.Contains(out, "STEP") {
					t.Errorf("not a table: %s", out)
				}
			}},
		"attempts":         {args: []string{id}, flags: []string{"--output", "table"}, check: tableOut("ATTEMPT")},
		"why":              {args: []string{id}, flags: []string{"-o", "table"}, check: tableOut("GATE")},
		"tenant create":    {args: []string{"acme"}, flags: []string{"--max-inflight", "5", "--dedup-ttl-seconds", "1h", "--event-retention-seconds", "2h"}, check: sentSettings("POST", map[string]any{"name": "acme", "max_inflight": 5.0, "dedup_ttl_seconds": 3600.0, "event_retention_seconds": 7200.0})},
		"tenant update":    {args: []string{"acme"}, flags: []string{"--max_inflight", "5", "--retention-seconds", "60", "--event-retention-seconds", "90"}, check: sentSettings("PATCH", map[string]any{"max_inflight": 5.0, "retention_seconds": 60.0, "event_retention_seconds": 90.0})},
		"tenant get":       {args: []string{"acme"}, flags: []string{"-o", "table"}, check: tableOut("NAME")},
		"tenant keys":      {args: []string{"acme"}, flags: []string{"-o", "table"}, check: tableOut("KEY_ID")},
		"tenant disable":   {args: []string{"acme"}, check: justSent},
		"tenant enable":    {args: []string{"acme"}, check: justSent},
		"tenant key":       {args: []string{"acme"}, check: justSent},
		"tenant key rm":    {args: []string{"acme", "key_1"}, check: justSent},
		"tenant rm":        {args: []string{"acme"}, flags: []string{"--force"}, check: forced},
		"schedule ls":      {flags: []string{"--limit", "5"}, check: queryIs("limit", "5")},
		"schedule get":     {args: []string{"s1"}, flags: []string{"-o", "table"}, check: tableOut("NAME")},
		"schedule trigger": {args: []string{"s1"}, flags: []string{"--idempotency-key", "t1"}, check: headerIs("Idempotency-Key", "t1")},
		"schedule rm":      {args: []string{"s1"}, check: justSent},
		"schedule pause":   {args: []string{"s1"}, check: onePost("/api/schedules/s1/pause")},
		"schedule resume":  {args: []string{"s1"}, check: onePost("/api/schedules/s1/resume")},
		"schedule apply": {flags: []string{"-f", schedFile}, check: func(t *testing.T, reqs []recorded, code int, out, errOut string) {
			wantCode(t, code, 0, errOut)
			if r := sent(t, reqs); r.method != "PUT" || r.path != "/api/schedules/from-file" {
				t.Errorf("%s %s, want the file's schedule PUT", r.method, r.path)
			}
		}},
		"publish": {args: []string{"order.paid"}, flags: []string{"--data", `{"amount":12}`, "--correlation-key", "o-1", "--idempotency-key", "p1"},
			check: func(t *testing.T, reqs []recorded, code int, out, errOut string) {
				wantCode(t, code, 0, errOut)
				r := sent(t, reqs)
				if r.method != "POST" || r.path != "/api/events" || r.header.Get("Idempotency-Key") != "p1" {
					t.Errorf("%s %s with Idempotency-Key %q", r.method, r.path, r.header.Get("Idempotency-Key"))
				}
				bodyIs(t, r, "name", "order.paid")
				bodyIs(t, r, "key", "o-1")
				if d, _ := r.body["data"].(map[string]any); d["amount"] != 12.0 {
					t.Errorf("data %v", r.body["data"])
				}
			}},
		"subscriptions ls":  {flags: []string{"-o", "table"}, check: tableOut("NAME")},
		"subscriptions get": {args: []string{"s1"}, flags: []string{"-o", "table"}, check: tableOut("NAME")},
		"subscriptions put": {args: []string{"s1"}, flags: []string{"--event", "order.paid", "--kind", "ship", "--timeout", "2m", "--priority", "5", "--disabled"},
			check: func(t *testing.T, reqs []recorded, code int, out, errOut string) {
				wantCode(t, code, 0, errOut)
				r := sent(t, reqs)
				if r.method != "PUT" || r.path != "/api/subscriptions/s1" {
					t.Errorf("%s %s, want PUT /api/subscriptions/s1", r.method, r.path)
				}
				for k, v := range map[string]any{"event": "order.paid", "kind": "ship", "timeout_seconds": 120.0, "priority": 5.0, "enabled": false} {
					bodyIs(t, r, k, v)
				}
			}},
		"subscriptions rm": {args: []string{"s1"}, check: justSent},
		// The commands that open a store, not a server: the flag named a
		// store the default is not.
		"serve": {local: true, flags: []string{"--print-config", "--addr", "127.0.0.1:9999"},
			check: func(t *testing.T, _ []recorded, code int, out, errOut string) {
				wantCode(t, code, 0, errOut)
				if !strings.Contains(out, `addr: "127.0.0.1:9999" # flag --addr`) {
					t.Errorf("--print-config printed:\n%s", out)
				}
			}},
		"bench": {local: true, flags: []string{"--store", "mysql://flag-store", "-n", "10"}, check: storeNamed},
		"prove": {local: true, flags: []string{"--store", "mysql://flag-store", "--duration", "1"}, check: storeNamed},
		// Redis has no schema: no server is asked, and the default store
		// (SQLite) would answer otherwise.
		"migrate up":     {local: true, flags: []string{"--store", "redis://127.0.0.1:1/0"}, check: noSchema},
		"migrate down":   {local: true, flags: []string{"--store", "redis://127.0.0.1:1/0"}, check: noSchema},
		"migrate status": {local: true, flags: []string{"--store", "redis://127.0.0.1:1/0", "-o", "json"}, check: noSchema},
		"version": {local: true, check: func(t *testing.T, _ []recorded, code int, out, errOut string) {
			wantCode(t, code, 0, errOut)
			if !strings.HasPrefix(out, "latch ") {
				t.Errorf("version printed %q", out)
			}
		}},
	}
}

func sentSettings(method string, want map[string]any) func(t *testing.T, reqs []recorded, code int, out, errOut string) {
	return func(t *testing.T, reqs []recorded, code int, out, errOut string) {
		wantCode(t, code, 0, errOut)
		r := sent(t, reqs)
		if r.method != method {
			t.Errorf("%s %s, want %s", r.method, r.path, method)
		}
		for k, v := range want {
			bodyIs(t, r, k, v)
		}
	}
}

func forced(t *testing.T, reqs []recorded, code int, out, errOut string) {
	wantCode(t, code, 0, errOut)
	if r := sent(t, reqs); strings.Join(r.query["force"], "") != "true" {
		t.Errorf("%s %s?%v, want force=true", r.method, r.path, r.query)
	}
}

func queryIs(k, v string) func(t *testing.T, reqs []recorded, code int, out, errOut string) {
	return func(t *testing.T, reqs []recorded, code int, out, errOut string) {
		wantCode(t, code, 0, errOut)
		if r := sent(t, reqs); strings.Join(r.query[k], ",") != v {
			t.Errorf("%s %s: query %s=%v, want %s", r.method, r.path, k, r.query[k], v)
		}
	}
}

func headerIs(k, v string) func(t *testing.T, reqs []recorded, code int, out, errOut string) {
	return func(t *testing.T, reqs []recorded, code int, out, errOut string) {
		wantCode(t, code, 0, errOut)
		if r := sent(t, reqs); r.header.Get(k) != v {
			t.Errorf("%s %s: header %s=%q, want %q", r.method, r.path, k, r.header.Get(k), v)
		}
	}
}

// onePost checks that the command sent exactly one request, a POST of no
// body to path: one atomic call, never a read and a write back.
func onePost(path string) func(t *testing.T, reqs []recorded, code int, out, errOut string) {
	return func(t *testing.T, reqs []recorded, code int, out, errOut string) {
		wantCode(t, code, 0, errOut)
		sent(t, reqs)
		if len(reqs) != 1 || reqs[0].method != "POST" || reqs[0].path != path || reqs[0].body != nil {
			var got []string
			for _, r := range reqs {
				got = append(got, r.method+" "+r.path)
			}
			t.Errorf("sent %q, want exactly one POST %s with no body", got, path)
		}
	}
}

func storeNamed(t *testing.T, _ []recorded, code int, _, errOut string) {
	if code == 0 || code == exitUsage || !strings.Contains(errOut, "mysql://flag-store") {
		t.Errorf("exit %d, %q: want the store of --store refused", code, errOut)
	}
}

func noSchema(t *testing.T, _ []recorded, code int, out, errOut string) {
	wantCode(t, code, 0, errOut)
	if !strings.Contains(out, "a Redis store has no schema") {
		t.Errorf("printed %q: want the Redis store of --store", out)
	}
}

// commandPaths is every command and subcommand of the commands table.
func commandPaths() []string {
	var paths []string
	for _, c := range commands {
		if len(c.subs) == 0 {
			paths = append(paths, c.name)
		}
		for _, s := range c.subs {
			paths = append(paths, c.name+" "+s.path)
		}
	}
	return paths
}

// TestFlagsAnywhere walks every command: its flags take effect before,
// between and after its arguments; an unknown flag, a surplus argument and
// a missing one are usage errors (exit 2) that send nothing.
func TestFlagsAnywhere(t *testing.T) {
	fake := &fakeServer{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	t.Setenv("LATCH_URL", srv.URL)
	t.Setenv("LATCH_KEY", "env-key")
	t.Setenv("LATCH_TENANT", "")
	t.Setenv("LATCH_STORE", "")
	cases := flagCases(t)
	for _, path := range commandPaths() {
		c, ok := cases[path]
		if !ok {
			t.Errorf("latch %s: no case in flagCases", path)
			continue
		}
		t.Run(path, func(t *testing.T) {
			cmd := strings.Fields(path)
			flags := c.flags
			if !c.local {
				flags = append(slices.Clone(flags), "--key", "flag-key", "--tenant", "flag-tenant")
			}
			lines := map[string][]string{
				"flags first": slices.Concat(cmd, flags, c.args),
				"flags last":  slices.Concat(cmd, c.args, flags),
			}
			if len(c.args) > 1 {
				lines["flags between"] = slices.Concat(cmd, c.args[:1], flags, c.args[1:])
			}
			for name, line := range lines {
				fake.take()
				code, out, errOut := cli(t, line...)
				t.Run(name, func(t *testing.T) { c.check(t, fake.take(), code, out, errOut) })
			}
			bad := map[string][]string{
				"unknown flag": slices.Concat(cmd, c.args, flags, []string{"--bogus-flag", "5"}),
			}
			if !c.variadic {
				bad["surplus argument"] = slices.Concat(cmd, flags, c.args, []string{"surplus"})
			}
			if len(c.args) > 0 {
				bad["missing argument"] = slices.Concat(cmd, flags)
			}
			for name, line := range bad {
				fake.take()
				code, out, errOut := cli(t, line...)
				if code != exitUsage || out != "" {
					t.Errorf("%s: latch %s: exit %d, %q %q; want 2 and nothing printed", name, strings.Join(line, " "), code, out, errOut)
				}
				if reqs := fake.take(); len(reqs) > 0 {
					t.Errorf("%s: latch %s sent %s %s", name, strings.Join(line, " "), reqs[0].method, reqs[0].path)
				}
			}
		})
	}
	// A refused command line changes nothing where the command opens a
	// store either.
	db := filepath.Join(t.TempDir(), "new.db")
	for _, line := range [][]string{{"migrate", "up", "--store", "sqlite:" + db, "--bogus-flag"}, {"migrate", "up", "surplus", "--store", "sqlite:" + db}} {
		if code, _, _ := cli(t, line...); code != exitUsage {
			t.Errorf("latch %s: exit %d, want 2", strings.Join(line, " "), code)
		}
		if _, err := os.Stat(db); !os.IsNotExist(err) {
			t.Errorf("latch %s made the store: %v", strings.Join(line, " "), err)
		}
	}
	// "--" ends the flags: what follows is an argument even if it starts
	// with a dash.
	fake.take()
	code, _, errOut := cli(t, "submit", "--dedup-key", "k2", "--", "echo", "-5")
	if code != 0 {
		t.Fatalf("submit -- echo -5: exit %d %s", code, errOut)
	}
	r := lastReq(t, fake.take())
	bodyIs(t, r, "dedup_key", "k2")
	bodyIs(t, r, "payload", -5.0)
}
