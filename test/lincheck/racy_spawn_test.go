package lincheck

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/latch-run/latch/store"
)

// racySpawn makes Spawn check-then-act on top of a correct store (I13's
// race): it first reads the parent's journal for the step (the check) and,
// when the step is not there, admits the children with the store's Spawn
// under a private step name of its own and records the step afterwards
// with RecordStep (the act), answering the recorded step. Run alone, it
// behaves exactly like the contract: the private step is hidden from every
// journal and the children's ParentStep and a fan-in's WaitingFor show the
// public name. Two spawns of one step by the same lease inside the window
// both find it unrecorded and both admit their children: the first
// RecordStep wins and the second answers the recorded step like a repeat,
// but its children stay admitted — a spawn that admits twice.
type racySpawn struct {
	store.Store
	window time.Duration

	mu       sync.Mutex
	seq      int
	public   map[string]string    // private step -> public step
	recorded map[[2]string]string // (parent id, public step) -> the private step whose ids it records
}

// privateMark starts a private step's suffix; no workload names a step with it.
const privateMark = "~spawn"

func newRacySpawn(s store.Store, window time.Duration) *racySpawn {
	return &racySpawn{Store: s, window: window, public: map[string]string{}, recorded: map[[2]string]string{}}
}

func (r *racySpawn) Spawn(ctx context.Context, p *store.SpawnParams) (*store.SpawnResult, error) {
	// Check.
	if st, err := r.Store.Steps(ctx, &store.StepsParams{Tenant: p.Tenant, ID: p.ExecutionID}); err != nil || hasStep(st, p.Step) {
		return r.Store.Spawn(ctx, p) // a repeat (or a refusal) the store answers
	}
	// The window between check and act...
	runtime.Gosched()
	time.Sleep(r.window)
	// ...and the act: the children under a private step...
	r.mu.Lock()
	r.seq++
	private := fmt.Sprintf("%s%s%d", p.Step, privateMark, r.seq)
	r.public[private] = p.Step
	r.mu.Unlock()
	q := *p
	q.Step = private
	res, err := r.Store.Spawn(ctx, &q)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(res.Children))
	for i, c := range res.Children {
		ids[i] = c.ID
	}
	// ...then the public step.
	rec, err := r.RecordStep(ctx, &store.RecordStepParams{ExecutionID: p.ExecutionID, Tenant: p.Tenant, Token: p.Token,
		Name: p.Step, Result: store.SpawnStep(ids), Now: p.Now})
	if err != nil {
		return nil, err
	}
	if !rec.Recorded { // another spawn recorded the step first: answer as a repeat
		return r.Store.Spawn(ctx, p)
	}
	r.mu.Lock()
	r.recorded[[2]string{p.ExecutionID, p.Step}] = private
	r.mu.Unlock()
	return &store.SpawnResult{Step: rec.Step, Recorded: true, Children: res.Children}, nil
}

func hasStep(page *store.StepsPage, name string) bool {
	for _, st := range page.Items {
		if st.Name == name {
			return true
		}
	}
	return false
}

func (r *racySpawn) Suspend(ctx context.Context, p *store.SuspendParams) (*store.Execution, error) {
	if p.Children != "" {
		r.mu.Lock()
		private, ok := r.recorded[[2]string{p.ExecutionID, p.Children}]
		r.mu.Unlock()
		if ok {
			q := *p
			q.Children = private
			p = &q
		}
	}
	return r.show(r.Store.Suspend(ctx, p))
}

