package latch_test

import (
	"context"
	stdjson "encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/latch-run/latch"
	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/kinds"
	"github.com/latch-run/latch/store/sqlite"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func open(t *testing.T) *latch.Client {
	t.Helper()
	c, err := latch.Open(t.Context(), "sqlite:"+testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.CreateTenant(t.Context(), "acme", latch.TenantOptions{}); err != nil {
		t.Fatal(err)
	}
	return c
}

func startWorker(t *testing.T, c *latch.Client, setup func(w *latch.Worker)) *latch.Worker {
	t.Helper()
	return runWorker(t, newWorker(t, c, latch.WorkerOptions{Logger: slog.New(slog.DiscardHandler), PollInterval: 10 * time.Millisecond}), setup)
}

// runWorker gives w its handlers (setup), starts it, and stops it when the
// test ends, an error of Stop failing the test: the life of each test's
// worker, embedded or remote.
func runWorker(t *testing.T, w *latch.Worker, setup func(w *latch.Worker)) *latch.Worker {
	t.Helper()
	setup(w)
	if err := w.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := w.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	return w
}

func wait(t *testing.T, c *latch.Client, id string) *latch.Execution {
	t.Helper()
	// Generous: a loaded machine runs a flow of megabytes under -race
	// for seconds; the bound only says when to give up.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	e, err := c.Wait(ctx, "acme", id)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestOpenStoreURLs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, u := range []string{
		"sqlite:" + filepath.Join(dir, "a.db"),
		"sqlite://" + filepath.Join(dir, "b.db"), // sqlite:///abs/path
		filepath.Join(dir, "c.db"),
		"SQLITE:" + filepath.Join(dir, "d"),
	} {
		c, err := latch.Open(t.Context(), u)
		if err != nil {
			t.Errorf("Open(%q): %v", u, err)
			continue
		}
		if err := c.Ping(t.Context()); err != nil {
			t.Errorf("Open(%q): ping: %v", u, err)
		}
		c.Close()
	}
	// Network backends are chosen by scheme; with nothing listening at the
	// address the open fails, naming the URL without its password.
	for _, u := range []string{"postgres://u:secret@127.0.0.1:1/latch?connect_timeout=2", "redis://:secret@127.0.0.1:1/0",
		"redis-cluster://:secret@127.0.0.1:1,127.0.0.1:2?dial_timeout=2"} {
		_, err := latch.Open(t.Context(), u)
		if err == nil || strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "127.0.0.1:1") {
			t.Errorf("Open(%q) = %v, want a connection error naming the address, not the password", u, err)
		}
	}
	for _, u := range []string{"", "sqlite:", "sqlite://", "mysql://x", "latch.txt", "http://x.db"} {
		if _, err := latch.Open(t.Context(), u); !errors.Is(err, latch.ErrInvalid) {
			t.Errorf("Open(%q) = %v, want ErrInvalid", u, err)
		}
	}
}

