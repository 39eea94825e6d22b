package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

var tsDir = filepath.Join("..", "..", "sdk", "typescript")

// TestTypeScript installs sdk/typescript's pinned dev dependencies (npm ci,
// from the lock file), builds dist/ with tsc, then runs at once its node
// --test suite and the browser test against latch servers built from this
// tree.
func TestTypeScript(t *testing.T) {
	npm := tool(t, "npm")
	node := tool(t, "node")
	for _, args := range [][]string{
		{"ci", "--prefer-offline", "--no-audit", "--no-fund"},
		{"run", "build"},
	} {
		cmd := exec.Command(npm, args...)
		cmd.Dir = tsDir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	bin := latchBin
	t.Run("node", func(t *testing.T) {
		t.Parallel()
		nodeSuite(t, node, bin)
	})
	t.Run("browser", func(t *testing.T) {
		t.Parallel()
		browserWatch(t, bin)
	})
}

// nodeSuite runs sdk/typescript's node --test suite (client, typed errors,
// worker, flows, its types against api/openapi.json, and the shared
// scenario of sdk/SCENARIO.md) against the built server.
func nodeSuite(t *testing.T, node, bin string) {
	// test/run.mjs: node --test over test/*.test.mjs, with LATCH_BIN.
	cmd := exec.Command(node, filepath.Join("test", "run.mjs"))
	cmd.Dir = tsDir
	cmd.Env = append(os.Environ(), "LATCH_BIN="+bin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node test/run.mjs: %v\n%s", err, out)
	}
	t.Logf("%s", tail(out, 12))
}

func tail(b []byte, lines int) []byte {
	s := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(s) > lines {
		s = s[len(s)-lines:]
	}
	return bytes.Join(s, []byte("\n"))
}

// chromium finds the browser: $LATCH_CHROMIUM, or chromium on the PATH.
// Without one the browser test skips, unless LATCH_REQUIRE_BROWSER is set.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("LATCH_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("LATCH_REQUIRE_BROWSER") != "" {
		t.Fatal("LATCH_REQUIRE_BROWSER is set but no chromium was found (set LATCH_CHROMIUM)")
	}
	t.Skip("no chromium on the PATH (set LATCH_CHROMIUM to run the browser test)")
	return ""
}

const tsAdminKey = "lk_typescript-browser-test-admin-key-only"

// serve starts `latch serve` (no in-process workers: the test is the
// worker) on a free port and answers its base URL.
func serve(t *testing.T, bin string) string {
	t.Helper()
	return startServe(t, bin, tsAdminKey, "--store", "sqlite:"+filepath.Join(t.TempDir(), "latch.db"),
		"--workers", "0", "--console=false", "--shutdown-grace", "1s")
}

// api calls latch and decodes the answer into out; any status but want fails the test.
func api(t *testing.T, base, key, method, path string, body any, want int, out any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, base+path, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, res.StatusCode, want, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
}

