package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testEventsStorage covers what the copies of an event cost: the step each
// wait it ends records holds the event, and counts in that execution's and
// its tenant's StoredBytes (store/events.go), so one publish resuming many
// waits cannot take more than the tenant's storage budget.
func testEventsStorage(t *testing.T, ns NewStore) {
	t.Run("EachResumedWaitCountsItsCopy", func(t *testing.T) {
		e := start(t, ns)
		var ids []string
		for i := range 3 {
			l := e.runKind(acme, fmt.Sprintf("w%d", i), base)
			e.wantWaitEvent(l, at(time.Second), "paid", "payment", "", time.Time{}, store.StatusSuspended)
			ids = append(ids, l.ExecutionID)
		}
		before := map[string]int64{}
		for _, id := range ids {
			before[id] = e.get(id).StoredBytes
		}
		stored := e.tenant(acme).StoredBytes
		data := `{"blob":"0123456789abcdef"}`
		res := e.publish(acme, "payment", "order-1", data, at(2*time.Second))
		wantPublished(t, "Publish", res, 3)
		step := store.EventStep(eventOf(res, "payment", "order-1", data, at(2*time.Second)))
		copySize := store.StoredSize(step)
		for _, id := range ids {
			e.wantEventStep(id, "paid", eventOf(res, "payment", "order-1", data, at(2*time.Second)))
			if got := e.get(id).StoredBytes; got != before[id]+copySize {
				t.Errorf("execution %s: StoredBytes %d after the event ended its wait, want %d + the step's %d = %d",
					id, got, before[id], copySize, before[id]+copySize)
			}
		}
		size := eventSize("payment", "order-1", data)
		if got, want := e.tenant(acme).StoredBytes, stored+size+3*copySize; got != want {
			t.Errorf("tenant StoredBytes %d after a publish that resumed 3 waits, want %d + the event's %d + 3 × %d = %d",
				got, stored, size, copySize, want)
		}
		e.wantEventState(acme, 3, size)

		// Deleting a waiter releases its copy with the rest of it.
		l := e.reclaim(acme, "w0", ids[0], at(3*time.Second))
		_, err := e.complete(l, at(3*time.Second), nil)
		e.must(err, "Complete")
		e.must(e.s.Delete(e.ctx, &store.DeleteParams{Tenant: acme, ID: ids[0]}), "Delete")
		e.wantEventState(acme, 2, size)
	})

	t.Run("AWaitThatConsumesAtOnceCountsItsCopy", func(t *testing.T) {
		e := start(t, ns)
		data := `{"blob":"0123456789abcdef"}`
		res := e.publish(acme, "payment", "", data, at(time.Second))
		l := e.runCreated(acme, "flow", base, at(2*time.Second))
		before := e.get(l.ExecutionID).StoredBytes
		e.wantWaitEvent(l, at(2*time.Second), "paid", "payment", "", time.Time{}, store.StatusQueued)
		step := store.EventStep(eventOf(res, "payment", "", data, at(time.Second)))
		if got, want := e.get(l.ExecutionID).StoredBytes, before+store.StoredSize(step); got != want {
			t.Errorf("StoredBytes %d after a wait consumed a retained event, want %d + the step's %d = %d",
				got, before, store.StoredSize(step), want)
		}
		e.wantEventState(acme, 1, eventSize("payment", "", data))
	})

	t.Run("PublishWhoseCopiesDoNotFitIsRefused", func(t *testing.T) {
		e := startEmpty(t, ns)
		data := `"0123456789012345678901234567890123456789"`
		size := eventSize("payment", "", data)
		copySize := store.StoredSize(store.EventStep(&store.Event{ID: "01900000-0000-7000-8000-000000000000",
			Name: "payment", Data: mustJSON(data), PublishedAt: at(2 * time.Second)}))
		e.createTenant(store.CreateTenantParams{Name: acme})
		var ids []string
		before := map[string]int64{}
		for i := range 2 {
			l := e.runKind(acme, fmt.Sprintf("w%d", i), base)
			e.wantWaitEvent(l, at(time.Second), "paid", "payment", "", time.Time{}, store.StatusSuspended)
			ids = append(ids, l.ExecutionID)
			before[l.ExecutionID] = e.get(l.ExecutionID).StoredBytes
		}
		// Room for the event and one copy, not two.
		e.setBudget(e.tenant(acme).StoredBytes + size + copySize + copySize/2)
		_, err := e.publishWith(store.PublishParams{Name: "payment", Data: mustJSON(data), IdempotencyKey: "p", Now: at(2 * time.Second)})
		wantErr(t, "Publish whose two copies pass the budget", err, store.ErrStorageExceeded)
		for _, id := range ids {
			e.wantSuspended(id, "paid", store.EventWaitFor("payment"), time.Time{})
			if got := e.get(id).StoredBytes; got != before[id] {
				t.Errorf("execution %s counts %d bytes after a refused publish, want %d as before it", id, got, before[id])
			}
		}
		e.wantEventState(acme, 2, 0)

		// With one waiter gone, the same publish fits: nothing of the
		// refused one was kept, not even its idempotency key.
		_, err = e.cancel(acme, ids[1], at(3*time.Second))
		e.must(err, "Cancel")
		e.must(e.s.Delete(e.ctx, &store.DeleteParams{Tenant: acme, ID: ids[1]}), "Delete")
		res, err := e.publishWith(store.PublishParams{Name: "payment", Data: mustJSON(data), IdempotencyKey: "p", Now: at(4 * time.Second)})
		e.must(err, "Publish with room for its one copy")
		if res.Replayed {
			t.Error("Publish after a refused one with the same key: Replayed")
		}
		wantPublished(t, "Publish with room for its one copy", res, 1)
		e.wantEventState(acme, 1, size)
	})

	t.Run("AWaitWhoseCopyDoesNotFitIsRefused", func(t *testing.T) {
		e := startEmpty(t, ns)
		data := `"0123456789012345678901234567890123456789"`
		size := eventSize("payment", "", data)
		e.createTenant(store.CreateTenantParams{Name: acme})
		res := e.publish(acme, "payment", "", data, at(time.Second))
		l := e.runCreated(acme, "flow", base, at(2*time.Second))
		before := e.get(l.ExecutionID).StoredBytes
		e.setBudget(e.tenant(acme).StoredBytes + 10)
		_, err := e.waitEvent(l, at(2*time.Second), "paid", "payment", "", time.Time{}, 0)
		wantErr(t, "a wait whose copy of the event passes the budget", err, store.ErrStorageExceeded)
		if x := e.get(l.ExecutionID); x.Status != store.StatusRunning || x.StoredBytes != before {
			t.Errorf("after the refused wait: %s counting %d bytes, want running counting %d as before it", x.Status, x.StoredBytes, before)
		}
		if n := len(e.steps(l.ExecutionID)); n != 0 {
			t.Errorf("after the refused wait: %d steps, want none", n)
		}
		e.wantEventState(acme, 1, size)

		// The lease was kept and the event not consumed: with a larger
		// budget the same wait consumes it.
		e.setBudget(1 << 20)
		e.wantWaitEvent(l, at(3*time.Second), "paid", "payment", "", time.Time{}, store.StatusQueued)
		e.wantEventStep(l.ExecutionID, "paid", eventOf(res, "payment", "", data, at(time.Second)))
		e.wantEventState(acme, 1, size)
	})
}

