package engine

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// tenantLoad is a worker with long jobs ("long": they run until released)
// and quick ones ("echo"), counting how many long jobs each tenant runs at
// once.
type tenantLoad struct {
	starts  chan string   // the tenant of each long job started
	release chan struct{} // closed: every long job returns

	mu       sync.Mutex
	running  map[string]int
	mostSeen map[string]int
}

func newTenantLoad(w *Worker) *tenantLoad {
	l := &tenantLoad{starts: make(chan string, 100), release: make(chan struct{}),
		running: map[string]int{}, mostSeen: map[string]int{}}
	w.Handle("long", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		l.mu.Lock()
		l.running[job.Tenant]++
		l.mostSeen[job.Tenant] = max(l.mostSeen[job.Tenant], l.running[job.Tenant])
		l.mu.Unlock()
		defer func() {
			l.mu.Lock()
			l.running[job.Tenant]--
			l.mu.Unlock()
		}()
		l.starts <- job.Tenant
		select {
		case <-l.release:
		case <-ctx.Done():
		}
		return nil, nil
	})
	w.Handle("echo", func(ctx context.Context, job *Job) (json.RawMessage, error) { return job.Payload, nil })
	return l
}

func (l *tenantLoad) done() {
	select {
	case <-l.release:
	default:
		close(l.release)
	}
}

func (l *tenantLoad) most(tenant string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mostSeen[tenant]
}

// With 4 slots, four long jobs of acme take its share (2) and borrow one
// slot more but not the last: globex's echo starts in it and ends while
// acme's jobs still run, and so does globex's long job (globex is below its
// share); acme's fourth starts only when one of its own ends.
func TestWorkerTenantShareLeavesSlotsForOthers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if _, err := e.st.CreateTenant(e.ctx, &store.CreateTenantParams{Name: "globex", Now: e.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	cfg := e.config()
	cfg.Slots = 4
	w := NewWorker(cfg)
	load := newTenantLoad(w)
	var long []string
	for range 4 {
		long = append(long, e.submit("long", `{}`).ID)
	}
	e.start(w)
	t.Cleanup(load.done) // runs before the worker's Stop
	for range 3 {
		if got := recv(t, load.starts, "acme's long jobs"); got != e.tenant {
			t.Fatalf("a job of %s started", got)
		}
	}
	admit := func(kind string) string {
		t.Helper()
		res, err := e.st.Admit(e.ctx, &store.AdmitParams{Tenant: "globex", Now: e.clock.Now(),
			Items: []store.Submission{{Kind: kind, Payload: json.RawMessage(`{"b":1}`)}}})
		if err != nil || res.Items[0].Err != nil {
			t.Fatalf("admit globex's %s: %v %v", kind, err, res.Items[0].Err)
		}
		return res.Items[0].Execution.ID
	}
	e.waitStatus(admit("echo"), store.StatusSucceeded)
	admit("long")
	if got := recv(t, load.starts, "globex's long job"); got != "globex" {
		t.Fatalf("a long job of %s started, want globex's", got)
	}
	if most := load.most(e.tenant); most != 3 {
		t.Fatalf("acme ran %d long jobs at once, want its share and one borrowed slot, 3", most)
	}
	select {
	case got := <-load.starts:
		t.Fatalf("a long job of %s started with every slot taken", got)
	default:
	}

	load.done() // every long job ends: acme's fourth takes a slot
	for _, id := range long {
		e.waitStatus(id, store.StatusSucceeded)
	}
	if most := load.most(e.tenant); most != 3 {
		t.Fatalf("acme ran %d long jobs at once, want 3", most)
	}
	e.checkInflight(0)
}

// A share of every slot (TenantSlots = Slots) lets one tenant fill them all.
func TestWorkerTenantShareOfEverySlot(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config()
	cfg.Slots, cfg.TenantSlots = 3, 3
	w := NewWorker(cfg)
	load := newTenantLoad(w)
	for range 3 {
		e.submit("long", `{}`)
	}
	e.start(w)
	t.Cleanup(load.done) // runs before the worker's Stop
	for range 3 {
		recv(t, load.starts, "acme's long jobs")
	}
	if load.most(e.tenant) != 3 {
		t.Fatalf("acme ran %d at once, want 3", load.most(e.tenant))
	}
}

// share's rule: below its share a tenant takes any free slot; at it, any
// but the last; a claim's batch fits what one tenant may start.
func TestShareRule(t *testing.T) {
	t.Parallel()
	s := newShare(2, 4)
	if got := s.excluded(); got != nil {
		t.Errorf("excluded with nothing running: %v, want none", got)
	}
	if got := s.batch(4); got != 3 {
		t.Errorf("batch with nothing running: %d, want 3 (every slot but the last)", got)
	}
	for i, want := range []bool{true, true, true, false} {
		if got := s.take("a"); got != want {
			t.Fatalf("a's take %d: %v, want %v", i+1, got, want)
		}
	}
	if got := s.batch(1); got != 1 {
		t.Errorf("batch at the last slot: %d, want 1", got)
	}
	if got := s.excluded(); !slices.Equal(got, []string{"a"}) {
		t.Errorf("excluded at the last slot: %v, want [a] (at its share)", got)
	}
	if !s.take("b") {
		t.Fatal("b, below its share, did not get the last slot")
	}
	s.give("a")
	if s.take("a") {
		t.Fatal("a took the last slot at its share")
	}
	if !s.take("b") {
		t.Fatal("b, below its share, did not get the freed slot")
	}
}

// A worker whose only ready work is of a tenant at its share starts it as
// soon as one of that tenant's jobs ends, not at its next poll.
func TestWorkerTenantAtShareStartsWhenItsSlotFrees(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config()
	cfg.Slots = 2 // share 1, and no slot to borrow: the last stays free
	cfg.PollInterval = time.Hour
	w := NewWorker(cfg)
	starts, end := make(chan string, 10), make(chan struct{})
	done := make(chan struct{})
	w.Handle("long", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		starts <- job.ID
		select {
		case <-end:
		case <-done:
		case <-ctx.Done():
		}
		return nil, nil
	})
	for range 3 {
		e.submit("long", `{}`)
	}
	e.start(w)
	t.Cleanup(func() { close(done) }) // runs before the worker's Stop
	first := recv(t, starts, "the first job")
	select {
	case id := <-starts:
		t.Fatalf("a second job (%s) started past acme's share with only the last slot free", id)
	case <-time.After(50 * time.Millisecond):
	}
	end <- struct{}{} // the first ends: the next starts in its slot
	if next := recv(t, starts, "the next job, as the first one's slot freed"); next == first {
		t.Fatalf("the same job started twice")
	}
}

