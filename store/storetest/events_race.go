package storetest

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testEventsRace runs I14 under real concurrency. Run it under -race.
func testEventsRace(t *testing.T, ns NewStore) {
	t.Run("Race/PublishVsSuspendNeverLosesTheWakeUp", func(t *testing.T) {
		e := start(t, ns)
		const n = 48
		leases := make([]store.Lease, n)
		for i := range n {
			leases[i] = e.runKind(acme, fmt.Sprint("w", i), base)
		}
		now := at(time.Second)
		waits := make([]*store.Execution, n)
		pubs := make([]*store.PublishResult, n)
		errs := make([]error, 2*n)
		// Each execution's wait (keyed, so only its own publish matches)
		// races its publish.
		together(2*n, func(k int) {
			i := k / 2
			key := fmt.Sprint("k", i)
			if k%2 == 0 {
				waits[i], errs[k] = e.waitEvent(leases[i], now, "go", "start", key, time.Time{}, 0)
			} else {
				pubs[i], errs[k] = e.publishWith(store.PublishParams{Name: "start", Key: key, Data: mustJSON(fmt.Sprint(i)), Now: now})
			}
		})
		for k, err := range errs {
			if err != nil {
				t.Fatalf("call %d: %v", k, err)
			}
		}
		var size int64
		for i := range n {
			checkPublish(t, "Publish", pubs[i])
			atOnce := waits[i].Status == store.StatusQueued
			if !atOnce && waits[i].Status != store.StatusSuspended {
				t.Errorf("wait %d answered %s", i, waits[i].Status)
			}
			if got, want := pubs[i].Resumed, map[bool]int{true: 0, false: 1}[atOnce]; got != want {
				t.Errorf("I14: wait %d answered %s and its publish resumed %d: want %d (each wait ends once)",
					i, waits[i].Status, got, want)
			}
			e.wantResumed(leases[i].ExecutionID)
			e.wantJournal(leases[i].ExecutionID, [2]string{"go", string(store.EventStep(
				eventOf(pubs[i], "start", fmt.Sprint("k", i), fmt.Sprint(i), now)))})
			size += eventSize("start", fmt.Sprint("k", i), fmt.Sprint(i))
		}
		e.wantEventState(acme, n, size)
	})

	t.Run("Race/OneIdempotencyKeyOneEvent", func(t *testing.T) {
		e := start(t, ns)
		for _, n := range []string{"a", "b"} {
			e.putSub(sub(n, "payment", "start-"+n), base)
		}
		l := e.run(acme, base, job("flow"))
		e.wantWaitEvent(l, at(time.Second), "paid", "payment", "", time.Time{}, store.StatusSuspended)
		const n = 16
		answers := make([]*store.PublishResult, n)
		errs := make([]error, n)
		together(n, func(i int) {
			answers[i], errs[i] = e.publishWith(store.PublishParams{Name: "payment", Data: mustJSON(`{"n":1}`),
				IdempotencyKey: "pay-1", Now: at(2 * time.Second)})
		})
		fresh := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("Publish %d: %v", i, errs[i])
			}
			checkPublish(t, "Publish", answers[i])
			if !answers[i].Replayed {
				fresh++
			}
			a, first := answers[i], answers[0]
			if a.EventID != first.EventID || a.Resumed != first.Resumed || fmt.Sprint(a.Started) != fmt.Sprint(first.Started) {
				t.Errorf("I14: Publish %d answered %+v, Publish 0 %+v: two answers to one key", i, a, first)
			}
		}
		if fresh != 1 {
			t.Errorf("I14: %d of %d publishes with one key were not Replayed, want 1", fresh, n)
		}
		wantPublished(t, "the publish", answers[0], 1, "a", "b")
		for _, s := range []string{"a", "b"} {
			if got := listAll(t, e.s, store.ListParams{Tenant: acme, Kind: "start-" + s, Limit: 100}); len(got) != 1 {
				t.Errorf("I14: %d executions started for subscription %s, want 1", len(got), s)
			}
		}
		e.wantJournal(l.ExecutionID, [2]string{"paid", string(store.EventStep(eventOf(answers[0], "payment", "", `{"n":1}`, at(2*time.Second))))})
		e.wantEventState(acme, 3, eventSize("payment", "", `{"n":1}`))
	})

	t.Run("Race/ManyWaitersConcurrentPublishes", func(t *testing.T) {
		e := start(t, ns)
		const waiters, publishers = 100, 8
		leases := make([]store.Lease, waiters)
		for range waiters {
			e.submit(acme, base, job("flow"))
		}
		ls := e.claim(store.ClaimParams{Tenant: acme, Max: waiters, Now: base})
		if len(ls) != waiters {
			t.Fatalf("claimed %d, want %d", len(ls), waiters)
		}
		copy(leases, ls)
		now := at(time.Second)
		waits := make([]*store.Execution, waiters)
		pubs := make([]*store.PublishResult, publishers)
		errs := make([]error, waiters+publishers)
		together(waiters+publishers, func(k int) {
			if k < waiters {
				waits[k], errs[k] = e.waitEvent(leases[k], now, "go", "tick", "", time.Time{}, 0)
				return
			}
			i := k - waiters
			pubs[i], errs[k] = e.publishWith(store.PublishParams{Name: "tick", Data: mustJSON(fmt.Sprint(i)), Now: now})
		})
		for k, err := range errs {
			if err != nil {
				t.Fatalf("call %d: %v", k, err)
			}
		}
		var resumed, atOnce atomic.Int64
		for _, p := range pubs {
			checkPublish(t, "Publish", p)
			resumed.Add(int64(p.Resumed))
		}
		for _, w := range waits {
			if w.Status == store.StatusQueued {
				atOnce.Add(1)
			}
		}
		if got := resumed.Load() + atOnce.Load(); got != waiters {
			t.Errorf("I14: publishes resumed %d and %d waits consumed at once: %d, want %d (each wait ends once)",
				resumed.Load(), atOnce.Load(), got, waiters)
		}
		for _, l := range leases {
			e.wantResumed(l.ExecutionID)
			st := e.steps(l.ExecutionID)
			if len(st) != 1 {
				t.Fatalf("I14: %s has %d steps, want 1", l.ExecutionID, len(st))
			}
			found := false
			for i, p := range pubs {
				if sameJSON(st[0].Result, store.EventStep(eventOf(p, "tick", "", fmt.Sprint(i), now))) {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: step %s is none of the published events", l.ExecutionID, st[0].Result)
			}
		}
		e.wantEventState(acme, waiters, publishers*eventSize("tick", "", "0"))
	})
}
