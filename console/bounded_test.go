package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// deepJSON is an array nested n levels deep around one string: 2n bytes
// and a few.
func deepJSON(n int) []byte {
	return []byte(strings.Repeat("[", n) + `"core"` + strings.Repeat("]", n))
}

// inProcess serves one GET of path straight from the console, with b's
// session, and returns the page with the bytes allocated meanwhile.
func (b *browser) inProcess(path string) (*httptest.ResponseRecorder, uint64) {
	b.e.t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	u, _ := url.Parse(b.e.srv.URL)
	for _, ck := range b.client.Jar.Cookies(u) {
		req.AddCookie(ck)
	}
	rec := httptest.NewRecorder()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.e.console.ServeHTTP(rec, req)
	runtime.ReadMemStats(&after)
	return rec, after.TotalAlloc - before.TotalAlloc
}

// TestDeepJSONRendersASmallPage: whatever JSON is stored, a page shows it
// within a budget. An execution whose payload and result nest 10,000
// levels (20 KB each), and a schedule whose payload does, render pages of
// a few KB at a bounded cost, saying what was cut and linking the raw
// value, itself bounded.
func TestDeepJSONRendersASmallPage(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	deep := deepJSON(10000)
	x := e.submit("a", store.Submission{Kind: "flow", Payload: deep})
	l := e.claim("a", "worker-a")
	e.step(l, "nested", string(deep))
	if _, err := e.store.Complete(context.Background(), &store.CompleteParams{ExecutionID: x.ID, Token: l.Token,
		Result: deep, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	e.call("PUT", "/api/schedules/nested", key, `{"every":"1h","kind":"echo"}`)
	if _, err := e.store.PutSchedule(context.Background(), &store.PutScheduleParams{Schedule: scheduleWith(t, e, "a", "nested", deep),
		Now: time.Now()}); err != nil {
		t.Fatal(err)
	}

	b := e.browser()
	b.login(key)
	for _, path := range []string{"/executions/" + x.ID, "/schedule?name=nested"} {
		rec, alloc := b.inProcess(path)
		body := rec.Body.String()
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: %d", path, rec.Code)
		}
		t.Logf("GET %s: %d bytes, %d KB allocated", path, len(body), alloc>>10)
		if len(body) > 1<<20 {
			t.Errorf("GET %s: a page of %d bytes for %d bytes of JSON", path, len(body), len(deep))
		}
		if alloc > 16<<20 {
			t.Errorf("GET %s allocated %d MB", path, alloc>>20)
		}
		if !strings.Contains(body, "… (truncated: depth &gt; 20 shown as …)") {
			t.Errorf("GET %s does not say the JSON was cut:\n%.3000s", path, body)
		}
		raw := rawLink(body)
		if raw == "" {
			t.Errorf("GET %s links no raw view", path)
			continue
		}
		p := b.do("GET", raw, nil)
		if p.status != http.StatusOK || p.body != string(deep) || !strings.HasPrefix(p.header.Get("Content-Type"), "text/plain") {
			t.Errorf("GET %s (the raw view): %d %q, %d bytes", raw, p.status, p.header.Get("Content-Type"), len(p.body))
		}
	}
	// Another tenant's raw view is not found.
	other := e.browser()
	other.login(e.tenant("b"))
	for _, path := range []string{"/executions/" + x.ID + "/json?field=payload", "/schedule/json?tenant=a&name=nested"} {
		if p := other.do("GET", path, nil); p.status != http.StatusNotFound || strings.Contains(p.body, "core") {
			t.Errorf("tenant b reading %s: %d", path, p.status)
		}
	}
}

// scheduleWith is tenant's schedule name with its payload replaced.
func scheduleWith(t *testing.T, e *env, tenant, name string, payload json.RawMessage) store.Schedule {
	t.Helper()
	s, err := e.store.GetSchedule(context.Background(), &store.GetScheduleParams{Tenant: tenant, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	s.Payload = payload
	return *s
}

// rawLink is the first raw view a page links to.
func rawLink(body string) string {
	i := strings.Index(body, `<a class="raw" href="`)
	if i < 0 {
		return ""
	}
	s := body[i+len(`<a class="raw" href="`):]
	return strings.ReplaceAll(s[:strings.Index(s, `"`)], "&amp;", "&")
}
