package storemetrics_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/latch-run/latch/internal/storemetrics"
	"github.com/latch-run/latch/internal/storewrap"
	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/sqlite"
)

// fakeStore answers the calls these tests make; the others are the nil
// interface's.
type fakeStore struct {
	store.Store

	mu         sync.Mutex
	stats      []*store.QueueStats
	keys       []*store.ConcurrencyKeyUse
	err        error
	block      bool // QueueStats waits for its context's end
	statsReads int
	leases     []store.Lease // what Claim answers
}

func (f *fakeStore) QueueStats(ctx context.Context, _ *store.QueueStatsParams) ([]*store.QueueStats, error) {
	f.mu.Lock()
	f.statsReads++
	block, stats, err := f.block, f.stats, f.err
	f.mu.Unlock()
	if block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return stats, err
}

func (f *fakeStore) ConcurrencyKeys(context.Context, *store.ConcurrencyKeysParams) ([]*store.ConcurrencyKeyUse, error) {
	return f.keys, nil
}

func (f *fakeStore) Fail(_ context.Context, p *store.FailParams) (*store.Execution, error) {
	if p.ExecutionID == "gone" {
		return nil, fmt.Errorf("fail: %w", store.ErrLeaseLost)
	}
	status := store.StatusFailed
	if p.Retry {
		status = store.StatusScheduled
	}
	return &store.Execution{Kind: "mail", Status: status}, nil
}

func (f *fakeStore) Suspend(_ context.Context, p *store.SuspendParams) (*store.Execution, error) {
	if p.Signal == "now" { // a buffered signal: queued again at once, no suspension
		return &store.Execution{Kind: "flow", Status: store.StatusQueued}, nil
	}
	return &store.Execution{Kind: "flow", Status: store.StatusSuspended}, nil
}

func (f *fakeStore) Signal(_ context.Context, p *store.SignalParams) (*store.SignalResult, error) {
	if p.Name == "full" {
		return nil, fmt.Errorf("execution x keeps 1000 signals: %w", store.ErrSignalBufferFull)
	}
	return &store.SignalResult{Delivered: p.Name == "go"}, nil
}

func (f *fakeStore) Complete(_ context.Context, p *store.CompleteParams) (*store.Execution, error) {
	created := time.Date(2030, 1, 2, 3, 4, 0, 0, time.UTC)
	finished := created.Add(90 * time.Second)
	switch p.ExecutionID {
	case "big":
		return nil, fmt.Errorf("complete: %w", store.ErrStorageExceeded)
	case "cancelled":
		return &store.Execution{Kind: "mail", Status: store.StatusCancelled, Attempt: 1,
			CreatedAt: created, FinishedAt: &finished}, nil
	}
	return &store.Execution{Kind: "mail", Status: store.StatusSucceeded, Attempt: 3,
		CreatedAt: created, FinishedAt: &finished}, nil
}

func (f *fakeStore) Claim(_ context.Context, p *store.ClaimParams) (*store.ClaimResult, error) {
	if p.WorkerID == "down" {
		return nil, fmt.Errorf("claim: %w", store.ErrUnavailable)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return &store.ClaimResult{Deferred: 3, Leases: f.leases}, nil
}

func (f *fakeStore) Ping(context.Context) error { return fmt.Errorf("ping: %w", store.ErrUnavailable) }

// The counters count what the calls through the store did.
func TestMetricsCountCalls(t *testing.T) {
	m := storemetrics.New()
	st := storewrap.Wrap(&fakeStore{}, m.Observe)
	ctx := t.Context()
	for _, p := range []*store.FailParams{{Retry: true}, {Retry: true}, {Retry: false}, {ExecutionID: "gone", Retry: true}} {
		_, _ = st.Fail(ctx, p)
	}
	_, _ = st.Suspend(ctx, &store.SuspendParams{Signal: "later"})
	_, _ = st.Suspend(ctx, &store.SuspendParams{Signal: "now"})
	_, _ = st.Signal(ctx, &store.SignalParams{Name: "go"})
	_, _ = st.Signal(ctx, &store.SignalParams{Name: "other"})
	_, _ = st.Signal(ctx, &store.SignalParams{Name: "other"})
	_, _ = st.Signal(ctx, &store.SignalParams{Name: "full"}) // refused: an answer, not an error, and no signal
	_, _ = st.Claim(ctx, &store.ClaimParams{})
	_ = st.Ping(ctx)

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m.Collectors()...)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"latch_rate_limit_deferrals_total", nil, 3},
		{"latch_retries_total", map[string]string{"kind": "mail"}, 2},
		{"latch_signals_total", map[string]string{"outcome": "buffered"}, 2},
		{"latch_signals_total", map[string]string{"outcome": "delivered"}, 1},
		{"latch_suspends_total", map[string]string{"kind": "flow"}, 1},
		// Latency by operation and result: a refusal (lease lost) is an
		// answer; an unavailable store is an error.
		{"latch_store_operation_duration_seconds", map[string]string{"operation": "Fail", "result": "ok"}, 4},
		{"latch_store_operation_duration_seconds", map[string]string{"operation": "Suspend", "result": "ok"}, 2},
		{"latch_store_operation_duration_seconds", map[string]string{"operation": "Signal", "result": "ok"}, 4},
		{"latch_store_operation_duration_seconds", map[string]string{"operation": "Claim", "result": "ok"}, 1},
		{"latch_store_operation_duration_seconds", map[string]string{"operation": "Ping", "result": "error"}, 1},
		{"latch_store_operation_duration_seconds", map[string]string{"operation": "Ping", "result": "ok"}, -1},
	} {
		if got := value(t, reg, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %g, want %g (-1: absent)", c.name, c.labels, got, c.want)
		}
	}
}