// browserWatch loads a page in Chromium that imports the built
// ESM client and calls watch(id) on an execution, showing each status. The
// page, dist/ and a proxy of latch's /api/ share one origin (the API sends no
// CORS headers). The test is the worker: it claims the execution once the
// page shows it queued and completes it once the page shows it running, so
// the page must show exactly queued, running, succeeded. watch() in a
// browser must take a stream ticket with the key and open an EventSource on
// ?ticket=, with no Authorization header on the stream: the proxy checks.
func browserWatch(t *testing.T, bin string) {
	browser := chromium(t)
	base := serve(t, bin)

	var tenant struct {
		APIKey string `json:"api_key"`
	}
	api(t, base, tsAdminKey, "POST", "/api/tenants", map[string]any{"name": "browser"}, 201, &tenant)
	key := tenant.APIKey
	var exec struct {
		ID string `json:"execution_id"`
	}
	api(t, base, key, "POST", "/api/executions", map[string]any{"kind": "watched", "payload": map[string]any{"n": 1}}, 201, &exec)

	// The page's origin: the page, the build, and latch's API behind a proxy.
	target, _ := url.Parse(base)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1 // event streams flush each write
	var mu sync.Mutex
	var seen []string // the stream requests: ticket or key
	mux := http.NewServeMux()
	mux.Handle("/api/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		switch {
		case strings.HasSuffix(r.URL.Path, "/stream-ticket"):
			seen = append(seen, fmt.Sprintf("ticket asked with key: %t", r.Header.Get("Authorization") == "Bearer "+key))
		case strings.HasSuffix(r.URL.Path, "/events"):
			seen = append(seen, fmt.Sprintf("events with ticket: %t, with Authorization: %t",
				r.URL.Query().Get("ticket") != "", r.Header.Get("Authorization") != ""))
		}
		mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	mux.Handle("/dist/", http.StripPrefix("/dist/", http.FileServer(http.Dir(filepath.Join(tsDir, "dist")))))
	mux.Handle("/", http.FileServer(http.Dir(filepath.Join(tsDir, "test", "browser"))))
	page := httptest.NewServer(mux)
	defer page.Close()

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser),
		chromedp.UserDataDir(t.TempDir()), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.Headless,
		chromedp.NoFirstRun, chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()

	errs := make(chan string, 16)
	report := func(msg string) {
		select {
		case errs <- msg:
		default:
		}
	}
	if err := chromedp.Listen(bctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			report(ev.ExceptionDetails.Text)
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError {
				report(string(ev.Entry.Source) + ": " + ev.Entry.Text + " " + ev.Entry.URL)
			}
		}
	}); err != nil {
		t.Fatalf("start the browser: %v", err)
	}
	fail := func(step string, err error) {
		t.Helper()
		text, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById("statuses")?.textContent ?? ""`))
		pageErr, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById("error")?.textContent ?? ""`))
		var logged []string
		for len(errs) > 0 {
			logged = append(logged, <-errs)
		}
		t.Fatalf("%s: %v\npage statuses: %q\npage error: %q\nbrowser errors: %q", step, err, text, pageErr, logged)
	}

	frag := url.Values{"key": {key}, "id": {exec.ID}}.Encode()
	if err := chromedp.Do(bctx,
		chromedp.Navigate(page.URL+"/index.html#"+frag),
		chromedp.WaitVisible(chromedp.CSS(`li[data-status="queued"]`)),
	); err != nil {
		fail("the page shows queued", err)
	}

	// The worker: claim, then complete once the page has shown running.
	var claim struct {
		Leases []struct {
			ID    string `json:"execution_id"`
			Token string `json:"lease_token"`
		} `json:"leases"`
	}
	api(t, base, key, "POST", "/api/workers/claim",
		map[string]any{"worker_id": "browser-test", "kinds": []string{"watched"}, "wait_seconds": 5}, 200, &claim)
	if len(claim.Leases) != 1 || claim.Leases[0].ID != exec.ID {
		t.Fatalf("claim: %+v", claim)
	}
	if err := chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(`li[data-status="running"]`))); err != nil {
		fail("the page shows running", err)
	}
	api(t, base, key, "POST", "/api/executions/"+exec.ID+"/complete",
		map[string]any{"lease_token": claim.Leases[0].Token, "result": map[string]any{"ok": true}}, 200, nil)

	if err := chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(`body[data-done]`))); err != nil {
		fail("the page ends the watch", err)
	}
	statuses, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#statuses li")].map(li => li.dataset.status)`))
	if err != nil {
		fail("read the statuses", err)
	}
	done, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.body.dataset.done`))
	if err != nil {
		fail("read the end", err)
	}
	if done != "succeeded" || strings.Join(statuses, ",") != "queued,running,succeeded" {
		fail("the statuses", fmt.Errorf("saw %q, ended %q; want queued, running, succeeded", statuses, done))
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"ticket asked with key: true", "events with ticket: true, with Authorization: false"}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the stream requests:\n%s\nwant:\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
	select {
	case e := <-errs:
		t.Fatalf("browser error: %s", e)
	default:
	}
}
