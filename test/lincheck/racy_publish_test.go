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

// racyPublishKeys implements publish idempotency keys as check-then-act on
// top of a correct store (I14's race): Publish looks the key up in a side
// table of its own and answers the first answer when it is there; else,
// in a second step, it publishes without the key and keeps the answer.
// Run alone, it behaves exactly like the contract. Two publishes of one
// key whose checks both come before either's act publish two events, and
// each (event, subscription) starts its execution: a client's retry
// starts the subscription again.
type racyPublishKeys struct {
	store.Store
	window time.Duration

	mu      sync.Mutex
	answers map[[2]string]store.PublishResult // (tenant, idempotency key) -> the first answer
}

func newRacyPublishKeys(s store.Store, window time.Duration) *racyPublishKeys {
	return &racyPublishKeys{Store: s, window: window, answers: map[[2]string]store.PublishResult{}}
}

func (r *racyPublishKeys) Publish(ctx context.Context, p *store.PublishParams) (*store.PublishResult, error) {
	if p.IdempotencyKey == "" {
		return r.Store.Publish(ctx, p)
	}
	key := [2]string{p.Tenant, p.IdempotencyKey}
	// Check.
	r.mu.Lock()
	first, repeat := r.answers[key]
	r.mu.Unlock()
	if repeat {
		first.Replayed = true
		return &first, nil
	}
	// The window between check and act...
	runtime.Gosched()
	time.Sleep(r.window)
	// ...and the act.
	one := *p
	one.IdempotencyKey = ""
	res, err := r.Store.Publish(ctx, &one)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if _, ok := r.answers[key]; !ok {
		r.answers[key] = *res
	}
	r.mu.Unlock()
	return res, nil
}

// TestCheckerCatchesCheckThenActPublishKey shows that the events
// workload's check is not vacuous for I14's once-only publish: histories
// recorded through racyPublishKeys, whose retries start a subscription
// again, are rejected, while the wrapper run by a single client is
// accepted (the rejection is the race, not the wrapper).
func TestCheckerCatchesCheckThenActPublishKey(t *testing.T) {
	const maxTries = 20
	t.Run("RacyRejected", func(t *testing.T) {
		o := Options{HistoryOps: 80}.withDefaults(t)
		s := newRacyPublishKeys(openSQLite(t), time.Millisecond)
		for try := range maxTries {
			w := eventWorkload(try)
			w.pubKeys = 3 // retries of one key meet often
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
		t.Fatalf("the checker accepted %d histories of a store with check-then-act publish keys", maxTries)
	})

	t.Run("RacyAloneAccepted", func(t *testing.T) {
		o := Options{Clients: 1, HistoryOps: 200}.withDefaults(t)
		s := newRacyPublishKeys(openSQLite(t), 0)
		w := eventWorkload(0)
		w.pubKeys = 3
		v, err := runHistory(t.Context(), []store.Store{s}, w, o, o.Seed, t.Name())
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
