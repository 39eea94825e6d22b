package kinds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/engine"
	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/sqlite"
)

func job(kind, payload string) *engine.Job {
	return &engine.Job{ID: "x", Tenant: "t", Kind: kind, Queue: "default",
		Payload: json.RawMessage(payload), Attempt: 1, MaxAttempts: 3}
}

func TestEcho(t *testing.T) {
	t.Parallel()
	got, err := EchoHandler(t.Context(), job(Echo, `{"a":[1,2]}`))
	if err != nil || string(got) != `{"a":[1,2]}` {
		t.Errorf("echo = %s, %v", got, err)
	}
}

func TestSleep(t *testing.T) {
	t.Parallel()
	got, err := SleepHandler(t.Context(), job(Sleep, `{"seconds":0.01}`))
	if err != nil || string(got) != `{"slept_seconds":0.01}` {
		t.Errorf("sleep = %s, %v", got, err)
	}
}

func TestSleepHonoursCancellation(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(engine.ErrCancelled)
	_, err := SleepHandler(ctx, job(Sleep, `{"seconds":600}`))
	if !errors.Is(err, engine.ErrCancelled) || engine.IsPermanent(err) {
		t.Errorf("sleep = %v, want an error carrying the cause", err)
	}
}

func TestSleepBadPayloadIsPermanent(t *testing.T) {
	t.Parallel()
	for _, p := range []string{`{}`, `{"seconds":-1}`, `{"seconds":"1"}`, `[]`, `{"seconds":1,"extra":2}`,
		`{"seconds":1e300}`} {
		if _, err := SleepHandler(t.Context(), job(Sleep, p)); !engine.IsPermanent(err) {
			t.Errorf("payload %s: err %v, want permanent", p, err)
		}
	}
}

// local allows the test servers, which listen on 127.0.0.1.
var local = []string{"127.0.0.1"}

// call runs the http kind with the given allow patterns.
func call(t *testing.T, allow []string, payload string) (httpResult, error) {
	t.Helper()
	h, err := NewHTTPHandler(allow, nil)
	if err != nil {
		t.Fatal(err)
	}
	return run(t, h, payload)
}

// run runs h, an http kind handler, on payload.
func run(t *testing.T, h engine.Handler, payload string) (httpResult, error) {
	t.Helper()
	raw, err := h(t.Context(), job(HTTP, payload))
	var res httpResult
	if err == nil {
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Fatalf("result %s: %v", raw, err)
		}
	}
	return res, err
}

func payload(t *testing.T, v map[string]any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestHTTPSuccessSendsMethodHeadersAndBody(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %s %s", r.Method, r.Header.Get("X-Token"), r.Header.Get("Content-Type"), body)
	}))
	t.Cleanup(srv.Close)

	res, err := call(t, local, payload(t, map[string]any{"url": srv.URL + "/hook", "method": "post",
		"headers": map[string]string{"X-Token": "s3cret"}, "body": map[string]int{"n": 1}}))
	if err != nil || res.StatusCode != 200 || res.Body != `POST s3cret application/json {"n":1}` {
		t.Errorf("json body: %+v, %v", res, err)
	}
	res, err = call(t, local, payload(t, map[string]any{"url": srv.URL, "method": "PUT",
		"headers": map[string]string{"Content-Type": "text/plain"}, "body": "plain text"}))
	if err != nil || res.Body != `PUT  text/plain plain text` {
		t.Errorf("string body: %+v, %v", res, err)
	}
	res, err = call(t, local, payload(t, map[string]any{"url": srv.URL}))
	if err != nil || res.Body != `GET   ` {
		t.Errorf("default GET: %+v, %v", res, err)
	}
}

func TestHTTPSendsExecutionIDAndAttempt(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%q %q", r.Header.Values("Latch-Execution-Id"), r.Header.Values("Latch-Attempt"))
	}))
	t.Cleanup(srv.Close)
	h, err := NewHTTPHandler(local, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The payload's own headers of these names are replaced: the target
	// can trust them.
	j := job(HTTP, payload(t, map[string]any{"url": srv.URL, "method": "POST",
		"headers": map[string]string{"latch-attempt": "9", "Latch-Execution-Id": "forged"}}))
	j.ID, j.Attempt = "0193a6e4-7c1e-7b3a-9f1e-2d9c3e8a4b10", 2
	raw, err := h(t.Context(), j)
	var res httpResult
	if err == nil {
		err = json.Unmarshal(raw, &res)
	}
	if want := `["0193a6e4-7c1e-7b3a-9f1e-2d9c3e8a4b10"] ["2"]`; err != nil || res.Body != want {
		t.Errorf("headers seen by the target: %q, %v; want %s", res.Body, err, want)
	}
}

