package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/kinds"
	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/sqlite"
)

// call sends a JSON request to a running server and decodes the answer
// into out, checking the status.
func call(t *testing.T, base, method, path, key, body string, status int, out any) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode != status {
		t.Fatalf("%s %s: %d %s, want %d", method, path, res.StatusCode, data, status)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %s: %v", method, path, data, err)
		}
	}
}

// startServe runs latch serve on a fresh SQLite file and a free port, with
// the admin key testAdminKey and args, until the test ends; it returns the
// server's base URL.
func startServe(t *testing.T, args ...string) string {
	t.Helper()
	t.Setenv("LATCH_ADMIN_KEY", testAdminKey)
	return startServeConfig(t, append([]string{"--addr", "127.0.0.1:0",
		"--store", "sqlite:" + testdb.SQLite(t)}, args...)...)
}

// startServeConfig runs latch serve with args alone until the test ends; it
// returns the server's base URL.
func startServeConfig(t *testing.T, args ...string) string {
	t.Helper()
	cfg, err := serveFlags(args)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, io.Discard, io.Discard, func(a net.Addr) { addr <- a }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	select {
	case a := <-addr:
		return "http://" + a.String()
	case err := <-done:
		done <- err // for the cleanup
		t.Fatalf("serve: %v", err)
	}
	return ""
}

// newTenant creates the tenant acme and returns its key.
func newTenant(t *testing.T, base, admin string) string {
	t.Helper()
	var ten struct {
		APIKey string `json:"api_key"`
	}
	call(t, base, "POST", "/api/tenants", admin, `{"name":"acme"}`, http.StatusCreated, &ten)
	return ten.APIKey
}

// Shutdown stops claiming at once, whatever the HTTP side is waiting for: an
// execution that comes due while a slow client holds the HTTP drain open
// for the whole grace period is not claimed.
func TestServeShutdownStopsClaimingAtOnce(t *testing.T) {
	t.Setenv("LATCH_ADMIN_KEY", testAdminKey)
	db := testdb.SQLite(t)
	cfg, err := serveFlags([]string{"--addr", "127.0.0.1:0", "--store", "sqlite:" + db, "--workers", "2",
		"--shutdown-grace", "3s"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, io.Discard, io.Discard, func(a net.Addr) { addr <- a }) }()
	var base, host string
	select {
	case a := <-addr:
		host = a.String()
		base = "http://" + host
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	key := newTenant(t, base, testAdminKey)
	var x struct {
		ID string `json:"execution_id"`
	}
	call(t, base, "POST", "/api/executions", key, `{"kind":"echo","delay_seconds":1}`, http.StatusCreated, &x)

	// A client that sends half a request and then nothing: the HTTP drain
	// waits for it until the grace period ends.
	slow, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fmt.Fprintf(slow, "POST /api/executions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{", key)
	time.Sleep(100 * time.Millisecond) // let the server start on the request

	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not return within 20s of the shutdown")
	}
	if d := time.Since(start); d < 2*time.Second {
		t.Fatalf("shutdown took %v: the slow client was meant to hold the HTTP drain", d)
	}
	st, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e, err := st.Get(context.Background(), &store.GetParams{ID: x.ID})
	if err != nil {
		t.Fatal(err)
	}
	if e.Attempt != 0 || e.Status.Terminal() || e.Status == store.StatusRunning {
		t.Fatalf("the execution due during the shutdown is %s after %d attempt(s); want it never claimed", e.Status, e.Attempt)
	}
}

// TestMainHelperProcess is `latch` itself when run by
// TestServeSecondSignalStopsAtOnce.
func TestMainHelperProcess(t *testing.T) {
	args := os.Getenv("LATCH_TEST_MAIN_ARGS")
	if args == "" {
		t.Skip("runs only as the child of TestServeSecondSignalStopsAtOnce")
	}
	os.Args = append([]string{"latch"}, strings.Split(args, "\n")...)
	main()
}