// show puts the public step names back on an execution it returns.
func (r *racySpawn) show(x *store.Execution, err error) (*store.Execution, error) {
	if x == nil {
		return x, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if pub, ok := r.public[x.ParentStep]; ok {
		x.ParentStep = pub
	}
	if step, ok := store.ChildrenWaitStep(x.WaitingFor); ok {
		if pub, ok := r.public[step]; ok {
			x.WaitingFor = store.ChildrenWaitFor(pub)
		}
	}
	return x, err
}

func (r *racySpawn) Steps(ctx context.Context, p *store.StepsParams) (*store.StepsPage, error) {
	page, err := r.Store.Steps(ctx, p)
	if page != nil {
		var kept []*store.Step
		for _, st := range page.Items {
			if !strings.Contains(st.Name, privateMark) {
				kept = append(kept, st)
			}
		}
		page.Items = kept
	}
	return page, err
}

func (r *racySpawn) Claim(ctx context.Context, p *store.ClaimParams) (*store.ClaimResult, error) {
	res, err := r.Store.Claim(ctx, p)
	if res != nil {
		for i := range res.Leases {
			for name := range res.Leases[i].Steps {
				if strings.Contains(name, privateMark) {
					delete(res.Leases[i].Steps, name)
				}
			}
		}
	}
	return res, err
}

func (r *racySpawn) Get(ctx context.Context, p *store.GetParams) (*store.Execution, error) {
	return r.show(r.Store.Get(ctx, p))
}

func (r *racySpawn) Cancel(ctx context.Context, p *store.CancelParams) (*store.Execution, error) {
	return r.show(r.Store.Cancel(ctx, p))
}

func (r *racySpawn) Complete(ctx context.Context, p *store.CompleteParams) (*store.Execution, error) {
	return r.show(r.Store.Complete(ctx, p))
}

func (r *racySpawn) Fail(ctx context.Context, p *store.FailParams) (*store.Execution, error) {
	return r.show(r.Store.Fail(ctx, p))
}

func (r *racySpawn) Release(ctx context.Context, p *store.ReleaseParams) (*store.Execution, error) {
	return r.show(r.Store.Release(ctx, p))
}

func (r *racySpawn) Retry(ctx context.Context, p *store.RetryParams) (*store.Execution, error) {
	return r.show(r.Store.Retry(ctx, p))
}

// TestCheckerCatchesCheckThenActSpawn shows that the children workload's
// check is not vacuous for I13: histories recorded through racySpawn are
// rejected, while the wrapper run by a single client is accepted (the
// rejection is the race, not the wrapper).
func TestCheckerCatchesCheckThenActSpawn(t *testing.T) {
	const maxTries = 20
	t.Run("RacyRejected", func(t *testing.T) {
		o := Options{HistoryOps: 150}.withDefaults(t)
		s := newRacySpawn(openSQLite(t), time.Millisecond)
		for try := range maxTries {
			v, err := runHistory(t.Context(), []store.Store{s}, childrenWorkload(try), o, o.Seed+uint64(try), fmt.Sprintf("%s-try%d", t.Name(), try))
			if err != nil {
				t.Fatal(err)
			}
			if v.result == porcupine.Illegal {
				t.Logf("caught on history %d of at most %d (checked in %v); visualization: %s\n%s",
					try+1, maxTries, v.took.Round(time.Millisecond), v.html, v.why)
				return
			}
			t.Logf("history %d: %s, not caught (%s)", try+1, v.result, v.tally)
		}
		t.Fatalf("the checker accepted %d histories of a store with check-then-act spawns", maxTries)
	})

	t.Run("RacyAloneAccepted", func(t *testing.T) {
		o := Options{Clients: 1, HistoryOps: 300}.withDefaults(t)
		s := newRacySpawn(openSQLite(t), 0)
		for h := range 3 {
			v, err := runHistory(t.Context(), []store.Store{s}, childrenWorkload(h), o, o.Seed+uint64(h), t.Name())
			if err != nil {
				t.Fatal(err)
			}
			if v.result != porcupine.Ok {
				t.Fatalf("a sequential history through the wrapper is %s; the wrapper must only differ under concurrency\n%s\n%s",
					v.result, v.html, v.why)
			}
			t.Logf("%s", v.tally)
		}
	})
}