func TestHTTPBodyIsCut(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, strings.Repeat("x", MaxHTTPBody+1000))
	}))
	t.Cleanup(srv.Close)
	res, err := call(t, local, payload(t, map[string]any{"url": srv.URL}))
	if err != nil || res.StatusCode != 201 || len(res.Body) != MaxHTTPBody {
		t.Errorf("status %d, body %d bytes, %v; want 201, %d", res.StatusCode, len(res.Body), err, MaxHTTPBody)
	}
}

func TestHTTPStatusErrors(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code := 0
		fmt.Sscan(strings.TrimPrefix(r.URL.Path, "/"), &code)
		if code == 429 && r.URL.Query().Has("after") {
			w.Header().Set("Retry-After", "7")
		}
		w.WriteHeader(code)
		io.WriteString(w, "nope")
	}))
	t.Cleanup(srv.Close)
	cases := []struct {
		path      string
		permanent bool
		delay     time.Duration // -1: none given
	}{
		{"/500", false, -1},
		{"/503", false, -1},
		{"/429", false, -1},
		{"/429?after", false, 7 * time.Second},
		{"/404", true, -1},
		{"/400", true, -1},
		{"/304", true, -1},
	}
	for _, c := range cases {
		_, err := call(t, local, payload(t, map[string]any{"url": srv.URL + c.path}))
		if err == nil {
			t.Errorf("%s: no error", c.path)
			continue
		}
		if engine.IsPermanent(err) != c.permanent {
			t.Errorf("%s: permanent %v, want %v (%v)", c.path, engine.IsPermanent(err), c.permanent, err)
		}
		d, ok := engine.RetryAfterDelay(err)
		if (c.delay >= 0) != ok || ok && d != c.delay {
			t.Errorf("%s: retry delay %v %v, want %v", c.path, d, ok, c.delay)
		}
		if c.path != "/304" && !strings.Contains(err.Error(), "nope") {
			t.Errorf("%s: error %q lacks the body", c.path, err)
		}
	}
}

func TestHTTPTimeoutAndNetworkErrorsRetry(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	_, err := call(t, local, payload(t, map[string]any{"url": srv.URL, "timeout_seconds": 0.05}))
	if err == nil || engine.IsPermanent(err) {
		t.Errorf("timeout: %v, want a retryable error", err)
	}

	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	_, err = call(t, local, payload(t, map[string]any{"url": closed.URL}))
	if err == nil || engine.IsPermanent(err) {
		t.Errorf("connection refused: %v, want a retryable error", err)
	}
}

func TestHTTPCancelledCarriesCause(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	h, _ := NewHTTPHandler(local, nil)
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(engine.ErrShutdown)
	_, err := h(ctx, job(HTTP, payload(t, map[string]any{"url": srv.URL})))
	if !errors.Is(err, engine.ErrShutdown) {
		t.Errorf("err = %v, want the cause", err)
	}
}

func TestHTTPBadPayloadIsPermanent(t *testing.T) {
	t.Parallel()
	for _, p := range []string{
		`{}`, `{"url":"ftp://x/"}`, `{"url":"/relative"}`, `{"url":"http://%zz"}`,
		`{"url":"http://x/","method":"B AD"}`, `{"url":"http://x/","timeout_seconds":0}`,
		`{"url":"http://x/","headers":{"a":1}}`, `{"url":"http://x/","bogus":1}`, `"str"`,
	} {
		if _, err := call(t, nil, p); !engine.IsPermanent(err) {
			t.Errorf("payload %s: err %v, want permanent", p, err)
		}
	}
}

func TestHTTPAllowList(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hi")
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	p := payload(t, map[string]any{"url": srv.URL})
	for _, allow := range [][]string{{"127.0.0.1"}, {u.Host}, {"example.com", "127.0.0.1:" + u.Port()}, {"*", "127.0.0.1"}} {
		if _, err := call(t, allow, p); err != nil {
			t.Errorf("allow %v: %v", allow, err)
		}
	}
	for _, allow := range [][]string{{"example.com"}, {"127.0.0.1:1"}, {"*.example.com"}} {
		_, err := call(t, allow, p)
		if !engine.IsPermanent(err) || !errors.Is(err, errNotAllowed) {
			t.Errorf("allow %v: err %v, want permanent not allowed", allow, err)
		}
	}
}

