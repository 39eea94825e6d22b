package engine

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/sqlite"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// waitLimit bounds every wait of these tests; nothing should come near it
// but a flow of megabytes under -race on a loaded machine.
const waitLimit = 30 * time.Second

// fakeClock is the clock given to workers and the store.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *fakeClock {
	return &fakeClock{now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// env is one test's own store (a file in t.TempDir), tenant and clock.
type env struct {
	t      *testing.T
	ctx    context.Context
	st     *sqlite.Store
	clock  *fakeClock
	tenant string
	log    *slog.Logger
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := t.Context()
	st, err := sqlite.Open(ctx, testdb.SQLite(t))
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	e := &env{t: t, ctx: ctx, st: st, clock: newClock(), tenant: "acme",
		log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if testing.Verbose() {
		e.log = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if _, err := st.CreateTenant(ctx, &store.CreateTenantParams{Name: e.tenant, Now: e.clock.Now()}); err != nil {
		t.Fatalf("create tenant: %v", err)
	}
	return e
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// config returns a worker configuration on this env's store and clock, with
// quick heartbeats and polls.
func (e *env) config() WorkerConfig {
	return WorkerConfig{
		Store:             e.st,
		WorkerID:          "w1",
		LeaseDuration:     time.Minute,
		HeartbeatInterval: 10 * time.Millisecond,
		PollInterval:      10 * time.Millisecond,
		Logger:            e.log,
		Now:               e.clock.Now,
	}
}

// start starts w and stops it (hard) when the test ends.
func (e *env) start(w *Worker) {
	e.t.Helper()
	if err := w.Start(e.ctx); err != nil {
		e.t.Fatalf("start worker: %v", err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if err := w.Stop(ctx); err != nil {
			e.t.Errorf("stop worker: %v", err)
		}
	})
}

func (e *env) submit(kind string, payload string, opts ...func(*store.Submission)) *store.Execution {
	e.t.Helper()
	sub := store.Submission{Kind: kind, Payload: json.RawMessage(payload)}
	for _, o := range opts {
		o(&sub)
	}
	res, err := e.st.Admit(e.ctx, &store.AdmitParams{Tenant: e.tenant, Items: []store.Submission{sub}, Now: e.clock.Now()})
	if err != nil {
		e.t.Fatalf("admit: %v", err)
	}
	if err := res.Items[0].Err; err != nil {
		e.t.Fatalf("admit item: %v", err)
	}
	return res.Items[0].Execution
}

func maxAttempts(n int) func(*store.Submission) {
	return func(s *store.Submission) { s.MaxAttempts = n }
}

func timeoutSeconds(n int) func(*store.Submission) {
	return func(s *store.Submission) { s.TimeoutSeconds = n }
}

func (e *env) get(id string) *store.Execution {
	e.t.Helper()
	ex, err := e.st.Get(e.ctx, &store.GetParams{ID: id})
	if err != nil {
		e.t.Fatalf("get %s: %v", id, err)
	}
	return ex
}

// waitFor waits, woken by the store's notifier, until the execution
// satisfies ok, and returns it.
func (e *env) waitFor(id string, what string, ok func(*store.Execution) bool) *store.Execution {
	e.t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		changed := e.st.Changed()
		ex := e.get(id)
		if ok(ex) {
			return ex
		}
		select {
		case <-changed:
		case <-deadline.C:
			e.t.Fatalf("execution %s: waited %v for %s; it is %s, attempt %d, error %q",
				id, waitLimit, what, ex.Status, ex.Attempt, ex.Error)
		}
	}
}

func (e *env) waitStatus(id string, want store.Status) *store.Execution {
	e.t.Helper()
	return e.waitFor(id, string(want), func(ex *store.Execution) bool { return ex.Status == want })
}

// checkInflight checks the tenant's quota count (I3).
func (e *env) checkInflight(want int) {
	e.t.Helper()
	ten, err := e.st.GetTenant(e.ctx, &store.GetTenantParams{Name: e.tenant})
	if err != nil {
		e.t.Fatalf("get tenant: %v", err)
	}
	if ten.Inflight != want {
		e.t.Errorf("tenant inflight = %d, want %d", ten.Inflight, want)
	}
}

// recv waits for a value on ch.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLimit):
		t.Fatalf("waited %v for %s", waitLimit, what)
		panic("unreachable")
	}
}

// recordingStore records the leases a worker claims and the settling
// writes it makes, by lease token.
type recordingStore struct {
	*sqlite.Store
	mu     sync.Mutex
	tokens map[string][]string // execution id -> lease tokens, in claim order
	maxes  []int               // ClaimParams.Max of every claim
	writes map[string][]string // token -> operations
}

func newRecordingStore(st *sqlite.Store) *recordingStore {
	return &recordingStore{Store: st, tokens: make(map[string][]string), writes: make(map[string][]string)}
}

func (r *recordingStore) record(token, op string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes[token] = append(r.writes[token], op)
}

func (r *recordingStore) writesFor(token string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.writes[token]...)
}

func (r *recordingStore) tokensFor(id string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.tokens[id]...)
}

func (r *recordingStore) Claim(ctx context.Context, p *store.ClaimParams) (*store.ClaimResult, error) {
	r.mu.Lock()
	r.maxes = append(r.maxes, p.Max)
	r.mu.Unlock()
	res, err := r.Store.Claim(ctx, p)
	if err == nil {
		r.mu.Lock()
		for _, l := range res.Leases {
			r.tokens[l.ExecutionID] = append(r.tokens[l.ExecutionID], l.Token)
		}
		r.mu.Unlock()
	}
	return res, err
}

func (r *recordingStore) Complete(ctx context.Context, p *store.CompleteParams) (*store.Execution, error) {
	r.record(p.Token, "complete")
	return r.Store.Complete(ctx, p)
}

func (r *recordingStore) Fail(ctx context.Context, p *store.FailParams) (*store.Execution, error) {
	r.record(p.Token, "fail")
	return r.Store.Fail(ctx, p)
}

func (r *recordingStore) Release(ctx context.Context, p *store.ReleaseParams) (*store.Execution, error) {
	r.record(p.Token, "release")
	return r.Store.Release(ctx, p)
}

// pollingStore hides the store's Notifier, so workers must poll.
type pollingStore struct{ store.Store }