// A tenant at its share with work waiting is passed by the claim itself
// (store.ClaimParams.ExcludeTenants), not leased and released again: its
// jobs start in their order, each in one run, however many polls and
// freed slots come while they wait. (Leasing and releasing reordered
// them, recorded a "released" run per poll, which pushed real runs out of
// the bounded history, and took rate-limit tokens for nothing.)
func TestWorkerTenantShareNeverReleasesWaitingWork(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config()
	cfg.Slots, cfg.TenantSlots = 2, 1 // one slot for acme, the last kept free
	cfg.PollInterval = 20 * time.Millisecond
	w := NewWorker(cfg)
	var mu sync.Mutex
	var order []string
	w.Handle("job", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		mu.Lock()
		order = append(order, job.ID)
		mu.Unlock()
		e.clock.Advance(time.Millisecond) // a release now would queue it behind the others
		select {
		case <-time.After(150 * time.Millisecond): // several polls while the others wait
		case <-ctx.Done():
		}
		return nil, nil
	})
	var ids []string
	for range 4 {
		ids = append(ids, e.submit("job", `{}`).ID)
	}
	e.start(w)
	for _, id := range ids {
		e.waitStatus(id, store.StatusSucceeded)
	}
	mu.Lock()
	got := slices.Clone(order)
	mu.Unlock()
	if !slices.Equal(got, ids) {
		t.Errorf("start order %v, want the submit order %v", got, ids)
	}
	for i, id := range ids {
		runs, err := e.st.Runs(e.ctx, &store.RunsParams{Tenant: e.tenant, ID: id})
		if err != nil {
			t.Fatal(err)
		}
		var outcomes []store.RunOutcome
		for _, r := range runs {
			outcomes = append(outcomes, r.Outcome)
		}
		if len(runs) != 1 || runs[0].Outcome != store.RunSucceeded {
			t.Errorf("job %d's runs: %v, want one, succeeded (no lease released unstarted)", i, outcomes)
		}
	}
}