// A Host header would send the request to another virtual host than the
// URL's, which is all the allow list checks: refused on a request to a
// listed host (so always, unless the list allows every public host).
func TestHTTPHostHeaderIsRefusedForListedHosts(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Host)
	}))
	t.Cleanup(srv.Close)
	for _, name := range []string{"Host", "host", "HOST"} {
		p := payload(t, map[string]any{"url": srv.URL, "headers": map[string]string{name: "internal.example"}})
		for _, allow := range [][]string{{"127.0.0.1"}, {"*.example.com", "127.0.0.1"}, {"*", "127.0.0.1"}} {
			res, err := call(t, allow, p)
			if !engine.IsPermanent(err) || !strings.Contains(err.Error(), strconv.Quote(name)) {
				t.Errorf("allow %v, header %s: %+v, %v; want a permanent error naming the header", allow, name, res, err)
			}
		}
		// To a host not listed, while every public host is allowed, the
		// header is sent (no public host is reachable from the test, so
		// this looks at the request built).
		for _, allow := range [][]string{nil, {"*"}, {"*", "other.example"}} {
			a, err := newAllowList(allow)
			if err != nil {
				t.Fatal(err)
			}
			c, err := parseHTTPPayload(json.RawMessage(p), a)
			if err != nil {
				t.Errorf("allow %v, header %s: %v; want the header taken", allow, name, err)
				continue
			}
			if req, err := c.request(t.Context()); err != nil || req.Host != "internal.example" {
				t.Errorf("allow %v, header %s: request %v; want Host internal.example", allow, name, err)
			}
		}
	}
}

func TestHTTPRedirectIsCheckedAgainstAllowList(t *testing.T) {
	t.Parallel()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "secret")
	}))
	t.Cleanup(other.Close)
	srv := httptest.NewServer(http.RedirectHandler(other.URL, http.StatusFound))
	t.Cleanup(srv.Close)
	allowed := strings.TrimPrefix(srv.URL, "http://")
	_, err := call(t, []string{allowed}, payload(t, map[string]any{"url": srv.URL}))
	if !engine.IsPermanent(err) || !errors.Is(err, errNotAllowed) {
		t.Errorf("redirect to a foreign host: %v, want permanent not allowed", err)
	}
	res, err := call(t, []string{"127.0.0.1"}, payload(t, map[string]any{"url": srv.URL}))
	if err != nil || res.Body != "secret" {
		t.Errorf("redirect within the allow list: %+v, %v", res, err)
	}
}

func TestAllowMatching(t *testing.T) {
	t.Parallel()
	a, err := newAllowList([]string{"api.example.com", "*.hooks.dev", "internal.local:8443", "[::1]:9000", "10.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]bool{
		"https://api.example.com/x":     true,
		"http://API.Example.COM:9999/":  true,
		"https://api.example.com./":     true,
		"https://example.com/":          false,
		"https://evil-api.example.com/": false,
		"https://api.example.com.evil/": false,
		"https://a.hooks.dev/":          true,
		"https://a.b.hooks.dev/":        true,
		"https://hooks.dev/":            false,
		"https://xhooks.dev/":           false,
		"https://internal.local:8443/":  true,
		"https://internal.local/":       false,
		"http://[::1]:9000/":            true,
		"http://[::1]:9001/":            false,
		"http://10.0.0.1/":              true,
		"http://user@api.example.com/":  true,
		"http://api.example.com@evil/":  false,
		"http://[::ffff:10.0.0.1]/":     true,
		"http://[0:0:0:0:0:0:0:1]:9000": true,
		"http://10.0.0.2/":              false,
	}
	for raw, want := range cases {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.allows(u); got != want {
			t.Errorf("%s: allowed %v, want %v", raw, got, want)
		}
	}
	for _, l := range [][]string{nil, {"*"}, {"*", "10.0.0.1"}} {
		if a, _ := newAllowList(l); !a.allows(&url.URL{Scheme: "http", Host: "anything"}) {
			t.Errorf("%q does not allow every host", l)
		}
	}
}

func TestParseAllow(t *testing.T) {
	t.Parallel()
	got, err := ParseAllow(" API.example.com, *.hooks.dev:443,, [::1]:80 ,")
	want := []string{"api.example.com", "*.hooks.dev:443", "[::1]:80"}
	if err != nil || strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("ParseAllow = %q, %v; want %q", got, err, want)
	}
	if got, err := ParseAllow(""); err != nil || len(got) != 0 {
		t.Errorf("ParseAllow(\"\") = %q, %v", got, err)
	}
	for _, bad := range []string{"a.*.com", "*", "host:0", "host:x", "*.", "foo*", "a b", "h:99999", "*.10.0.0.1", "a:b:c", "ex ample.com", "[zz]"} {
		if bad == "*" {
			continue // "*" is valid: every host
		}
		if _, err := ParseAllow(bad); err == nil {
			t.Errorf("ParseAllow(%q) accepted", bad)
		}
	}
}

