package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latch-run/latch/internal/storewrap"
	"github.com/latch-run/latch/store"
)

// reportStore records the reports it is given, refusing them while down.
type reportStore struct {
	store.Store
	mu      sync.Mutex
	down    bool
	reports []*store.ServerReport
	sent    chan struct{} // one value per report taken (buffered)
}

func newReportStore(st store.Store) *reportStore {
	return &reportStore{Store: st, sent: make(chan struct{}, 100)}
}

var errReportDown = errors.New("store down")

func (r *reportStore) ReportServer(_ context.Context, p *store.ServerReport) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down {
		return errReportDown
	}
	r.reports = append(r.reports, p)
	r.sent <- struct{}{}
	return nil
}

func (r *reportStore) setDown(down bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down = down
}

func (r *reportStore) last() *store.ServerReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reports) == 0 {
		return nil
	}
	return r.reports[len(r.reports)-1]
}

func leases(tenants ...string) []store.Lease {
	var ls []store.Lease
	for i, t := range tenants {
		ls = append(ls, store.Lease{ExecutionID: fmt.Sprint(i), Tenant: t})
	}
	return ls
}

// A report carries what was counted since the previous one: the workers
// seen, starts and failures by tenant and minute; a report that fails
// keeps its counts for the next, added to those counted meanwhile.
func TestReporterDeltas(t *testing.T) {
	clk := newClock() // 03:04:05
	rs := newReportStore(nil)
	r := NewReporter(ReporterConfig{Store: rs, ServerID: "s1", Host: "h", Version: "v", Now: clk.Now})
	start := clk.Now()
	minute := store.MinuteOf(start)
	ctx := t.Context()

	r.Claimed("w1", "", leases("acme", "acme", "beta"))
	r.Claimed("http-1", "acme", nil) // a poll that found nothing: seen all the same
	r.Failed("acme")
	clk.Advance(time.Minute)
	r.Claimed("w1", "", leases("acme"))
	if err := r.ReportOnce(ctx); err != nil {
		t.Fatal(err)
	}
	want := &store.ServerReport{ID: "s1", Host: "h", Version: "v", StartedAt: start, Now: clk.Now(),
		Workers: []store.WorkerSeen{
			{ID: "w1", Tenant: "", LastSeenAt: clk.Now()},
			{ID: "http-1", Tenant: "acme", LastSeenAt: start},
		},
		Activity: []store.ActivityCount{
			{Tenant: "acme", Minute: minute, Starts: 2, Failures: 1},
			{Tenant: "beta", Minute: minute, Starts: 1},
			{Tenant: "acme", Minute: minute.Add(time.Minute), Starts: 1},
		}}
	if got := rs.last(); !reflect.DeepEqual(got, want) {
		t.Fatalf("report\n got %+v\nwant %+v", got, want)
	}

	// Nothing since: a report that only says the server is alive.
	clk.Advance(10 * time.Second)
	if err := r.ReportOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rs.last(); len(got.Workers) != 0 || len(got.Activity) != 0 || !got.Now.Equal(clk.Now()) {
		t.Fatalf("report with nothing counted: %+v", got)
	}

	// The store refuses two reports; nothing counted meanwhile is lost.
	rs.setDown(true)
	r.Failed("acme")
	if err := r.ReportOnce(ctx); !errors.Is(err, errReportDown) {
		t.Fatalf("ReportOnce = %v, want the store's error", err)
	}
	r.Failed("acme")
	r.Claimed("w1", "", leases("beta"))
	if err := r.ReportOnce(ctx); !errors.Is(err, errReportDown) {
		t.Fatalf("ReportOnce = %v", err)
	}
	rs.setDown(false)
	clk.Advance(time.Minute)
	r.Failed("acme")
	if err := r.ReportOnce(ctx); err != nil {
		t.Fatal(err)
	}
	m1, m2 := minute.Add(time.Minute), minute.Add(2*time.Minute)
	got := rs.last()
	wantActivity := []store.ActivityCount{
		{Tenant: "acme", Minute: m1, Failures: 2},
		{Tenant: "beta", Minute: m1, Starts: 1},
		{Tenant: "acme", Minute: m2, Failures: 1},
	}
	if !reflect.DeepEqual(got.Activity, wantActivity) {
		t.Errorf("activity after two failed reports\n got %+v\nwant %+v", got.Activity, wantActivity)
	}
	if len(got.Workers) != 1 || got.Workers[0].ID != "w1" || !got.Workers[0].LastSeenAt.Equal(clk.Now().Add(-time.Minute)) {
		t.Errorf("workers after two failed reports: %+v", got.Workers)
	}
}

