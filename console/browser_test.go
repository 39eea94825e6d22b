package console_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/latch-run/latch/store"
)

// chromium finds the browser for the browser tests: $LATCH_CHROMIUM, or
// chromium on the PATH. Without one the tests skip, unless
// LATCH_REQUIRE_BROWSER is set (CI installs Debian's chromium and sets it).
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
	t.Skip("no chromium on the PATH (set LATCH_CHROMIUM to run the browser tests)")
	return ""
}

// A person in a real browser: logs in, watches the list take in a new
// execution by itself (live.js and /live, under the pages' CSP), opens it
// and cancels it, then reads another's attempt history.
func TestBrowserLiveListAndCancel(t *testing.T) {
	bin := chromium(t)
	e := newEnv(t)
	key := e.tenant("a")

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin),
		chromedp.UserDataDir(t.TempDir()), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()

	// Script errors (an exception in live.js, a CSP refusal) fail the test.
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

	if err := chromedp.Do(bctx,
		chromedp.Navigate(e.srv.URL+"/executions"),
		chromedp.WaitVisible(chromedp.ID("key")),
		chromedp.SendKeys(chromedp.ID("key"), key),
		chromedp.Submit(chromedp.ID("key")),
		chromedp.WaitVisible(chromedp.CSS("td.empty")),
	); err != nil {
		t.Fatalf("log in: %v", err)
	}
	if url, err := chromedp.Run(bctx, chromedp.Location()); err != nil || url != e.srv.URL+"/executions" {
		t.Fatalf("after login the browser is at %s (%v), want the executions page it asked for", url, err)
	}

	// The page learns of the new execution without being reloaded.
	x := e.submit("a", store.Submission{})
	link := chromedp.CSS(`a[href="/executions/` + x.ID + `"]`)
	wctx, cancelWait := context.WithTimeout(bctx, 10*time.Second)
	defer cancelWait()
	if err := chromedp.Do(wctx, chromedp.WaitVisible(link)); err != nil {
		t.Fatalf("the list did not show the new execution by itself: %v", err)
	}

	cancelButton := chromedp.CSS(`form[action$="/cancel"] button`)
	if err := chromedp.Do(bctx,
		chromedp.Click(link),
		chromedp.WaitVisible(cancelButton),
		chromedp.Click(cancelButton),
		chromedp.WaitVisible(chromedp.CSS(`form.confirm button`)),
		chromedp.Click(chromedp.CSS(`form.confirm button`)),
		chromedp.WaitVisible(chromedp.CSS(".status.cancelled")),
	); err != nil {
		t.Fatalf("open and cancel: %v", err)
	}
	status, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(".status")))
	if got := e.get(x.ID).Status; err != nil || got != store.StatusCancelled || strings.TrimSpace(status) != "cancelled" {
		t.Fatalf("after the cancel button: store %s, page %q (%v)", got, status, err)
	}

	// The page of an execution that failed once then succeeded shows both
	// runs in its attempts table, the failure with its error.
	y := e.failThenSucceed("a")
	if err := chromedp.Do(bctx,
		chromedp.Navigate(e.srv.URL+"/executions/"+y.ID),
		chromedp.WaitVisible(chromedp.CSS("table.attempts")),
	); err != nil {
		t.Fatalf("open an execution with two runs: %v", err)
	}
	failed, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("table.attempts tbody tr:nth-child(1)")))
	if err != nil {
		t.Fatalf("read the first run's row: %v", err)
	}
	succeeded, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("table.attempts tbody tr:nth-child(2)")))
	if err != nil {
		t.Fatalf("read the second run's row: %v", err)
	}
	if !strings.Contains(failed, "worker-a") || !strings.Contains(failed, "failed") || !strings.Contains(failed, "card declined") {
		t.Errorf("the first run's row: %q", failed)
	}
	if !strings.Contains(succeeded, "worker-b") || !strings.Contains(succeeded, "succeeded") {
		t.Errorf("the second run's row: %q", succeeded)
	}
	select {
	case msg := <-errs:
		t.Fatalf("a script error in the console: %s", msg)
	default:
	}
}
