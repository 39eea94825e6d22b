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

// racyEventWaits implements a wait for an event as check-then-act on top
// of a correct store (I14's race): Publish publishes, then makes the event
// known to the waits in a second step (a side log of its own); a wait
// (Suspend with Event) first looks in the side log and, when no event there
// matches it, suspends in a second step for events published from its Now
// on. Run alone, it behaves exactly like the contract. A publish that
// commits between a wait's look and its suspension, and is logged after
// the look, is lost to that wait: the publish saw no wait to resume, the
// wait no longer matches an event published before its Now.
type racyEventWaits struct {
	store.Store
	window time.Duration

	mu     sync.Mutex
	events []EventIn // every published event, once its second step ran
}

func newRacyEventWaits(s store.Store, window time.Duration) *racyEventWaits {
	return &racyEventWaits{Store: s, window: window}
}

func (r *racyEventWaits) Publish(ctx context.Context, p *store.PublishParams) (*store.PublishResult, error) {
	res, err := r.Store.Publish(ctx, p)
	if err != nil || res.Replayed {
		return res, err
	}
	// The window between the two steps...
	runtime.Gosched()
	time.Sleep(r.window)
	// ...and the second: the event is known to the waits.
	r.mu.Lock()
	r.events = append(r.events, EventIn{ID: res.EventID, Tenant: p.Tenant, Name: p.Name, Key: p.Key, At: p.Now.UnixNano()})
	r.mu.Unlock()
	return res, nil
}

func (r *racyEventWaits) Suspend(ctx context.Context, p *store.SuspendParams) (*store.Execution, error) {
	if p.Event == "" {
		return r.Store.Suspend(ctx, p)
	}
	// Check: is an event that may match already logged?
	r.mu.Lock()
	logged := false
	for _, e := range r.events {
		logged = logged || (e.Tenant == p.Tenant && e.Name == p.Event && store.EventMatches(e.Key, timeOf(e.At), p.EventKey, p.Since))
	}
	r.mu.Unlock()
	if logged { // the store picks it, or suspends when this one consumed them all
		return r.Store.Suspend(ctx, p)
	}
	// The window between check and act...
	runtime.Gosched()
	time.Sleep(r.window)
	// ...and the act: a wait for what is published from now on.
	one := *p
	if one.Since.Before(p.Now) {
		one.Since = p.Now
	}
	return r.Store.Suspend(ctx, &one)
}

// TestCheckerCatchesCheckThenActEventWait shows that the events workload's
// check is not vacuous for I14's "never missed": histories recorded
// through racyEventWaits, whose waits lose a racing publish, are rejected,
// while the wrapper run by a single client is accepted (the rejection is
// the race, not the wrapper).
func TestCheckerCatchesCheckThenActEventWait(t *testing.T) {
	const maxTries = 20
	t.Run("RacyRejected", func(t *testing.T) {
		o := Options{HistoryOps: 80}.withDefaults(t)
		s := newRacyEventWaits(openSQLite(t), time.Millisecond)
		for try := range maxTries {
			v, err := runHistory(t.Context(), []store.Store{s}, eventWorkload(try), o, o.Seed+uint64(try), fmt.Sprintf("%s-try%d", t.Name(), try))
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
		t.Fatalf("the checker accepted %d histories of a store with check-then-act event waits", maxTries)
	})

	t.Run("RacyAloneAccepted", func(t *testing.T) {
		o := Options{Clients: 1, HistoryOps: 200}.withDefaults(t)
		s := newRacyEventWaits(openSQLite(t), 0)
		v, err := runHistory(t.Context(), []store.Store{s}, eventWorkload(0), o, o.Seed, t.Name())
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