// Executions a worker ends are observed once each, by kind and status:
// their attempts and their time from submit to finish; a refusal (the
// storage budget) is an answer, and observes nothing.
func TestMetricsObserveEnds(t *testing.T) {
	m := storemetrics.New()
	st := storewrap.Wrap(&fakeStore{}, m.Observe)
	ctx := t.Context()
	for _, id := range []string{"a", "b", "cancelled", "big"} {
		_, _ = st.Complete(ctx, &store.CompleteParams{ExecutionID: id})
	}
	_, _ = st.Fail(ctx, &store.FailParams{Retry: false})
	_, _ = st.Fail(ctx, &store.FailParams{Retry: true}) // queued again: not an end

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m.Collectors()...)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"latch_execution_attempts", map[string]string{"kind": "mail", "status": "succeeded"}, 2},
		{"latch_execution_attempts", map[string]string{"kind": "mail", "status": "cancelled"}, 1},
		{"latch_execution_attempts", map[string]string{"kind": "mail", "status": "failed"}, 1},
		{"latch_execution_duration_seconds", map[string]string{"kind": "mail", "status": "succeeded"}, 2},
		{"latch_execution_duration_seconds", map[string]string{"kind": "mail", "status": "failed"}, -1}, // no FinishedAt
		{"latch_store_operation_duration_seconds", map[string]string{"operation": "Complete", "result": "ok"}, 4},
	} {
		if got := value(t, reg, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %g, want %g (-1: absent)", c.name, c.labels, got, c.want)
		}
	}
	if got := sum(t, reg, "latch_execution_attempts", map[string]string{"kind": "mail", "status": "succeeded"}); got != 6 {
		t.Errorf("attempts of the two succeeded executions sum to %g, want 6", got)
	}
	if got := sum(t, reg, "latch_execution_duration_seconds", map[string]string{"kind": "mail", "status": "succeeded"}); got != 180 {
		t.Errorf("submit to finish of the two succeeded executions sums to %g s, want 180", got)
	}
}

