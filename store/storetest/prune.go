package storetest

import (
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testPromote covers Store.Promote.
func testPromote(t *testing.T, ns NewStore) {
	t.Run("MovesDueScheduledToQueued", func(t *testing.T) {
		e := start(t, ns)
		due := job("due")
		due.RunAt = at(10 * time.Second)
		notDue := job("not-due")
		notDue.RunAt = at(time.Hour)
		d := e.submit(acme, base, due)
		n := e.submit(acme, base, notDue)
		if got := e.promote(at(9*time.Second), 0); got != 0 {
			t.Errorf("Promote before RunAt: %d, want 0", got)
		}
		if got := e.promote(at(10*time.Second), 0); got != 1 {
			t.Errorf("Promote: %d, want 1", got)
		}
		x := e.wantStatus(d.ID, store.StatusQueued)
		wantTime(t, "RunAt", x.RunAt, at(10*time.Second))
		e.wantStatus(n.ID, store.StatusScheduled)
		e.wantInflight(acme, 2)
		l := e.claimOne(acme, at(11*time.Second))
		if l.ExecutionID != d.ID {
			t.Errorf("claimed %s, want the promoted %s", l.ExecutionID, d.ID)
		}
	})

	t.Run("PromotesRetryBackoff", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("echo"))
		_, err := e.fail(l, at(time.Second), "boom", true, time.Minute)
		e.must(err, "Fail")
		if got := e.promote(at(time.Minute), 0); got != 0 {
			t.Errorf("Promote before the retry is due: %d, want 0", got)
		}
		if got := e.promote(at(time.Minute+time.Second), 0); got != 1 {
			t.Errorf("Promote: %d, want 1", got)
		}
		e.wantStatus(l.ExecutionID, store.StatusQueued)
		e.wantInflight(acme, 1)
	})

	t.Run("RespectsLimit", func(t *testing.T) {
		e := start(t, ns)
		for range 3 {
			sub := job("echo")
			sub.RunAt = at(time.Second)
			e.submit(acme, base, sub)
		}
		for _, want := range []int{2, 1, 0} {
			if got := e.promote(at(time.Minute), 2); got != want {
				t.Errorf("Promote Limit 2: %d, want %d", got, want)
			}
		}
		if n := len(e.list(store.ListParams{Tenant: acme, Status: store.StatusQueued})); n != 3 {
			t.Errorf("%d queued, want 3", n)
		}
		e.wantInflight(acme, 3)
	})

	t.Run("LeavesOtherStatusesAlone", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("running"))
		q := e.submit(acme, at(time.Second), job("queued"))
		if got := e.promote(at(time.Hour), 0); got != 0 {
			t.Errorf("Promote: %d, want 0", got)
		}
		e.wantStatus(l.ExecutionID, store.StatusRunning)
		e.wantStatus(q.ID, store.StatusQueued)
		e.wantInflight(acme, 2)
	})
}

