package lincheck

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/latch-run/latch/store"
)

// racySignals implements signals as check-then-act on top of a correct
// store (I11's race): Signal reads the execution first and, when it is not
// waiting for that name, keeps the signal in a side buffer of its own in a
// second step; a wait (Suspend) suspends in the store first and then looks
// in the side buffer, delivering the oldest signal of its name with a real
// Signal. Run alone, it behaves exactly like the contract. A signal whose
// check comes before a wait and whose act comes after it is lost to that
// wait (the execution stays suspended while its signal sits in the side
// buffer); a signal delivered between a wait's two steps is consumed out
// of order.
type racySignals struct {
	store.Store
	window time.Duration

	mu      sync.Mutex
	kept    map[string][]SignalIn // execution id -> its signals, in arrival order
	answers map[[2]string]bool    // (execution id, idempotency key) -> the first answer
}

func newRacySignals(s store.Store, window time.Duration) *racySignals {
	return &racySignals{Store: s, window: window, kept: map[string][]SignalIn{}, answers: map[[2]string]bool{}}
}

func (r *racySignals) Signal(ctx context.Context, p *store.SignalParams) (*store.SignalResult, error) {
	if err := store.CheckSignalName(p.Name); err != nil {
		return nil, err
	}
	// Check.
	x, err := r.Get(ctx, &store.GetParams{Tenant: p.Tenant, ID: p.ExecutionID})
	if err != nil {
		return nil, err
	}
	key := [2]string{x.ID, p.IdempotencyKey}
	r.mu.Lock()
	first, repeat := r.answers[key]
	r.mu.Unlock()
	switch {
	case p.IdempotencyKey != "" && repeat:
		return &store.SignalResult{Delivered: first}, nil
	case x.Status.Terminal():
		return nil, fmt.Errorf("execution %s is %s: %w", x.ID, x.Status, store.ErrNotActive)
	}
	var res *store.SignalResult
	if x.Status == store.StatusSuspended && x.WaitingFor == p.Name {
		one := *p
		one.IdempotencyKey = ""
		if res, err = r.Store.Signal(ctx, &one); err != nil {
			return nil, err
		}
	} else {
		// The window between check and act...
		runtime.Gosched()
		time.Sleep(r.window)
		// ...and the act: kept for a later wait.
		r.mu.Lock()
		r.kept[x.ID] = append(r.kept[x.ID], SignalIn{Name: p.Name, Data: string(p.Data)})
		r.mu.Unlock()
		res = &store.SignalResult{}
	}
	if p.IdempotencyKey != "" {
		r.mu.Lock()
		r.answers[key] = res.Delivered
		r.mu.Unlock()
	}
	return res, nil
}

func (r *racySignals) Suspend(ctx context.Context, p *store.SuspendParams) (*store.Execution, error) {
	x, err := r.Store.Suspend(ctx, p)
	if err != nil || p.Signal == "" || x.Status != store.StatusSuspended {
		return x, err
	}
	r.mu.Lock()
	var sig *SignalIn
	for i, sg := range r.kept[x.ID] {
		if sg.Name == p.Signal {
			sig = &sg
			r.kept[x.ID] = append(r.kept[x.ID][:i:i], r.kept[x.ID][i+1:]...)
			break
		}
	}
	r.mu.Unlock()
	if sig == nil {
		return x, nil
	}
	if _, err := r.Store.Signal(ctx, &store.SignalParams{Tenant: p.Tenant, ExecutionID: x.ID, Name: sig.Name,
		Data: rawOrNil(sig.Data), Now: p.Now}); err != nil {
		return nil, err
	}
	return r.Get(ctx, &store.GetParams{ID: x.ID})
}

// TestCheckerCatchesCheckThenActSignal shows that the flow workload's check
// is not vacuous for I11: histories recorded through racySignals are
// rejected, while the wrapper run by a single client is accepted (the
// rejection is the race, not the wrapper).
func TestCheckerCatchesCheckThenActSignal(t *testing.T) {
	const maxTries = 20
	t.Run("RacyRejected", func(t *testing.T) {
		// Short histories: proving one illegal takes porcupine the whole
		// search, which grows fast with the history's length.
		o := Options{HistoryOps: 80}.withDefaults(t)
		s := newRacySignals(openSQLite(t), 300*time.Microsecond)
		for try := range maxTries {
			v, err := runHistory(t.Context(), []store.Store{s}, flowWorkload(try), o, o.Seed+uint64(try), fmt.Sprintf("%s-try%d", t.Name(), try))
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
		t.Fatalf("the checker accepted %d histories of a store with check-then-act signals", maxTries)
	})

	t.Run("RacyAloneAccepted", func(t *testing.T) {
		o := Options{Clients: 1, HistoryOps: 200}.withDefaults(t)
		s := newRacySignals(openSQLite(t), 0)
		v, err := runHistory(t.Context(), []store.Store{s}, flowWorkload(0), o, o.Seed, t.Name())
		if err != nil {
			t.Fatal(err)
		}
		if v.result != porcupine.Ok {
			t.Fatalf("a sequential history through the wrapper is %s; the wrapper must only differ under concurrency\n%s\n%s",
				v.result, v.html, v.why)
		}
		t.Logf("%s", v.tally)
	})
}
