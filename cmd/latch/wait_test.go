package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latch-run/latch/api"
	"github.com/latch-run/latch/auth"
	"github.com/latch-run/latch/engine"
	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/kinds"
	"github.com/latch-run/latch/store/sqlite"
)

// fakeTerminal stands in for a terminal on stderr: it says it is one and
// keeps what is written, signalling each write.
type fakeTerminal struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	wrote chan struct{}
}

func newFakeTerminal() *fakeTerminal { return &fakeTerminal{wrote: make(chan struct{}, 1)} }

func (f *fakeTerminal) IsTerminal() bool { return true }

func (f *fakeTerminal) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case f.wrote <- struct{}{}:
	default:
	}
	return f.buf.Write(p)
}

func (f *fakeTerminal) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.buf.String()
}

// waitFor waits until the terminal shows want.
func (f *fakeTerminal) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(time.Minute)
	for !strings.Contains(f.String(), want) {
		select {
		case <-f.wrote:
		case <-deadline:
			t.Fatalf("the terminal never showed %q:\n%q", want, f.String())
		}
	}
}

// cliOnTerminal is cli with stderr a terminal.
func cliOnTerminal(args ...string) (int, string, *fakeTerminal) {
	var out bytes.Buffer
	term := newFakeTerminal()
	code := run(context.Background(), args, &out, term)
	return code, out.String(), term
}

// TestWaitStatusLine: with stderr a terminal, latch wait keeps a line of
// the execution's status, attempt and time waited, drawn over itself, and
// prints the execution on stdout as without one.
func TestWaitStatusLine(t *testing.T) {
	srv, key := tenantServer(t)
	var x struct {
		ID string `json:"execution_id"`
	}
	call(t, srv.URL, "POST", "/api/executions", key, `{"kind":"echo","payload":{"order":7}}`, 201, &x)

	type result struct {
		code int
		out  string
	}
	done := make(chan result, 1)
	term := newFakeTerminal()
	go func() {
		var out bytes.Buffer
		code := run(context.Background(), []string{"wait", x.ID}, &out, term)
		done <- result{code, out.String()}
	}()
	term.waitFor(t, clearLine+x.ID+": queued, attempt 0, ")

	var claim struct {
		Leases []struct {
			Token string `json:"lease_token"`
		} `json:"leases"`
	}
	call(t, srv.URL, "POST", "/api/workers/claim", key, `{"worker_id":"worker-a"}`, 200, &claim)
	term.waitFor(t, clearLine+x.ID+": running, attempt 1, ")
	call(t, srv.URL, "POST", "/api/executions/"+x.ID+"/complete", key,
		`{"lease_token":"`+claim.Leases[0].Token+`","result":{"ok":true}}`, 200, nil)

	r := <-done
	if r.code != 0 {
		t.Fatalf("wait: exit %d %q", r.code, term.String())
	}
	shown := term.String()
	if !strings.HasSuffix(shown, "\n") || !strings.Contains(shown, clearLine+x.ID+": succeeded, attempt 1, ") {
		t.Errorf("the status line did not end with the terminal status on a line of its own: %q", shown)
	}
	// Stdout is what it is without a terminal.
	code, out, errOut := cli(t, "wait", x.ID)
	if code != 0 || out != r.out || errOut != "" {
		t.Errorf("wait without a terminal: exit %d, stdout %q (on a terminal %q), stderr %q", code, out, r.out, errOut)
	}
}

