package lincheck

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/latch-run/latch/store"
)

// racyFanIn makes the fan-in wait check-then-act on top of a correct store
// (I13's lost wake-up): a fan-in Suspend first reads the spawn's children
// (the check) and, when too few have ended, suspends the parent in a second
// step on a private signal instead of the store's fan-in wait (the act); a
// child's end (Complete, Fail, Release, Cancel, a cancelled Suspend,
// Delete) then looks at its parent afterwards and, when it waits on that
// private signal and enough children have ended, delivers the fan-in step
// as the signal's data. Run alone, it behaves exactly like the contract
// (the private wait is shown as the fan-in's WaitingFor). A child that
// ends between a wait's check and its act finds its parent not yet
// suspended and wakes no one: the parent stays suspended for good.
type racyFanIn struct {
	store.Store
	window time.Duration

	mu    sync.Mutex
	count map[string]int // parent id -> its wait's count
}

// fanInSignalPrefix names the private signal a parent waits on.
const fanInSignalPrefix = "racy-fanin."

func newRacyFanIn(s store.Store, window time.Duration) *racyFanIn {
	return &racyFanIn{Store: s, window: window, count: map[string]int{}}
}

// ended reads the children of parent's spawn step: the fan-in step they
// make now and how many have ended. ok is false when step is no spawn.
func (r *racyFanIn) ended(ctx context.Context, tenant, parent, step string) (kids []store.FanInChild, n int, ok bool, err error) {
	page, err := r.Steps(ctx, &store.StepsParams{Tenant: tenant, ID: parent})
	if err != nil {
		return nil, 0, false, err
	}
	var ids []string
	for _, st := range page.Items {
		if st.Name == step {
			ids, ok = store.ParseSpawnStep(st.Result)
		}
	}
	if !ok {
		return nil, 0, false, nil
	}
	for _, id := range ids {
		c := store.FanInChild{ExecutionID: id, Status: store.StatusDeleted}
		x, err := r.Store.Get(ctx, &store.GetParams{ID: id})
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return nil, 0, false, err
		default:
			c.Status, c.Result, c.Error = x.Status, x.Result, x.Error
		}
		if c.Status == store.StatusDeleted || c.Status.Terminal() {
			n++
		}
		kids = append(kids, c)
	}
	return kids, n, true, nil
}

func (r *racyFanIn) Suspend(ctx context.Context, p *store.SuspendParams) (*store.Execution, error) {
	if p.Children == "" {
		return r.childEnd(ctx, p.Now)(r.Store.Suspend(ctx, p))
	}
	// Check: anything but a wait that has to suspend is the store's.
	x, err := r.Store.Get(ctx, &store.GetParams{Tenant: p.Tenant, ID: p.ExecutionID})
	if err != nil || x.CancelRequested {
		return r.childEnd(ctx, p.Now)(r.Store.Suspend(ctx, p))
	}
	page, err := r.Steps(ctx, &store.StepsParams{Tenant: p.Tenant, ID: p.ExecutionID})
	if err != nil || hasStep(page, p.Step) {
		return r.show(r.Store.Suspend(ctx, p))
	}
	kids, n, ok, err := r.ended(ctx, p.Tenant, p.ExecutionID, p.Children)
	if err != nil || !ok || p.Count > len(kids) || store.ChildrenWaitHolds(n, len(kids), p.Count) {
		return r.show(r.Store.Suspend(ctx, p))
	}
	// The window between check and act...
	runtime.Gosched()
	time.Sleep(r.window)
	// ...and the act: a wait on the private signal.
	x, err = r.Store.Suspend(ctx, &store.SuspendParams{ExecutionID: p.ExecutionID, Tenant: p.Tenant, Token: p.Token,
		Step: p.Step, Signal: fanInSignalPrefix + p.Children, Now: p.Now})
	if err == nil && x.Status == store.StatusSuspended {
		r.mu.Lock()
		r.count[p.ExecutionID] = p.Count
		r.mu.Unlock()
	}
	return r.show(x, err)
}

// wake is a child's end seen from its parent: the parent waiting on the
// child's spawn gets the fan-in step when its condition holds.
func (r *racyFanIn) wake(ctx context.Context, tenant, parent, step string, now time.Time) error {
	p, err := r.Store.Get(ctx, &store.GetParams{ID: parent})
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if p.Status != store.StatusSuspended || p.WaitingFor != fanInSignalPrefix+step {
		return nil
	}
	kids, n, ok, err := r.ended(ctx, tenant, parent, step)
	if err != nil || !ok {
		return err
	}
	r.mu.Lock()
	count := r.count[parent]
	r.mu.Unlock()
	if !store.ChildrenWaitHolds(n, len(kids), count) {
		return nil
	}
	_, err = r.Signal(ctx, &store.SignalParams{ExecutionID: parent, Name: p.WaitingFor,
		Data: store.FanInStep(p.SuspendStep, kids, false, store.MaxJournalBytes), Now: now})
	return err
}

