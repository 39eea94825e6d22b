package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/sqlite"
)

// testEnv is one API server over its own SQLite file, reached over real
// HTTP.
type testEnv struct {
	t     *testing.T
	store *sqlite.Store
	api   *Server
	srv   *httptest.Server
	admin string // the admin key
	logs  *logBuffer
}

func newEnv(t *testing.T, opts ...func(*Config)) *testEnv {
	t.Helper()
	st, err := sqlite.Open(context.Background(), testdb.SQLite(t))
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	e := &testEnv{t: t, store: st, admin: NewKey(), logs: &logBuffer{}}
	cfg := Config{
		Store:        st,
		AdminKeyHash: HashKey(e.admin),
		Logger:       slog.New(slog.NewTextHandler(e.logs, nil)),
		PollInterval: 50 * time.Millisecond,
	}
	for _, o := range opts {
		o(&cfg)
	}
	e.api = New(cfg)
	e.srv = httptest.NewServer(e.api)
	t.Cleanup(e.srv.Close)
	return e
}

// tenant creates a tenant with default settings and returns its key.
func (e *testEnv) tenant(name string, settings ...string) string {
	e.t.Helper()
	body := `{"name":"` + name + `"` + strings.Join(settings, "") + `}`
	r := e.do("POST", "/api/tenants", e.admin, body)
	r.want(http.StatusCreated)
	var out createdTenant
	r.decode(&out)
	return out.APIKey
}

// resp is an answer read in full.
type resp struct {
	t      *testing.T
	status int
	header http.Header
	body   []byte
}

// do sends a request. body is sent as is when it is a string or []byte,
// else as its JSON; a non-nil body gets Content-Type application/json
// unless headers set one. headers are name, value pairs.
func (e *testEnv) do(method, path, key string, body any, headers ...string) *resp {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return &resp{t: e.t, status: res.StatusCode, header: res.Header, body: data}
}

func (r *resp) want(status int) *resp {
	r.t.Helper()
	if r.status != status {
		r.t.Fatalf("status %d, want %d; body: %s", r.status, status, r.body)
	}
	return r
}

func (r *resp) decode(v any) {
	r.t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		r.t.Fatalf("decode %s: %v", r.body, err)
	}
}

func (r *resp) exec() *execution {
	r.t.Helper()
	var x execution
	r.decode(&x)
	return &x
}

// problem checks the answer is a problem document with status and code and
// returns it.
func (r *resp) problem(status int, code Code) *Problem {
	r.t.Helper()
	r.want(status)
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		r.t.Fatalf("Content-Type %q, want application/problem+json; body %s", ct, r.body)
	}
	var p Problem
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		r.t.Fatalf("problem %s: %v", r.body, err)
	}
	if p.Code != code || p.Status != status || p.Title == "" || p.Type == "" {
		r.t.Fatalf("problem %s, want status %d code %s", r.body, status, code)
	}
	return &p
}

// detailHas checks the problem's detail mentions s.
func detailHas(t *testing.T, p *Problem, s string) {
	t.Helper()
	if !strings.Contains(p.Detail, s) {
		t.Fatalf("detail %q does not mention %q", p.Detail, s)
	}
}

// count lists every execution the admin can see and returns how many.
func (e *testEnv) count() int {
	e.t.Helper()
	res, err := e.store.List(context.Background(), &store.ListParams{Limit: 500})
	if err != nil {
		e.t.Fatal(err)
	}
	return len(res.Items)
}

func (e *testEnv) inflight(name string) int {
	e.t.Helper()
	tn, err := e.store.GetTenant(context.Background(), &store.GetTenantParams{Name: name})
	if err != nil {
		e.t.Fatal(err)
	}
	return tn.Inflight
}

// submit submits body for key and returns the execution, checking status.
func (e *testEnv) submit(key string, body any, status int, headers ...string) *execution {
	e.t.Helper()
	return e.do("POST", "/api/executions", key, body, headers...).want(status).exec()
}

// claimOne claims one lease for key, failing the test if there is none.
func (e *testEnv) claimOne(key string, extra ...string) lease {
	e.t.Helper()
	body := `{"worker_id":"w1"` + strings.Join(extra, "") + `}`
	var out claimResponse
	e.do("POST", "/api/workers/claim", key, body).want(http.StatusOK).decode(&out)
	if len(out.Leases) != 1 {
		e.t.Fatalf("claimed %d leases, want 1", len(out.Leases))
	}
	return out.Leases[0]
}

// logBuffer is a log sink shared by handler goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