func TestSubmitValidation(t *testing.T) {
	t.Parallel()
	c := open(t)
	ctx := t.Context()
	long := string(make([]byte, 300))
	for name, req := range map[string]latch.SubmitRequest{
		"no kind":          {},
		"long kind":        {Kind: long[:129]},
		"long dedup key":   {Kind: "k", DedupKey: long[:257]},
		"negative attempt": {Kind: "k", MaxAttempts: -1},
		"negative timeout": {Kind: "k", Timeout: -time.Second},
		"run_at and delay": {Kind: "k", RunAt: time.Now(), Delay: time.Second},
		"limit, no key":    {Kind: "k", ConcurrencyLimit: 2},
		"bad payload":      {Kind: "k", Payload: func() {}},
		// The rules the HTTP API keeps too (store.CheckSubmission).
		"bad queue":            {Kind: "k", Queue: "bad queue"},
		"long queue":           {Kind: "k", Queue: strings.Repeat("q", 129)},
		"priority past int32":  {Kind: "k", Priority: 1 << 40},
		"payload over 1 MiB":   {Kind: "k", Payload: stdjson.RawMessage(`"` + strings.Repeat("x", 1<<20) + `"`)},
		"invisible in kind":    {Kind: "k\u202e"},
		"control in dedup key": {Kind: "k", DedupKey: "a\x00b"},
		"too many attempts":    {Kind: "k", MaxAttempts: 1001},
		"timeout over 7 days":  {Kind: "k", Timeout: 8 * 24 * time.Hour},
		"run_at over 10 years": {Kind: "k", RunAt: time.Now().Add(11 * 365 * 24 * time.Hour)},
		"limit over bound":     {Kind: "k", ConcurrencyKey: "ck", ConcurrencyLimit: 1_000_000_001},
		"long rate key":        {Kind: "k", RateKey: strings.Repeat("r", 257)},
	} {
		if _, _, err := c.Submit(ctx, "acme", req); !errors.Is(err, latch.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if _, _, err := c.Submit(ctx, "Bad Tenant", latch.SubmitRequest{Kind: "k"}); !errors.Is(err, latch.ErrInvalid) {
		t.Errorf("bad tenant name: %v", err)
	}
	if _, _, err := c.Submit(ctx, "nobody", latch.SubmitRequest{Kind: "k"}); !errors.Is(err, latch.ErrNotFound) {
		t.Errorf("unknown tenant: %v", err)
	}
}

func TestSubmitFieldsAndDefaults(t *testing.T) {
	t.Parallel()
	c := open(t)
	e, dedup, err := c.Submit(t.Context(), "acme", latch.SubmitRequest{
		Kind: "k", Payload: map[string]int{"b": 2, "a": 1}, Queue: "q", Priority: 5,
		Delay: time.Hour, MaxAttempts: 7, Timeout: 1500 * time.Millisecond,
		ConcurrencyKey: "ck", RateKey: "rk",
	})
	if err != nil || dedup {
		t.Fatal(err, dedup)
	}
	if e.Status != latch.StatusScheduled || string(e.Payload) != `{"a":1,"b":2}` || e.Queue != "q" ||
		e.Priority != 5 || e.MaxAttempts != 7 || e.Timeout != 2*time.Second || e.ConcurrencyKey != "ck" ||
		e.ConcurrencyLimit != 1 || e.RateKey != "rk" || e.Tenant != "acme" {
		t.Errorf("execution = %+v", e)
	}
	d, _, err := c.Submit(t.Context(), "acme", latch.SubmitRequest{Kind: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != latch.StatusQueued || string(d.Payload) != `{}` || d.Queue != "default" ||
		d.MaxAttempts != 3 || d.Timeout != 300*time.Second {
		t.Errorf("defaults = %+v", d)
	}
}

func TestDedupQuotaAndTenants(t *testing.T) {
	t.Parallel()
	c := open(t)
	ctx := t.Context()
	one := 1
	ten, err := c.UpdateTenant(ctx, "acme", latch.TenantUpdate{MaxInflight: &one})
	if err != nil || ten.MaxInflight != 1 {
		t.Fatalf("update tenant: %+v %v", ten, err)
	}
	a, _, err := c.Submit(ctx, "acme", latch.SubmitRequest{Kind: "k", DedupKey: "x", Payload: map[string]int{"n": 1}})
	if err != nil {
		t.Fatal(err)
	}
	b, dedup, err := c.Submit(ctx, "acme", latch.SubmitRequest{Kind: "k", DedupKey: "x", Payload: rawJSON(`{"n": 1}`)})
	if err != nil || !dedup || b.ID != a.ID {
		t.Errorf("dedup: %v %v %v", b, dedup, err)
	}
	if _, _, err := c.Submit(ctx, "acme", latch.SubmitRequest{Kind: "k", DedupKey: "x", Payload: map[string]int{"n": 2}}); !errors.Is(err, latch.ErrDedupKeyReused) {
		t.Errorf("reused key: %v", err)
	}
	if _, _, err := c.Submit(ctx, "acme", latch.SubmitRequest{Kind: "k"}); !errors.Is(err, latch.ErrQuotaExceeded) {
		t.Errorf("over quota: %v", err)
	}
	if ten, _ := c.GetTenant(ctx, "acme"); ten.Inflight != 1 {
		t.Errorf("inflight %d, want 1", ten.Inflight)
	}

	many, err := c.SubmitMany(ctx, "acme", []latch.SubmitRequest{{Kind: "k", DedupKey: "x", Payload: map[string]int{"n": 1}}, {}})
	if err != nil || !many[0].Deduplicated || !errors.Is(many[1].Err, latch.ErrInvalid) {
		t.Errorf("SubmitMany = %+v, %v", many, err)
	}

	if _, err := c.CreateTenant(ctx, "acme", latch.TenantOptions{}); !errors.Is(err, latch.ErrTenantExists) {
		t.Errorf("create twice: %v", err)
	}
	if ten, err := c.EnsureTenant(ctx, "acme", latch.TenantOptions{}); err != nil || ten.MaxInflight != 1 {
		t.Errorf("ensure existing: %+v %v", ten, err)
	}
	if ten, err := c.EnsureTenant(ctx, "beta", latch.TenantOptions{MaxInflight: 5}); err != nil || ten.MaxInflight != 5 {
		t.Errorf("ensure new: %+v %v", ten, err)
	}
	// Tenants do not see each other's executions.
	if _, err := c.Get(ctx, "beta", a.ID); !errors.Is(err, latch.ErrNotFound) {
		t.Errorf("other tenant's get: %v", err)
	}
	if _, err := c.CreateTenant(ctx, "BAD", latch.TenantOptions{}); !errors.Is(err, latch.ErrInvalid) {
		t.Errorf("bad name: %v", err)
	}
	if _, err := c.CreateTenant(ctx, "gamma", latch.TenantOptions{MaxInflight: -1}); !errors.Is(err, latch.ErrInvalid) {
		t.Errorf("negative max inflight: %v", err)
	}
	tooLong := 20 * 365 * 24 * time.Hour
	if _, err := c.UpdateTenant(ctx, "acme", latch.TenantUpdate{Retention: &tooLong}); !errors.Is(err, latch.ErrInvalid) {
		t.Errorf("retention past the HTTP API's bound: %v", err)
	}
}

func TestCancelDeleteList(t *testing.T) {
	t.Parallel()
	c := open(t)
	ctx := t.Context()
	e, _, err := c.Submit(ctx, "acme", latch.SubmitRequest{Kind: "k", DedupKey: "d"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, "acme", e.ID, latch.DeleteOptions{}); !errors.Is(err, latch.ErrNotTerminal) {
		t.Errorf("delete queued: %v", err)
	}
	got, err := c.Cancel(ctx, "acme", e.ID)
	if err != nil || got.Status != latch.StatusCancelled {
		t.Fatalf("cancel: %+v %v", got, err)
	}
	f, _, _ := c.Submit(ctx, "acme", latch.SubmitRequest{Kind: "other"})
	page, err := c.List(ctx, "acme", latch.ListOptions{Status: latch.StatusCancelled})
	if err != nil || len(page.Items) != 1 || page.Items[0].ID != e.ID {
		t.Errorf("list cancelled: %+v %v", page, err)
	}
	page, err = c.List(ctx, "acme", latch.ListOptions{Limit: 1})
	if err != nil || len(page.Items) != 1 || page.Items[0].ID != f.ID || page.NextCursor == "" {
		t.Errorf("list page 1: %+v %v", page, err)
	}
	if page, err = c.List(ctx, "acme", latch.ListOptions{Limit: 1, Cursor: page.NextCursor}); err != nil ||
		len(page.Items) != 1 || page.Items[0].ID != e.ID {
		t.Errorf("list page 2: %+v %v", page, err)
	}
	if _, err := c.List(ctx, "acme", latch.ListOptions{Status: "bogus"}); !errors.Is(err, latch.ErrInvalid) {
		t.Errorf("bad status: %v", err)
	}
	for _, opts := range []latch.ListOptions{{Limit: -1}, {Limit: 501}, {Cursor: "not-a-cursor"}} {
		if _, err := c.List(ctx, "acme", opts); !errors.Is(err, latch.ErrInvalid) {
			t.Errorf("list %+v: %v, want ErrInvalid", opts, err)
		}
	}
	if err := c.Delete(ctx, "acme", e.ID, latch.DeleteOptions{}); err != nil {
		t.Errorf("delete cancelled: %v", err)
	}
	if err := c.Delete(ctx, "acme", f.ID, latch.DeleteOptions{Force: true}); err != nil {
		t.Errorf("force delete: %v", err)
	}
	if _, err := c.Get(ctx, "acme", f.ID); !errors.Is(err, latch.ErrNotFound) {
		t.Errorf("get deleted: %v", err)
	}
	if ten, _ := c.GetTenant(ctx, "acme"); ten.Inflight != 0 {
		t.Errorf("inflight %d, want 0", ten.Inflight)
	}
	// The dedup key went with the execution.
	if _, dedup, err := c.Submit(ctx, "acme", latch.SubmitRequest{Kind: "k", DedupKey: "d"}); err != nil || dedup {
		t.Errorf("resubmit after delete: %v %v", dedup, err)
	}
}

func TestWorkerHandlesResultsAndErrors(t *testing.T) {
	t.Parallel()
	c := open(t)
	ctx := t.Context()
	startWorker(t, c, func(w *latch.Worker) {
		w.Handle("struct", func(ctx context.Context, job *latch.Job) (any, error) {
			return struct {
				Attempt int `json:"attempt"`
			}{job.Attempt}, nil
		})
		w.Handle("raw", func(ctx context.Context, job *latch.Job) (any, error) {
			return rawJSON(`[1, 2]`), nil
		})
		w.Handle("nil", func(ctx context.Context, job *latch.Job) (any, error) { return nil, nil })
		w.Handle("unmarshallable", func(ctx context.Context, job *latch.Job) (any, error) {
			return make(chan int), nil
		})
		w.Handle("permanent", func(ctx context.Context, job *latch.Job) (any, error) {
			return nil, latch.Permanent(errors.New("no"))
		})
	})
	type want struct {
		status latch.Status
		result string
	}
	cases := map[string]want{
		"struct":         {latch.StatusSucceeded, `{"attempt":1}`},
		"raw":            {latch.StatusSucceeded, `[1, 2]`},
		"nil":            {latch.StatusSucceeded, `null`},
		"unmarshallable": {latch.StatusFailed, ``},
		"permanent":      {latch.StatusFailed, ``},
	}
	if os.Getenv(remoteWorkerEnv) != "" {
		// The HTTP API stores a result in canonical JSON, and null as no
		// result.
		cases["raw"], cases["nil"] = want{latch.StatusSucceeded, `[1,2]`}, want{latch.StatusSucceeded, ``}
	}
	for kind, want := range cases {
		e, _, err := c.Submit(ctx, "acme", latch.SubmitRequest{Kind: kind})
		if err != nil {
			t.Fatal(err)
		}
		got := wait(t, c, e.ID)
		if got.Status != want.status || string(got.Result) != want.result || got.Attempt != 1 {
			t.Errorf("%s: %s %s attempt %d %q; want %s %s", kind, got.Status, got.Result, got.Attempt, got.Error,
				want.status, want.result)
		}
	}
	var r struct{ Attempt int }
	e, _, _ := c.Submit(ctx, "acme", latch.SubmitRequest{Kind: "struct"})
	if err := wait(t, c, e.ID).DecodeResult(&r); err != nil || r.Attempt != 1 {
		t.Errorf("DecodeResult: %+v %v", r, err)
	}
}

func TestWorkerCancelReachesHandler(t *testing.T) {
	t.Parallel()
	c := open(t)
	ctx := t.Context()
	started := make(chan struct{}, 1)
	causes := make(chan error, 1)
	w := newWorker(t, c, latch.WorkerOptions{Logger: slog.New(slog.DiscardHandler),
		LeaseDuration: 3 * time.Second}) // heartbeats every second: the cancel reaches the handler by one
	w.Handle("long", func(ctx context.Context, job *latch.Job) (any, error) {
		started <- struct{}{}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	e, _, _ := c.Submit(ctx, "acme", latch.SubmitRequest{Kind: "long"})
	<-started
	if _, err := c.Cancel(ctx, "acme", e.ID); err != nil {
		t.Fatal(err)
	}
	if cause := <-causes; !errors.Is(cause, latch.ErrCancelled) {
		t.Errorf("cause %v", cause)
	}
	if got := wait(t, c, e.ID); got.Status != latch.StatusCancelled {
		t.Errorf("status %s", got.Status)
	}
}

func TestWorkerBuiltins(t *testing.T) {
	t.Parallel()
	c := open(t)
	startWorker(t, c, func(w *latch.Worker) {
		if err := w.HandleBuiltins(kinds.Options{HTTPAllow: []string{}}); err != nil {
			t.Fatal(err)
		}
	})
	e, _, err := c.Submit(t.Context(), "acme", latch.SubmitRequest{Kind: kinds.Echo, Payload: map[string]string{"x": "y"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := wait(t, c, e.ID); got.Status != latch.StatusSucceeded || string(got.Result) != `{"x":"y"}` {
		t.Errorf("echo: %s %s", got.Status, got.Result)
	}
}

func TestWorkerWithoutHandlersFailsToStart(t *testing.T) {
	t.Parallel()
	c := open(t)
	w := c.NewWorker(latch.WorkerOptions{Logger: slog.New(slog.DiscardHandler)})
	if err := w.Start(t.Context()); err == nil {
		t.Error("started without handlers")
		w.Stop(t.Context())
	}
}

func TestWaitHonoursContext(t *testing.T) {
	t.Parallel()
	c := open(t)
	e, _, _ := c.Submit(t.Context(), "acme", latch.SubmitRequest{Kind: "nobody-runs-this"})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.Wait(ctx, "acme", e.ID); !errors.Is(err, context.Canceled) {
		t.Errorf("wait: %v", err)
	}
}

func TestNewClientDoesNotOwnStore(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(t.Context(), testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := latch.NewClient(st)
	if c.Store() != st {
		t.Error("Store() is not the given store")
	}
	c.Close()
	if err := st.Ping(t.Context()); err != nil {
		t.Errorf("store closed by a client that does not own it: %v", err)
	}
}

type rawJSON = stdjson.RawMessage