// testPrune covers Store.Prune: retention of terminal executions and the
// end of expired dedup keys.
func testPrune(t *testing.T, ns NewStore) {
	t.Run("RemovesOldTerminalKeepsTheRest", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme, Retention: time.Hour})
		oldSub := keyed("echo", "old", `{}`)
		old := e.run(acme, base, oldSub)
		_, err := e.complete(old, at(10*time.Second), nil)
		e.must(err, "Complete old")
		youngX := e.submit(acme, at(2*time.Minute), job("young"))
		ls := e.claim(store.ClaimParams{Tenant: acme, LeaseDuration: time.Hour, Now: at(2 * time.Minute)})
		if len(ls) != 1 || ls[0].ExecutionID != youngX.ID {
			t.Fatalf("claimed %v, want %s", ls, youngX.ID)
		}
		young := ls[0]
		running := e.run(acme, at(3*time.Minute), job("running"))
		queued := e.submit(acme, at(4*time.Minute), job("queued"))
		scheduledSub := job("scheduled")
		scheduledSub.RunAt = at(100 * time.Hour)
		scheduled := e.submit(acme, at(4*time.Minute), scheduledSub)
		_, err = e.fail(young, at(50*time.Minute), "boom", false, 0)
		e.must(err, "Fail young")
		inflight := e.tenant(acme).Inflight

		now := at(time.Hour + 2*time.Minute) // old finished 61m50s ago, young 12m ago
		if r := e.prune(now, 0); r.Executions != 1 {
			t.Errorf("Prune removed %d executions, want 1", r.Executions)
		}
		e.gone(old.ExecutionID)
		e.wantStatus(young.ExecutionID, store.StatusFailed)
		e.wantStatus(running.ExecutionID, store.StatusRunning)
		e.wantStatus(queued.ID, store.StatusQueued)
		e.wantStatus(scheduled.ID, store.StatusScheduled)
		e.wantInflight(acme, inflight)

		// Its dedup key went with it: the key admits a new execution.
		fresh := e.submit(acme, now, oldSub)
		if fresh.ID == old.ExecutionID {
			t.Error("the pruned execution's id came back")
		}
		e.wantInflight(acme, inflight+1)
	})

	t.Run("UsesEachTenantsRetention", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme, Retention: time.Hour})
		e.createTenant(store.CreateTenantParams{Name: globex, Retention: 24 * time.Hour})
		a := e.submit(acme, base, job("echo"))
		g := e.submit(globex, base, job("echo"))
		for _, x := range []*store.Execution{a, g} {
			_, err := e.cancel("", x.ID, at(time.Minute))
			e.must(err, "Cancel")
		}
		if r := e.prune(at(2*time.Hour), 0); r.Executions != 1 {
			t.Errorf("Prune removed %d executions, want 1", r.Executions)
		}
		e.gone(a.ID)
		e.wantStatus(g.ID, store.StatusCancelled)
		if r := e.prune(at(25*time.Hour), 0); r.Executions != 1 {
			t.Errorf("second Prune removed %d executions, want 1", r.Executions)
		}
		e.gone(g.ID)
		e.wantInflight(acme, 0)
		e.wantInflight(globex, 0)
	})

	t.Run("DefaultRetention", func(t *testing.T) {
		e := start(t, ns)
		x := e.submit(acme, base, job("echo"))
		_, err := e.cancel(acme, x.ID, base)
		e.must(err, "Cancel")
		if r := e.prune(base.Add(store.DefaultRetention-time.Minute), 0); r.Executions != 0 {
			t.Errorf("Prune before the default retention removed %d", r.Executions)
		}
		if r := e.prune(base.Add(store.DefaultRetention+time.Minute), 0); r.Executions != 1 {
			t.Errorf("Prune after the default retention removed %d, want 1", r.Executions)
		}
		e.gone(x.ID)
	})

	t.Run("RespectsLimit", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme, Retention: time.Hour})
		for range 3 {
			x := e.submit(acme, base, job("echo"))
			_, err := e.cancel(acme, x.ID, base)
			e.must(err, "Cancel")
		}
		for _, want := range []int{2, 1, 0} {
			if r := e.prune(at(2*time.Hour), 2); r.Executions != want {
				t.Errorf("Prune Limit 2 removed %d, want %d", r.Executions, want)
			}
		}
		e.wantInflight(acme, 0)
	})

	t.Run("RemovesExpiredDedupKeysOnly", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme, DedupTTL: time.Hour})
		sub := keyed("echo", "k", `{"v":1}`)
		x := e.submit(acme, base, sub) // stays queued throughout

		if r := e.prune(at(30*time.Minute), 0); r != (store.PruneResult{}) {
			t.Errorf("Prune within the TTL: %+v, want nothing", r)
		}
		e.dedup(acme, at(31*time.Minute), sub, x.ID)

		if r := e.prune(at(time.Hour+time.Second), 0); r.DedupKeys != 1 || r.Executions != 0 {
			t.Errorf("Prune after the TTL: %+v, want DedupKeys 1 and no execution", r)
		}
		e.wantStatus(x.ID, store.StatusQueued)
		e.submit(acme, at(time.Hour+2*time.Second), keyed("http", "k", `{"v":2}`))
		e.wantInflight(acme, 2)
	})
}
