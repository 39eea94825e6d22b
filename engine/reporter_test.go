package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
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
	r := NewReporter(ReporterConfig{Store: rs, Interval: time.Hour, Logger: e.log, Now: e.clock.Now})
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