// childEnd returns what passes an operation's answer on after waking the
// parent of an execution it ended.
func (r *racyFanIn) childEnd(ctx context.Context, now time.Time) func(*store.Execution, error) (*store.Execution, error) {
	return func(x *store.Execution, err error) (*store.Execution, error) {
		if err == nil && x != nil && x.ParentID != "" && x.Status.Terminal() {
			if err := r.wake(ctx, x.Tenant, x.ParentID, x.ParentStep, now); err != nil {
				return nil, err
			}
		}
		return r.show(x, err)
	}
}

// show presents the private wait as the fan-in's.
func (r *racyFanIn) show(x *store.Execution, err error) (*store.Execution, error) {
	if x != nil {
		if step, ok := strings.CutPrefix(x.WaitingFor, fanInSignalPrefix); ok {
			x.WaitingFor = store.ChildrenWaitFor(step)
		}
	}
	return x, err
}

func (r *racyFanIn) Complete(ctx context.Context, p *store.CompleteParams) (*store.Execution, error) {
	return r.childEnd(ctx, p.Now)(r.Store.Complete(ctx, p))
}

func (r *racyFanIn) Fail(ctx context.Context, p *store.FailParams) (*store.Execution, error) {
	return r.childEnd(ctx, p.Now)(r.Store.Fail(ctx, p))
}

func (r *racyFanIn) Release(ctx context.Context, p *store.ReleaseParams) (*store.Execution, error) {
	return r.childEnd(ctx, p.Now)(r.Store.Release(ctx, p))
}

func (r *racyFanIn) Cancel(ctx context.Context, p *store.CancelParams) (*store.Execution, error) {
	return r.childEnd(ctx, p.Now)(r.Store.Cancel(ctx, p))
}

func (r *racyFanIn) Get(ctx context.Context, p *store.GetParams) (*store.Execution, error) {
	return r.show(r.Store.Get(ctx, p))
}

func (r *racyFanIn) Retry(ctx context.Context, p *store.RetryParams) (*store.Execution, error) {
	return r.show(r.Store.Retry(ctx, p))
}

func (r *racyFanIn) Delete(ctx context.Context, p *store.DeleteParams) error {
	x, err := r.Store.Get(ctx, &store.GetParams{Tenant: p.Tenant, ID: p.ID})
	if err := r.Store.Delete(ctx, p); err != nil {
		return err
	}
	if err == nil && x.ParentID != "" {
		return r.wake(ctx, x.Tenant, x.ParentID, x.ParentStep, p.Now)
	}
	return nil
}

// TestCheckerCatchesCheckThenActFanIn shows that the children workload's
// check catches a lost fan-in wake-up (I13): histories recorded through
// racyFanIn are rejected, while the wrapper run by a single client is
// accepted (the rejection is the race, not the wrapper).
func TestCheckerCatchesCheckThenActFanIn(t *testing.T) {
	// The race needs a child to end inside a wait's window (every few
	// histories); the history's final reads then show its parent still
	// suspended.
	const maxTries = 40
	t.Run("RacyRejected", func(t *testing.T) {
		// Short histories and a short budget: a legal history of long
		// windows is a slow search, and one not decided is simply the
		// next try.
		o := Options{HistoryOps: 150, Timeout: 10 * time.Second}.withDefaults(t)
		s := newRacyFanIn(openSQLite(t), 30*time.Millisecond)
		for try := range maxTries {
			// The children workload, one child per spawn (so that every
			// child's end ends its parent's wait), its quota roomier and
			// its children ended (cancelled) and parents looked at (Get)
			// more often.
			w := childrenWorkload(try)
			w.tenants[0].MaxInflight, w.spawnItems = 20, 1
			w.weights[actCancel] += 6
			w.weights[actGet] += 4
			v, err := runHistory(t.Context(), []store.Store{s}, w, o, o.Seed+uint64(try), fmt.Sprintf("%s-try%d", t.Name(), try))
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
		t.Fatalf("the checker accepted %d histories of a store with check-then-act fan-in waits", maxTries)
	})

	t.Run("RacyAloneAccepted", func(t *testing.T) {
		o := Options{Clients: 1, HistoryOps: 300}.withDefaults(t)
		s := newRacyFanIn(openSQLite(t), 0)
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