// The first SIGINT starts a graceful shutdown, which waits up to the grace
// period for running work; a second one ends the process at once.
func TestServeSecondSignalStopsAtOnce(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs SIGINT")
	}
	db := testdb.SQLite(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestMainHelperProcess$")
	cmd.Env = append(os.Environ(), "LATCH_ADMIN_KEY="+testAdminKey, kinds.AllowEnv+"=",
		"LATCH_TEST_MAIN_ARGS="+strings.Join([]string{"serve", "--addr", "127.0.0.1:0", "--store", "sqlite:" + db,
			"--workers", "1", "--shutdown-grace", "5m"}, "\n"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	})
	var logged []string
	waitLine := func(what string) string {
		t.Helper()
		timeout := time.After(20 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("latch ended before logging %q; it logged:\n%s", what, strings.Join(logged, "\n"))
				}
				logged = append(logged, l)
				if strings.Contains(l, what) {
					return l
				}
			case <-timeout:
				t.Fatalf("latch did not log %q within 20s; it logged:\n%s", what, strings.Join(logged, "\n"))
			}
		}
	}
	// stderr is a pipe, not a terminal: latch logs JSON.
	m := regexp.MustCompile(`"addr":"(http://[^"]+)"`).FindStringSubmatch(waitLine(`"msg":"latch serving"`))
	if m == nil {
		t.Fatalf("no address in %q", logged)
	}
	base := m[1]

	// Running work that takes far longer than the test: a graceful
	// shutdown would wait the whole grace period for it.
	key := newTenant(t, base, testAdminKey)
	var x struct {
		ID     string `json:"execution_id"`
		Status string `json:"status"`
	}
	call(t, base, "POST", "/api/executions", key, `{"kind":"sleep","payload":{"seconds":900}}`, http.StatusCreated, &x)
	for deadline := time.Now().Add(20 * time.Second); x.Status != "running"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the sleep execution is still %s", x.Status)
		}
		call(t, base, "GET", "/api/executions/"+x.ID, key, "", http.StatusOK, &x)
	}

	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	waitLine("latch shutting down")
	go func() {
		for range lines { // keep the pipe drained
		}
	}()
	// The second signal; sent again in case the first arrives before the
	// handler is let go (the test then still fails without the fix: every
	// one of them would be swallowed).
	start := time.Now()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	_ = cmd.Process.Signal(os.Interrupt)
	for {
		select {
		case err := <-exited:
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("latch exited with %v after the second signal; want it killed by the signal", err)
			}
			if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGINT {
				t.Fatalf("latch ended with %v; want it killed by SIGINT", err)
			}
			t.Logf("stopped %v after the second signal", time.Since(start))
			return
		case <-tick.C:
			if time.Since(start) > 10*time.Second {
				t.Fatal("latch still running 10s after a second SIGINT (its grace period is 5m)")
			}
			_ = cmd.Process.Signal(os.Interrupt)
		}
	}
}

// Every piece of configuration is checked before the store is touched: a
// bad one leaves no store file and no generated admin key behind.
func TestServeChecksConfigurationBeforeTheStore(t *testing.T) {
	t.Setenv("LATCH_ADMIN_KEY", "")
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, c := range []struct {
		name, allow, secret, admin string
		args                       []string
		code                       int
		want                       string
	}{
		{"allow list", "bad:pattern:", "", "", nil, 2, kinds.AllowEnv},
		{"log level", "", "", "", []string{"--log-level", "loud"}, 2, "--log-level"},
		{"console secret", "", "too short", "", nil, 2, consoleSecretEnv},
		{"admin key", "", "", "admin-secret", nil, 2, "LATCH_ADMIN_KEY must be at least 32 bytes"},
		{"negative bound", "", "", "", []string{"--max-streams", "-1"}, 2, "--max-streams"},
		{"no body budget", "", "", "", []string{"--body-budget-mib", "0"}, 2, "--body-budget-mib"},
		{"tenant share past the slots", "", "", "", []string{"--workers", "4", "--tenant-slots", "5"}, 2, "--tenant-slots"},
		{"address in use", "", "", "", []string{"--addr", busy.Addr().String()}, 1, "address already in use"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(kinds.AllowEnv, c.allow)
			t.Setenv(consoleSecretEnv, c.secret)
			t.Setenv("LATCH_ADMIN_KEY", c.admin)
			db := testdb.SQLite(t)
			args := append([]string{"serve", "--addr", "127.0.0.1:0", "--store", "sqlite:" + db}, c.args...)
			code, out, errOut := cli(t, args...)
			if code != c.code || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d, %q; want %d and a message naming %s", code, errOut, c.code, c.want)
			}
			if out != "" {
				t.Errorf("printed %q", out)
			}
			if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the store was opened: %v", err)
			}
		})
	}
}