// While the store refuses reports, what is kept stays bounded: the oldest
// minutes go first, and minutes older than store.ActivityKept go.
func TestReporterBounded(t *testing.T) {
	clk := newClock()
	rs := newReportStore(nil)
	rs.setDown(true)
	r := NewReporter(ReporterConfig{Store: rs, Now: clk.Now})
	for i := range MaxReportBuckets + 10 {
		r.Failed(fmt.Sprint("t", i))
	}
	for i := range MaxReportWorkers + 10 {
		r.Claimed(fmt.Sprint("w", i), "", nil)
	}
	_ = r.ReportOnce(t.Context())
	r.mu.Lock()
	nb, nw := len(r.activity), len(r.workers)
	r.mu.Unlock()
	if nb != MaxReportBuckets || nw != MaxReportWorkers {
		t.Fatalf("kept %d buckets and %d workers, want %d and %d", nb, nw, MaxReportBuckets, MaxReportWorkers)
	}
	// Past ActivityKept, the old minutes are dropped at the next count.
	clk.Advance(store.ActivityKept + time.Minute)
	r.Failed("late")
	_ = r.ReportOnce(t.Context())
	r.mu.Lock()
	nb = len(r.activity)
	r.mu.Unlock()
	if nb != 1 {
		t.Fatalf("kept %d buckets after ActivityKept, want 1 (the latest)", nb)
	}
}

// A server's reporter counts, through the wrapped store, the claims and
// failures of a real worker, writes a report at Start and a last one at
// Stop.
func TestReporterCountsWorker(t *testing.T) {
	e := newEnv(t)
	rs := newReportStore(e.st)
	// Prompt < 0: no early report (TestReporterPrompt), so the one at stop
	// has every count.
	r := NewReporter(ReporterConfig{Store: rs, Interval: time.Hour, Prompt: -1, Logger: e.log, Now: e.clock.Now})
	if !strings.Contains(r.ServerID(), ":") {
		t.Errorf("server id %q is not host:pid:random", r.ServerID())
	}
	if err := r.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	recv(t, rs.sent, "the report at start")

	cfg := e.config()
	cfg.Store = storewrap.Wrap(e.st, r.Observe)
	w := NewWorker(cfg)
	w.Handle("ok", func(context.Context, *Job) (json.RawMessage, error) { return nil, nil })
	w.Handle("bad", func(context.Context, *Job) (json.RawMessage, error) { return nil, Permanent(errors.New("no")) })
	e.start(w)
	a, b, c := e.submit("ok", `{}`), e.submit("ok", `{}`), e.submit("bad", `{}`)
	e.waitStatus(a.ID, store.StatusSucceeded)
	e.waitStatus(b.ID, store.StatusSucceeded)
	e.waitStatus(c.ID, store.StatusFailed)

	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	// The store shows the failure once its Fail committed, which may be
	// before the wrapped call returned and was counted: stopping the
	// worker waits for its runs to settle.
	if err := w.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	recv(t, rs.sent, "the report at stop")
	got := rs.last()
	wantActivity := []store.ActivityCount{{Tenant: e.tenant, Minute: store.MinuteOf(e.clock.Now()), Starts: 3, Failures: 1}}
	if !reflect.DeepEqual(got.Activity, wantActivity) {
		t.Errorf("activity %+v, want %+v", got.Activity, wantActivity)
	}
	if len(got.Workers) != 1 || got.Workers[0].ID != "w1" || got.Workers[0].Tenant != "" {
		t.Fatalf("workers %+v, want the in-process worker w1 under tenant \"\"", got.Workers)
	}
	// What it claims: the kinds it handles, in every queue.
	if w := got.Workers[0]; !reflect.DeepEqual(w.Kinds, []string{"bad", "ok"}) || len(w.Queues) != 0 {
		t.Errorf("worker w1 claims queues %q kinds %q, want every queue, kinds [bad ok]", w.Queues, w.Kinds)
	}
}