// TestWaitMany: latch wait with several ids, against a server with a
// worker: one line of JSON an execution on stdout, a progress bar on a
// terminal and nothing on stderr otherwise; exit 7 when one failed, 3 for
// an unknown id, 6 when --timeout runs out.
func TestWaitMany(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv := httptest.NewServer(api.New(api.Config{Store: st, AdminKeyHash: auth.HashKey(testAdminKey)}).Handler())
	defer srv.Close()
	w := engine.NewWorker(engine.WorkerConfig{Store: st, Slots: 4})
	if err := kinds.Register(w, kinds.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(ctx)
	key := newTenant(t, srv.URL, testAdminKey)
	t.Setenv("LATCH_URL", srv.URL)
	t.Setenv("LATCH_KEY", key)

	submit := func(body string) string {
		t.Helper()
		var x struct {
			ID string `json:"execution_id"`
		}
		call(t, srv.URL, "POST", "/api/executions", key, body, 201, &x)
		return x.ID
	}
	var ok []string
	// More than maxWaiters: the ones past the first long polls wait their turn.
	for i := range maxWaiters + 4 {
		ok = append(ok, submit(`{"kind":"echo","payload":{"n":`+strconv.Itoa(i)+`}}`))
	}
	failing := submit(`{"kind":"sleep","payload":{"seconds":"soon"},"max_attempts":1}`)

	lines := func(out string) map[string]string {
		t.Helper()
		got := map[string]string{}
		for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			var e struct {
				ID     string `json:"execution_id"`
				Status string `json:"status"`
			}
			if err := json.Unmarshal([]byte(l), &e); err != nil {
				t.Fatalf("not a line of JSON: %q (%v)", l, err)
			}
			got[e.ID] = e.Status
		}
		return got
	}

	all := append(slices.Clone(ok), failing)
	code, out, term := cliOnTerminal(append([]string{"wait", "--timeout", "1m"}, all...)...)
	if code != exitNotSucceeded {
		t.Fatalf("wait on %d with one failing: exit %d, %q %q", len(all), code, out, term.String())
	}
	got := lines(out)
	for _, id := range ok {
		if got[id] != "succeeded" {
			t.Errorf("%s: %q, want succeeded", id, got[id])
		}
	}
	if got[failing] != "failed" || len(got) != len(all) {
		t.Errorf("lines %v", got)
	}
	shown := term.String()
	n := strconv.Itoa(len(all))
	if !strings.Contains(shown, "("+n+"/"+n+")") || !strings.Contains(shown, "ended (1 not succeeded)") ||
		!strings.Contains(shown, "1 of "+n+" executions ended other than succeeded") {
		t.Errorf("the terminal showed no finished bar: %q", shown)
	}

	code, out, errOut := cli(t, append([]string{"wait"}, ok...)...)
	if code != 0 || len(lines(out)) != len(ok) || errOut != "" {
		t.Errorf("wait on the succeeded, no terminal: exit %d, %q, stderr %q", code, out, errOut)
	}
	if code, _, errOut = cli(t, "wait", ok[0], "0193a6e4-7c1e-7b3a-9f1e-2d9c3e8a4b10"); code != exitNotFound {
		t.Errorf("wait with an unknown id: exit %d %s", code, errOut)
	}
	later := submit(`{"kind":"echo","delay_seconds":3600}`)
	if code, _, errOut = cli(t, "wait", "--timeout", "200ms", ok[0], later); code != exitTryLater {
		t.Errorf("wait --timeout on one not due: exit %d %s", code, errOut)
	}
}

// TestWaitPastTheLongPollBound: with more ids than the tenant may hold long
// polls on the server, latch wait polls again after a refusal instead of
// giving up on executions that are fine.
func TestWaitPastTheLongPollBound(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv := httptest.NewServer(api.New(api.Config{Store: st, AdminKeyHash: auth.HashKey(testAdminKey),
		MaxLongPollsPerTenant: 2}).Handler())
	defer srv.Close()
	w := engine.NewWorker(engine.WorkerConfig{Store: st, Slots: 2})
	if err := kinds.Register(w, kinds.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(ctx)
	defer func(d time.Duration) { pollBusyWait = d }(pollBusyWait)
	pollBusyWait = 20 * time.Millisecond
	key := newTenant(t, srv.URL, testAdminKey)
	t.Setenv("LATCH_URL", srv.URL)
	t.Setenv("LATCH_KEY", key)
	args := []string{"wait", "--timeout", "1m"}
	for range 6 {
		var x struct {
			ID string `json:"execution_id"`
		}
		call(t, srv.URL, "POST", "/api/executions", key, `{"kind":"sleep","payload":{"seconds":0.2}}`, 201, &x)
		args = append(args, x.ID)
	}
	code, out, errOut := cli(t, args...)
	if code != exitOK || strings.Count(out, "\n") != 6 {
		t.Fatalf("latch wait on 6 ids with a bound of 2 long polls: exit %d, stdout %q, stderr %q; want 6 lines and exit 0", code, out, errOut)
	}
}

// TestWaitTimeoutSaysWhy: a wait whose --timeout runs out says which
// executions were not finished and in which status, and exits 6, never
// with a bare "context deadline exceeded".
func TestWaitTimeoutSaysWhy(t *testing.T) {
	srv, key := tenantServer(t) // no worker: a queued execution stays queued
	submit := func(body string) string {
		var x struct {
			ID string `json:"execution_id"`
		}
		call(t, srv.URL, "POST", "/api/executions", key, body, 201, &x)
		return x.ID
	}
	queued, later := submit(`{"kind":"echo"}`), submit(`{"kind":"echo","delay_seconds":3600}`)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"wait", queued, "--timeout", "1"}, queued + ": still queued after 1s\n"},
		{[]string{"wait", "--timeout", "300ms", queued, later}, "2 of 2 executions not finished after 300ms: " + queued + " queued, " + later + " scheduled\n"},
	} {
		code, out, errOut := cli(t, c.args...)
		if code != exitTryLater || out != "" || errOut != "latch wait: "+c.want {
			t.Errorf("latch %s: exit %d, %q, stderr %q; want 6 and %q", strings.Join(c.args, " "), code, out, errOut, c.want)
		}
	}
}