func TestRegisterReadsEnvWhenAllowIsNil(t *testing.T) {
	t.Setenv(AllowEnv, "only.example.com")
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	e := newWorkerEnv(t, Options{})
	ex := e.submit(HTTP, payload(t, map[string]any{"url": srv.URL}))
	got := e.wait(ex.ID)
	if got.Status != store.StatusFailed || !strings.Contains(got.Error, "not allowed") || got.Attempt != 1 {
		t.Errorf("%s attempt %d: %q; want failed at once, host not allowed", got.Status, got.Attempt, got.Error)
	}

	t.Setenv(AllowEnv, "bad:pattern:")
	w := engine.NewWorker(engine.WorkerConfig{Store: e.st})
	if err := Register(w, Options{}); err == nil {
		t.Error("Register accepted a malformed LATCH_HTTP_ALLOW")
	}
}

// workerEnv runs the built-in kinds on a real worker and store.
type workerEnv struct {
	t  *testing.T
	st *sqlite.Store
}

func newWorkerEnv(t *testing.T, opts Options) *workerEnv {
	t.Helper()
	ctx := t.Context()
	st, err := sqlite.Open(ctx, testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.CreateTenant(ctx, &store.CreateTenantParams{Name: "t"}); err != nil {
		t.Fatal(err)
	}
	w := engine.NewWorker(engine.WorkerConfig{Store: st, PollInterval: 10 * time.Millisecond,
		Logger: discardLogger()})
	if err := Register(w, opts); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		w.Stop(ctx)
	})
	return &workerEnv{t: t, st: st}
}

func (e *workerEnv) submit(kind, payload string) *store.Execution {
	e.t.Helper()
	canon, err := store.CanonicalJSON([]byte(payload))
	if err != nil {
		e.t.Fatal(err)
	}
	res, err := e.st.Admit(e.t.Context(), &store.AdmitParams{Tenant: "t",
		Items: []store.Submission{{Kind: kind, Payload: canon}}})
	if err != nil || res.Items[0].Err != nil {
		e.t.Fatalf("admit: %v %v", err, res.Items[0].Err)
	}
	return res.Items[0].Execution
}

// wait waits for the execution to be terminal.
func (e *workerEnv) wait(id string) *store.Execution {
	e.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		changed := e.st.Changed()
		ex, err := e.st.Get(e.t.Context(), &store.GetParams{ID: id})
		if err != nil {
			e.t.Fatal(err)
		}
		if ex.Status.Terminal() {
			return ex
		}
		select {
		case <-changed:
		case <-deadline:
			e.t.Fatalf("execution %s still %s", id, ex.Status)
		}
	}
}

func TestBuiltinsOnAWorker(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "pong")
	}))
	t.Cleanup(srv.Close)
	e := newWorkerEnv(t, Options{HTTPAllow: []string{"127.0.0.1"}})

	echo := e.submit(Echo, `{"hello":"world"}`)
	sleep := e.submit(Sleep, `{"seconds":0.01}`)
	hit := e.submit(HTTP, payload(t, map[string]any{"url": srv.URL}))
	for id, want := range map[string]string{
		echo.ID:  `{"hello":"world"}`,
		sleep.ID: `{"slept_seconds":0.01}`,
		hit.ID:   `{"status_code":200,"body":"pong"}`,
	} {
		got := e.wait(id)
		if got.Status != store.StatusSucceeded || string(got.Result) != want {
			t.Errorf("%s: %s %s %q, want succeeded %s", id, got.Status, got.Result, got.Error, want)
		}
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