// Each lease a claim hands out is observed once in latch_claim_wait_seconds,
// by its queue, with the time from its ReadyAt to the claim's Now (the
// clock the store claimed by); the wall clock when Now is zero.
func TestMetricsObserveClaimWait(t *testing.T) {
	m := storemetrics.New()
	f := &fakeStore{}
	st := storewrap.Wrap(f, m.Observe)
	ctx := t.Context()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	f.leases = []store.Lease{
		{ExecutionID: "a", Queue: "mail", ReadyAt: now.Add(-90 * time.Second)},
		{ExecutionID: "b", Queue: "mail", ReadyAt: now.Add(-2 * time.Hour)},
		{ExecutionID: "c", Queue: "sms", ReadyAt: now.Add(5 * time.Second)}, // a clock ahead of the claim's: 0
		{ExecutionID: "d", Queue: "none"},                                   // no ReadyAt: not observed
	}
	_, _ = st.Claim(ctx, &store.ClaimParams{Now: now, Max: 4})
	_, _ = st.Claim(ctx, &store.ClaimParams{WorkerID: "down", Now: now}) // failed: nothing handed out

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m.Collectors()...)
	for _, c := range []struct {
		queue      string
		count, sum float64
	}{{"mail", 2, 90 + 7200}, {"sms", 1, 0}, {"none", -1, -1}} {
		labels := map[string]string{"queue": c.queue}
		if got := value(t, reg, "latch_claim_wait_seconds", labels); got != c.count {
			t.Errorf("latch_claim_wait_seconds_count%v = %g, want %g (-1: absent)", labels, got, c.count)
		}
		if got := sum(t, reg, "latch_claim_wait_seconds", labels); got != c.sum {
			t.Errorf("latch_claim_wait_seconds_sum%v = %g, want %g", labels, got, c.sum)
		}
	}
	// The buckets place the waits: 90 s is above 60 and at most 300, two
	// hours above 3600 and at most 4 h.
	h := series(t, reg, "latch_claim_wait_seconds", map[string]string{"queue": "mail"}).GetHistogram()
	for _, b := range h.GetBucket() {
		want := uint64(0)
		if b.GetUpperBound() >= 300 {
			want = 1
		}
		if b.GetUpperBound() >= 4*3600 {
			want = 2
		}
		if b.GetCumulativeCount() != want {
			t.Errorf("mail bucket le=%g holds %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}

	// No Now: the store claims by the wall clock, and so does the wait.
	f.mu.Lock()
	f.leases = []store.Lease{{ExecutionID: "e", Queue: "wall", ReadyAt: time.Now().Add(-10 * time.Second)}}
	f.mu.Unlock()
	_, _ = st.Claim(ctx, &store.ClaimParams{})
	if got := sum(t, reg, "latch_claim_wait_seconds", map[string]string{"queue": "wall"}); got < 10 || got > 70 {
		t.Errorf("a wall-clock claim's wait of 10 s observed as %g s", got)
	}
}

// sum reads a histogram's sample sum; -1 when absent.
func sum(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	if m := series(t, g, name, labels); m != nil {
		return m.GetHistogram().GetSampleSum()
	}
	return -1
}

// value reads a series from g: a counter's or gauge's value, a
// histogram's count; -1 when absent.
func value(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	m := series(t, g, name, labels)
	switch {
	case m == nil:
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return -1
}

// series finds the series of name with exactly labels in g; nil when absent.
func series(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue metrics
				}
			}
			return m
		}
	}
	return nil
}

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// The queue gauges sum every tenant's figures per queue; the store is read
// at most once per CacheFor however many scrape; a failed read reports
// latch_store_up 0, is logged once, and never fails the scrape.
func TestQueues(t *testing.T) {
	clk := &clock{now: time.Date(2030, 1, 2, 3, 4, 0, 0, time.UTC)}
	at := func(d time.Duration) *time.Time { t := clk.now.Add(d); return &t }
	f := &fakeStore{
		stats: []*store.QueueStats{
			{Tenant: "acme", Queue: "default", Ready: 2, OldestReadyAt: at(-30 * time.Second), Scheduled: 1, Running: 3},
			{Tenant: "beta", Queue: "default", Ready: 1, OldestReadyAt: at(-90 * time.Second), Suspended: 4},
			{Tenant: "beta", Queue: "mail", Scheduled: 5},
		},
		keys: []*store.ConcurrencyKeyUse{
			{Tenant: "acme", Key: "a", Running: 1, Limit: 1},
			{Tenant: "acme", Key: "b", Running: 1, Limit: 2},
			{Tenant: "beta", Key: "a", Running: 3, Limit: 2},
		},
	}
	var logs bytes.Buffer
	q := storemetrics.NewQueues(storemetrics.QueuesConfig{Store: f, CacheFor: 5 * time.Second, Now: clk.Now,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(q)

	check := func(want map[string]float64) {
		t.Helper()
		for series, v := range want {
			name, labels := parseSeries(series)
			if got := value(t, reg, name, labels); got != v {
				t.Errorf("%s = %g, want %g (-1: absent)", series, got, v)
			}
		}
	}
	check(map[string]float64{
		"latch_store_up":                                      1,
		"latch_queue_ready{queue=default}":                    3,
		"latch_queue_ready{queue=mail}":                       0,
		"latch_queue_oldest_ready_age_seconds{queue=default}": 90,
		"latch_queue_oldest_ready_age_seconds{queue=mail}":    0,
		"latch_executions{queue=default,status=scheduled}":    1,
		"latch_executions{queue=default,status=running}":      3,
		"latch_executions{queue=default,status=suspended}":    4,
		"latch_executions{queue=mail,status=scheduled}":       5,
		"latch_executions{queue=mail,status=running}":         0,
		"latch_concurrency_keys_at_limit":                     2,
		"latch_queue_ready{queue=other}":                      -1,
	})

	// Within CacheFor the read is reused, the ages measured now.
	clk.Advance(4 * time.Second)
	for range 10 {
		check(map[string]float64{"latch_queue_oldest_ready_age_seconds{queue=default}": 94})
	}
	if f.statsReads != 1 {
		t.Fatalf("store read %d times within CacheFor, want once", f.statsReads)
	}

	// A failed read: latch_store_up 0, no queue gauges, one log line for
	// however many failed reads; the scrape itself succeeds.
	f.mu.Lock()
	f.err = fmt.Errorf("read: %w", store.ErrUnavailable)
	f.mu.Unlock()
	for range 3 {
		clk.Advance(5 * time.Second)
		check(map[string]float64{"latch_store_up": 0, "latch_queue_ready{queue=default}": -1,
			"latch_concurrency_keys_at_limit": -1})
	}
	if n := strings.Count(logs.String(), "level=ERROR"); n != 1 {
		t.Errorf("%d errors logged for 3 failed reads, want 1:\n%s", n, logs.String())
	}
	f.mu.Lock()
	f.err = nil
	f.mu.Unlock()
	clk.Advance(5 * time.Second)
	check(map[string]float64{"latch_store_up": 1, "latch_queue_ready{queue=default}": 3})
	if !strings.Contains(logs.String(), "works again") {
		t.Errorf("recovery not logged:\n%s", logs.String())
	}
}

// A read that does not answer is cut at ReadTimeout: the scrape answers
// latch_store_up 0 at once after it.
func TestQueuesReadTimeout(t *testing.T) {
	f := &fakeStore{block: true}
	q := storemetrics.NewQueues(storemetrics.QueuesConfig{Store: f, ReadTimeout: 50 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(q)
	start := time.Now()
	if got := value(t, reg, "latch_store_up", nil); got != 0 {
		t.Errorf("latch_store_up = %g after a read that timed out, want 0", got)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the scrape took %v", d)
	}
}

// parseSeries reads `name{a=x,b=y}` (values unquoted).
func parseSeries(s string) (string, map[string]string) {
	name, rest, ok := strings.Cut(s, "{")
	if !ok {
		return s, nil
	}
	labels := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSuffix(rest, "}"), ",") {
		k, v, _ := strings.Cut(kv, "=")
		labels[k] = v
	}
	return name, labels
}

// Through a real store (SQLite) on a fake clock: an execution submitted at
// T and claimed at T+42s waited 42 s; a scheduled one due at T+60s and
// claimed at T+65s waited 5 s, whatever it was submitted at.
func TestMetricsClaimWaitSQLite(t *testing.T) {
	raw, err := sqlite.Open(t.Context(), testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	m := storemetrics.New()
	st := storewrap.Wrap(raw, m.Observe)
	ctx := t.Context()
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, err := st.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	res, err := st.Admit(ctx, &store.AdmitParams{Tenant: "acme", Now: t0, Items: []store.Submission{
		{Kind: "echo", Queue: "mail"},
		{Kind: "echo", Queue: "sms", RunAt: t0.Add(time.Minute)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range res.Items {
		if it.Err != nil {
			t.Fatal(it.Err)
		}
	}
	for _, c := range []struct {
		now   time.Time
		queue string
	}{{t0.Add(42 * time.Second), "mail"}, {t0.Add(65 * time.Second), "sms"}} {
		got, err := st.Claim(ctx, &store.ClaimParams{WorkerID: "w", Tenant: "acme", Max: 5, Now: c.now})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Leases) != 1 || got.Leases[0].Queue != c.queue {
			t.Fatalf("claim at %s: leases %+v, want one of queue %s", c.now, got.Leases, c.queue)
		}
	}

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m.Collectors()...)
	for queue, want := range map[string]float64{"mail": 42, "sms": 5} {
		labels := map[string]string{"queue": queue}
		if n := value(t, reg, "latch_claim_wait_seconds", labels); n != 1 {
			t.Errorf("latch_claim_wait_seconds_count%v = %g, want 1", labels, n)
		}
		if got := sum(t, reg, "latch_claim_wait_seconds", labels); got != want {
			t.Errorf("latch_claim_wait_seconds_sum%v = %g, want %g", labels, got, want)
		}
	}
}