// A report names what each worker claims: the filters of its latest
// claim.
func TestReporterWorkerFilters(t *testing.T) {
	e := newEnv(t)
	rs := newReportStore(e.st)
	r := NewReporter(ReporterConfig{Store: rs, Interval: time.Hour, Logger: e.log, Now: e.clock.Now})
	obs := func(p *store.ClaimParams) {
		r.Observe(&storewrap.Call{Op: "Claim", Params: p, Result: &store.ClaimResult{}})
	}
	obs(&store.ClaimParams{WorkerID: "w1", Queues: []string{"media"}, Kinds: []string{"resize"}})
	obs(&store.ClaimParams{WorkerID: "w2", Tenant: "acme"})
	obs(&store.ClaimParams{WorkerID: "w1", Queues: []string{"media", "mail"}, Kinds: []string{"resize"}})
	if err := r.ReportOnce(e.ctx); err != nil {
		t.Fatal(err)
	}
	got := rs.last().Workers
	want := []store.WorkerSeen{
		{ID: "w1", LastSeenAt: e.clock.Now(), Queues: []string{"mail", "media"}, Kinds: []string{"resize"}},
		{ID: "w2", Tenant: "acme", LastSeenAt: e.clock.Now()},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("workers %+v, want %+v", got, want)
	}
}

// A lease released unstarted (a worker stopping, a tenant at its share of
// the slots) takes back the start its claim counted.
func TestReporterUnstartedReleaseIsNoStart(t *testing.T) {
	clk := newClock()
	r := NewReporter(ReporterConfig{Store: newReportStore(nil), Now: clk.Now})
	leases := []store.Lease{{Tenant: "acme"}, {Tenant: "acme"}}
	r.Observe(&storewrap.Call{Op: "Claim", Params: &store.ClaimParams{WorkerID: "w1"},
		Result: &store.ClaimResult{Leases: leases}})
	r.Observe(&storewrap.Call{Op: "Release", Params: &store.ReleaseParams{Tenant: "acme", Unstarted: true}})
	r.Observe(&storewrap.Call{Op: "Release", Params: &store.ReleaseParams{Tenant: "acme"}}) // a started run's
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.activity[activityKey{"acme", store.MinuteOf(clk.Now())}]; c == nil || c.Starts != 1 {
		t.Fatalf("activity %+v, want 1 start", c)
	}
}

// A worker the store was not told of is reported Prompt after the last
// report, not at the next Interval; a worker that keeps claiming with the
// same filters, from many goroutines at once, adds no report; reports
// written so are at least Prompt apart, and a new worker's filters or a
// change of them is news again.
func TestReporterPrompt(t *testing.T) {
	const prompt = 100 * time.Millisecond
	rs := newReportStore(nil)
	r := NewReporter(ReporterConfig{Store: rs, Interval: time.Hour, Prompt: prompt,
		Logger: slog.New(slog.DiscardHandler)})
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Stop(context.Background()) }()
	recv(t, rs.sent, "the report at start")
	claims := func(id string, queues []string, n int) {
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range n {
					r.Observe(&storewrap.Call{Op: "Claim", Result: &store.ClaimResult{},
						Params: &store.ClaimParams{WorkerID: id, Tenant: "acme", Queues: queues, Kinds: []string{"k"}}})
				}
			})
		}
		wg.Wait()
	}
	quiet := func(what string) {
		t.Helper()
		select {
		case <-rs.sent:
			t.Fatalf("%s: a report, want none before the interval: %+v", what, rs.last())
		case <-time.After(3 * prompt):
		}
	}
	reported := func(what string, want ...string) *store.ServerReport {
		t.Helper()
		recv(t, rs.sent, what)
		rep := rs.last()
		var got []string
		for _, w := range rep.Workers {
			got = append(got, w.Tenant+"/"+w.ID+fmt.Sprint(w.Queues, w.Kinds))
		}
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Fatalf("%s: workers %q, want %q among them", what, got, w)
			}
		}
		return rep
	}

	claims("http-1", []string{"q"}, 1000)
	first := reported("a new worker's claims", "acme/http-1[q] [k]")
	claims("http-1", []string{"q"}, 1000)
	quiet("the same worker claiming again")

	claims("http-2", nil, 10)
	second := reported("another new worker", "acme/http-2[] [k]")
	if gap := second.Now.Sub(first.Now); gap < prompt {
		t.Errorf("two prompt reports %v apart, want at least %v", gap, prompt)
	}
	claims("http-1", []string{"q", "r"}, 10)
	reported("a worker whose queues changed", "acme/http-1[q r] [k]")
	quiet("after the change, nothing new")
}

// Prompt < 0: reports only every Interval.
func TestReporterPromptOff(t *testing.T) {
	rs := newReportStore(nil)
	r := NewReporter(ReporterConfig{Store: rs, Interval: time.Hour, Prompt: -1, Logger: slog.New(slog.DiscardHandler)})
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Stop(context.Background()) }()
	recv(t, rs.sent, "the report at start")
	r.Claimed("w1", "acme", nil)
	select {
	case <-rs.sent:
		t.Fatalf("a report with Prompt off: %+v", rs.last())
	case <-time.After(3 * DefaultPrompt / 2):
	}
}
