package storetest

import (
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testChildrenPrune covers the deletes of families: Prune deletes a child
// only with its parent, a family together, and DeleteTenant all of them.
func testChildrenPrune(t *testing.T, ns NewStore) {
	t.Run("PruneKeepsChildOfLiveParent", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme, Retention: time.Hour})
		l := e.run(acme, base, job("flow"))
		ids := e.wantSpawn(l, at(time.Second), "work", "", child(0))
		loose := e.wantSpawn(l, at(time.Second), "side", store.ParentEndAbandon, job("loose"))
		for _, kind := range []string{"child", "loose"} {
			for _, c := range e.claimKind(kind, at(2*time.Second), 1) {
				_, err := e.complete(c, at(3*time.Second), nil)
				e.must(err, "Complete child")
			}
		}
		if res := e.prune(at(3*time.Hour), 0); res.Executions != 0 {
			t.Errorf("Prune while the parent runs removed %d executions, want 0", res.Executions)
		}
		e.wantStatus(ids[0], store.StatusSucceeded)
		e.wantStatus(loose[0], store.StatusSucceeded)
		// The parent's own lease is long gone: a claim after Rescue runs it.
		e.rescue(at(3*time.Hour), 0)
		l = e.claimLeaseOf(l.ExecutionID, at(3*time.Hour))
		_, err := e.complete(l, at(3*time.Hour+10*time.Second), nil)
		e.must(err, "Complete parent")
		if res := e.prune(at(3*time.Hour+30*time.Minute), 0); res.Executions != 0 {
			t.Errorf("Prune within the parent's retention removed %d executions, want 0", res.Executions)
		}
		e.wantStatus(ids[0], store.StatusSucceeded)
		if res := e.prune(at(4*time.Hour+11*time.Second), 0); res.Executions != 3 {
			t.Errorf("Prune after the parent's retention removed %d executions, want the family's 3", res.Executions)
		}
		for _, id := range []string{l.ExecutionID, ids[0], loose[0]} {
			e.gone(id)
		}
		e.wantInflight(acme, 0)
	})

	t.Run("PruneTakesFamilyTogether", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme, Retention: time.Hour})
		l := e.run(acme, base, job("flow"))
		kid := e.wantSpawn(l, at(time.Second), "side", store.ParentEndAbandon, job("loose"))[0]
		kl := e.claimKind("loose", at(2*time.Second), 1)[kid]
		grand := e.wantSpawn(kl, at(3*time.Second), "sub", "", job("grandchild"))[0]
		_, err := e.complete(l, at(10*time.Second), nil)
		e.must(err, "Complete parent")
		_, err = e.heartbeat(kl, at(20*time.Second), time.Hour)
		e.must(err, "heartbeat of the abandoned child")
		_, err = e.complete(kl, at(50*time.Minute), nil)
		e.must(err, "Complete the abandoned child")
		e.wantCancelled(grand, at(50*time.Minute))
		// The parent is due, its child is not: they go together.
		if res := e.prune(at(time.Hour+11*time.Second), 0); res.Executions != 3 {
			t.Errorf("Prune of a due parent removed %d executions, want its family's 3", res.Executions)
		}
		for _, id := range []string{l.ExecutionID, kid, grand} {
			e.gone(id)
		}
		e.wantInflight(acme, 0)
	})

	t.Run("PruneKeepsAbandonedInFlight", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme, Retention: time.Hour})
		l := e.run(acme, base, job("flow"))
		loose := e.wantSpawn(l, at(time.Second), "side", store.ParentEndAbandon, job("loose"))[0]
		_, err := e.complete(l, at(2*time.Second), nil)
		e.must(err, "Complete parent")
		if res := e.prune(at(2*time.Hour), 0); res.Executions != 1 {
			t.Errorf("Prune removed %d executions, want the parent only", res.Executions)
		}
		e.gone(l.ExecutionID)
		x := e.wantStatus(loose, store.StatusQueued)
		if x.ParentID != "" || x.ParentStep != "" {
			t.Errorf("abandoned child of a pruned parent: ParentID %q ParentStep %q, want both empty", x.ParentID, x.ParentStep)
		}
		e.claimLeaseOf(loose, at(2*time.Hour))
		e.wantInflight(acme, 1)
	})

	t.Run("DeleteTenant", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		f := newFamily(e, 3)
		g := e.run(globex, at(5*time.Second), job("flow"))
		gids := e.wantSpawn(g, at(6*time.Second), "work", "", children(2)...)
		err := e.s.DeleteTenant(e.ctx, &store.DeleteTenantParams{Name: acme, Now: familyEnd})
		wantErr(t, "DeleteTenant with a family in flight", err, store.ErrNotTerminal)
		e.wantCascadeUntouched(f)
		e.must(e.s.DeleteTenant(e.ctx, &store.DeleteTenantParams{Name: acme, Force: true, Now: familyEnd}), "DeleteTenant Force")
		for _, id := range []string{f.parent.ExecutionID, f.queued, f.scheduled, f.running, f.suspended, f.done, f.grandchild, f.loose} {
			e.gone(id)
		}
		for _, id := range gids {
			e.wantChildOf(id, g.ExecutionID, "work", store.ParentEndCancel, 1)
		}
		e.wantChildren(globex, g.ExecutionID, 10, gids...)
		e.wantInflight(globex, 3)
	})
}

// wantCascadeUntouched asserts a family as newFamily built it.
func (e *env) wantCascadeUntouched(f *family) {
	e.t.Helper()
	e.wantStatus(f.parent.ExecutionID, store.StatusRunning)
	e.wantStatus(f.queued, store.StatusQueued)
	e.wantStatus(f.scheduled, store.StatusScheduled)
	e.wantStatus(f.running, store.StatusRunning)
	e.wantStatus(f.suspended, store.StatusSuspended)
	e.wantStatus(f.done, store.StatusSucceeded)
	e.wantStatus(f.grandchild, store.StatusQueued)
	e.wantStatus(f.loose, store.StatusQueued)
}