// The bounds' settings come from the environment, the command line winning;
// 0 is no bound.
func TestServeBoundSettings(t *testing.T) {
	t.Setenv("LATCH_MAX_STREAMS", "7")
	t.Setenv("LATCH_MAX_LONG_POLLS", "0")
	t.Setenv("LATCH_BODY_BUDGET_MIB", "16")
	cfg, err := serveFlags([]string{"--max-schedules", "3"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.maxStreams != 7 || cfg.maxLongPolls != 0 || cfg.bodyBudgetMiB != 16 || cfg.maxSchedules != 3 {
		t.Fatalf("settings %d %d %d %d, want 7 0 16 3", cfg.maxStreams, cfg.maxLongPolls, cfg.bodyBudgetMiB, cfg.maxSchedules)
	}
	if cfg.minSchedule != time.Second {
		t.Errorf("min-schedule-interval defaults to %v, want 1s", cfg.minSchedule)
	}
	t.Setenv("LATCH_MIN_SCHEDULE_INTERVAL", "5m")
	if cfg, err = serveFlags(nil); err != nil || cfg.minSchedule != 5*time.Minute {
		t.Errorf("LATCH_MIN_SCHEDULE_INTERVAL=5m: %v, %v", cfg, err)
	}
	if _, err := serveFlags([]string{"--min-schedule-interval", "500ms"}); err == nil {
		t.Error("--min-schedule-interval 500ms was taken")
	}
	if noBound(cfg.maxLongPolls) >= 0 || noBound(7) != 7 {
		t.Fatal("0 is not passed on as no bound")
	}
}

// Errors say "latch" once: the library's "latch: " prefix is not repeated
// after the command's.
func TestServeErrorsSayLatchOnce(t *testing.T) {
	t.Setenv("LATCH_ADMIN_KEY", testAdminKey)
	code, _, errOut := cli(t, "serve", "--addr", "127.0.0.1:0", "--store", "mysql://db/x")
	if code == 0 || !strings.HasPrefix(errOut, "latch serve: ") || strings.Contains(errOut, "latch:") ||
		!strings.Contains(errOut, "mysql://db/x") {
		t.Errorf("bad store URL: exit %d, %q", code, errOut)
	}
}

// TestServeRunsTheScheduler: a schedule put over the API fires on the
// server's own scheduler (woken by the PUT), and /metrics counts the tick.
func TestServeRunsTheScheduler(t *testing.T) {
	base := startServe(t, "--workers", "2", "--shutdown-grace", "3s")
	key := newTenant(t, base, testAdminKey)
	call(t, base, "PUT", "/api/schedules/tick", key, `{"every":"1s","kind":"echo"}`, http.StatusCreated, nil)
	deadline := time.Now().Add(15 * time.Second)
	for {
		var page struct {
			Items []struct {
				Status string `json:"status"`
			} `json:"items"`
		}
		call(t, base, "GET", "/api/executions?schedule=tick&status=succeeded", key, "", http.StatusOK, &page)
		if len(page.Items) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no tick of an every-1s schedule succeeded within 15s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if !regexp.MustCompile(`(?m)^latch_schedule_ticks_total\{outcome="admitted"\} [1-9]`).Match(data) {
		t.Errorf("/metrics does not count the admitted tick:\n%s", regexp.MustCompile(`(?m)^latch_schedule.*$`).FindAll(data, -1))
	}
}

// latch serve serves the console beside the API: a person logs in with a
// key and sees the executions that key may see.
func TestServeServesTheConsole(t *testing.T) {
	base := startServe(t, "--workers", "0")
	key := newTenant(t, base, testAdminKey)
	var x struct {
		ID string `json:"execution_id"`
	}
	call(t, base, "POST", "/api/executions", key, `{"kind":"echo"}`, http.StatusCreated, &x)

	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := browser.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/executions" {
		t.Fatalf("GET /: %d to %q, want the console's executions page", res.StatusCode, res.Header.Get("Location"))
	}
	res, err = browser.PostForm(base+"/login", url.Values{"key": {key}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("login with the tenant key: %d", res.StatusCode)
	}
	res, err = browser.Get(base + "/executions")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `href="/executions/`+x.ID+`"`) {
		t.Fatalf("the console's executions page: %d, without the submitted execution:\n%s", res.StatusCode, body)
	}
}

// --console=false leaves the API alone: / is the API's 404.
func TestServeWithoutTheConsole(t *testing.T) {
	base := startServe(t, "--workers", "0", "--console=false")
	res, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound || res.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("GET / without the console: %d %q, want the API's 404", res.StatusCode, res.Header.Get("Content-Type"))
	}
}

// The audit's case: a tenant asks the http kind for the server's own
// /metrics. By default that is a loopback address, refused at once; the
// operator opens it by listing it in LATCH_HTTP_ALLOW.
func TestServeHTTPKindReachesInternalHostsOnlyWhenListed(t *testing.T) {
	for _, c := range []struct {
		name, allow, status string
	}{
		{"unset", "", "failed"},
		{"every public host", "*", "failed"},
		{"listed", "*,127.0.0.1", "succeeded"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(kinds.AllowEnv, c.allow)
			base := startServe(t, "--workers", "1", "--shutdown-grace", "3s")
			key := newTenant(t, base, testAdminKey)
			var x struct {
				ID          string          `json:"execution_id"`
				Status      string          `json:"status"`
				Attempt     int             `json:"attempt"`
				MaxAttempts int             `json:"max_attempts"`
				Error       *string         `json:"error"`
				Result      json.RawMessage `json:"result"`
			}
			call(t, base, "POST", "/api/executions", key,
				`{"kind":"http","max_attempts":3,"payload":{"url":"`+base+`/metrics"}}`, http.StatusCreated, &x)
			call(t, base, "GET", "/api/executions/"+x.ID+"?wait_seconds=10", key, "", http.StatusOK, &x)
			if x.Status != c.status {
				t.Fatalf("status %s (error %v), want %s", x.Status, x.Error, c.status)
			}
			if c.status == "succeeded" {
				if !strings.Contains(string(x.Result), "latch_http_requests_total") {
					t.Errorf("result %.200s, want the metrics", x.Result)
				}
				return
			}
			if x.Attempt != 1 || x.Error == nil || string(x.Result) != "null" ||
				!strings.Contains(*x.Error, "refused to connect to 127.0.0.1: loopback address") {
				t.Errorf("attempt %d/%d, error %v, result %s; want failed at once, refused as loopback",
					x.Attempt, x.MaxAttempts, x.Error, x.Result)
			}
		})
	}
}