// testEventsStorageRace races waits and publishes at the edge of the
// storage budget: every call either lands whole or is refused with
// ErrStorageExceeded, the count never passes the budget, and it is exactly
// what landed — each execution counts its copies, the tenant its
// executions' bytes and its accepted events'.
func testEventsStorageRace(t *testing.T, ns NewStore) {
	t.Run("Race/CopiesAtTheBudget", func(t *testing.T) {
		e := start(t, ns)
		const waiters, publishers = 40, 8
		for range waiters {
			e.submit(acme, base, job("flow"))
		}
		leases := e.claim(store.ClaimParams{Tenant: acme, Max: waiters, Now: base})
		if len(leases) != waiters {
			t.Fatalf("claimed %d, want %d", len(leases), waiters)
		}
		before := map[string]int64{}
		for _, l := range leases {
			before[l.ExecutionID] = e.get(l.ExecutionID).StoredBytes
		}
		data := func(i int) string { return fmt.Sprintf(`"%d%s"`, i, strings.Repeat("x", 300)) }
		size := eventSize("tick", "", data(0))
		copySize := store.StoredSize(store.EventStep(&store.Event{ID: "01900000-0000-7000-8000-000000000000",
			Name: "tick", Data: mustJSON(data(0)), PublishedAt: at(time.Second)}))
		// Room for about half of what would land without a budget.
		budget := e.tenant(acme).StoredBytes + (publishers*size+waiters*copySize)/2
		e.setBudget(budget)

		now := at(time.Second)
		pubs := make([]*store.PublishResult, publishers)
		errs := make([]error, waiters+publishers)
		together(waiters+publishers, func(k int) {
			if k < waiters {
				_, errs[k] = e.waitEvent(leases[k], now, "go", "tick", "", time.Time{}, 0)
				return
			}
			i := k - waiters
			pubs[i], errs[k] = e.publishWith(store.PublishParams{Name: "tick", Data: mustJSON(data(i)), Now: now})
		})
		var accepted, refused int
		for k, err := range errs {
			switch {
			case err == nil:
				if k >= waiters {
					accepted++
				}
			case errors.Is(err, store.ErrStorageExceeded):
				refused++
			default:
				t.Fatalf("call %d: %v, want success or ErrStorageExceeded", k, err)
			}
		}
		if refused == 0 {
			t.Errorf("no call was refused: the budget %d did not bind", budget)
		}
		tn := e.tenant(acme)
		if tn.StoredBytes > budget {
			t.Errorf("StoredBytes %d passed the budget %d", tn.StoredBytes, budget)
		}
		// Each execution counts exactly the steps it holds.
		for _, l := range leases {
			want := before[l.ExecutionID]
			for _, s := range e.steps(l.ExecutionID) {
				want += store.StoredSize(s.Result)
			}
			if got := e.get(l.ExecutionID).StoredBytes; got != want {
				t.Errorf("%s: StoredBytes %d, want %d (its payload and its steps' copies)", l.ExecutionID, got, want)
			}
		}
		e.wantEventState(acme, waiters, int64(accepted)*size)
	})
}
