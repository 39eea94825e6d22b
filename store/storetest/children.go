package storetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testChildren covers I13 (store/children.go): spawn, fan-in waits and a
// parent's end. This file holds Spawn and List by ParentID one call at a
// time; children_fanin.go the fan-in waits, children_end.go a parent's
// end, children_prune.go the deletes of families, and children_race.go
// the same rules under real concurrency.
func testChildren(t *testing.T, ns NewStore) {
	testChildrenSpawn(t, ns)
	testChildrenFanIn(t, ns)
	testChildrenEnd(t, ns)
	testChildrenPrune(t, ns)
	testChildrenRace(t, ns)
	testChildrenRetry(t, ns)
	testChildrenFeed(t, ns)
}

func testChildrenSpawn(t *testing.T, ns NewStore) {
	t.Run("SpawnAdmitsChildren", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		now := at(time.Second)
		res, err := e.spawn(l, now, "ship", children(3)...)
		e.must(err, "Spawn")
		ids := checkSpawnResult(t, "Spawn", res, 3)
		if !res.Recorded || res.Step.Name != "ship" {
			t.Errorf("Spawn: Recorded %v step %q, want true and \"ship\"", res.Recorded, res.Step.Name)
		}
		for i, c := range res.Children {
			if c.Status != store.StatusQueued {
				t.Errorf("Spawn: child %d answered %s, want queued", i, c.Status)
			}
			x := e.wantChildOf(c.ID, l.ExecutionID, "ship", store.ParentEndCancel, 1)
			if x.Tenant != acme || x.Kind != "child" || x.Status != store.StatusQueued || x.Attempt != 0 {
				t.Errorf("child %d: tenant %s kind %s status %s attempt %d, want acme child queued 0",
					i, x.Tenant, x.Kind, x.Status, x.Attempt)
			}
			wantJSON(t, fmt.Sprintf("child %d payload", i), x.Payload, mustJSON(fmt.Sprintf(`{"n":%d}`, i)))
			wantTime(t, fmt.Sprintf("child %d CreatedAt", i), x.CreatedAt, now)
		}
		p := e.get(l.ExecutionID)
		if p.ParentID != "" || p.ParentStep != "" || p.Depth != 0 {
			t.Errorf("parent: ParentID %q ParentStep %q Depth %d, want none (nobody spawned it)", p.ParentID, p.ParentStep, p.Depth)
		}
		e.wantJournal(l.ExecutionID, [2]string{"ship", string(store.SpawnStep(ids))})
		e.wantStatus(l.ExecutionID, store.StatusRunning)
		if _, err := e.heartbeat(l, at(2*time.Second), leaseFor); err != nil {
			t.Errorf("heartbeat after a spawn: %v, want the lease kept", err)
		}
		e.wantInflight(acme, 4)
	})

	t.Run("SpawnScheduledAndAbandoned", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		later := child(0)
		later.RunAt = at(time.Hour)
		ids := e.wantSpawn(l, at(time.Second), "later", store.ParentEndAbandon, later)
		x := e.wantChildOf(ids[0], l.ExecutionID, "later", store.ParentEndAbandon, 1)
		if x.Status != store.StatusScheduled {
			t.Errorf("child with a later RunAt: %s, want scheduled", x.Status)
		}
		wantTime(t, "child RunAt", x.RunAt, at(time.Hour))
		e.claimNone(acme, at(time.Minute))
		got := e.claimOne(acme, at(time.Hour))
		if got.ExecutionID != ids[0] || got.Attempt != 1 {
			t.Errorf("claim at the child's RunAt: %s attempt %d, want %s attempt 1", got.ExecutionID, got.Attempt, ids[0])
		}
		e.wantInflight(acme, 2)
	})

	t.Run("RepeatAnswersTheFirstSpawn", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		ids := e.wantSpawn(l, at(time.Second), "ship", "", children(2)...)
		first := e.claimChildren(at(2*time.Second), ids...)
		_, err := e.complete(first[0], at(3*time.Second), mustJSON(`"done"`))
		e.must(err, "Complete child 0")
		// Other items, over the bound of items even: the step answers.
		res, err := e.spawnWith(l, store.SpawnParams{Step: "ship", Items: children(5), MaxItems: 1, Now: at(4 * time.Second)})
		e.must(err, "repeat of the spawn")
		got := checkSpawnResult(t, "repeat", res, 2)
		if res.Recorded {
			t.Error("repeat of the spawn: Recorded true, want false")
		}
		if fmt.Sprint(got) != fmt.Sprint(ids) {
			t.Errorf("repeat of the spawn answers %v, want the first spawn's %v", got, ids)
		}
		if res.Children[0].Status != store.StatusSucceeded || res.Children[1].Status != store.StatusRunning {
			t.Errorf("repeat answers statuses %s and %s, want succeeded and running (as they are now)",
				res.Children[0].Status, res.Children[1].Status)
		}
		// A later attempt replays the step: its lease carries it and the
		// spawn admits nothing.
		_, err = e.release(l, at(5*time.Second))
		e.must(err, "Release")
		again := e.claimKind("flow", at(6*time.Second), 1)[l.ExecutionID]
		if again.Token == "" {
			t.Fatal("the released parent was not claimed again")
		}
		wantLeaseJournal(e, again, map[string]string{"ship": string(store.SpawnStep(ids))})
		res, err = e.spawn(again, at(7*time.Second), "ship", children(2)...)
		e.must(err, "spawn of the next attempt")
		if got := checkSpawnResult(t, "next attempt", res, 2); res.Recorded || fmt.Sprint(got) != fmt.Sprint(ids) {
			t.Errorf("next attempt's spawn: Recorded %v ids %v, want false and %v", res.Recorded, got, ids)
		}
		e.wantChildren(acme, l.ExecutionID, 10, ids...)
		e.wantInflight(acme, 2)
	})

	t.Run("StepOfAnotherKindIsInvalid", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		_, err := e.recordStep(l, at(time.Second), "ship", `{"not":"a spawn"}`)
		e.must(err, "RecordStep")
		_, err = e.spawn(l, at(2*time.Second), "ship", children(2)...)
		wantErr(t, "Spawn over a plain step", err, store.ErrInvalid)
		e.wantChildren(acme, l.ExecutionID, 10)
		e.wantInflight(acme, 1)
	})

	t.Run("InvalidSpawnChangesNothing", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		keyedChild := child(0)
		keyedChild.DedupKey = "k"
		for name, p := range map[string]store.SpawnParams{
			"no items":       {Step: "ship"},
			"dedup key":      {Step: "ship", Items: []store.Submission{keyedChild}},
			"bad end":        {Step: "ship", Items: children(1), OnParentEnd: "orphan"},
			"empty step":     {Step: "", Items: children(1)},
			"kind-less item": {Step: "ship", Items: []store.Submission{{Payload: mustJSON(`{}`)}}},
		} {
			p.Now = at(time.Second)
			_, err := e.spawnWith(l, p)
			wantErr(t, "Spawn with "+name, err, store.ErrInvalid)
		}
		e.wantJournal(l.ExecutionID)
		e.wantStatus(l.ExecutionID, store.StatusRunning)
		e.wantInflight(acme, 1)
	})

	t.Run("QuotaAllOrNothing", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme, MaxInflight: 4})
		l := e.run(acme, base, job("flow"))
		_, err := e.spawn(l, at(time.Second), "ship", children(4)...)
		wantErr(t, "Spawn of 4 with 3 slots free", err, store.ErrQuotaExceeded)
		e.wantJournal(l.ExecutionID)
		e.wantInflight(acme, 1)
		if _, err := e.heartbeat(l, at(2*time.Second), leaseFor); err != nil {
			t.Errorf("heartbeat after a refused spawn: %v, want the lease kept", err)
		}
		ids := e.wantSpawn(l, at(3*time.Second), "ship", "", children(3)...)
		e.wantChildren(acme, l.ExecutionID, 10, ids...)
		e.wantInflight(acme, 4)
		_, err = e.spawn(l, at(4*time.Second), "more", children(1)...)
		wantErr(t, "Spawn at the limit", err, store.ErrQuotaExceeded)
		e.wantInflight(acme, 4)
	})

	t.Run("BoundsRefuseAndChangeNothing", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		now := at(time.Second)
		_, err := e.spawn(l, now, "all", children(store.MaxSpawnItems+1)...)
		wantErr(t, "Spawn past MaxSpawnItems", err, store.ErrTooManyChildren)
		_, err = e.spawnWith(l, store.SpawnParams{Step: "items", Items: children(3), MaxItems: 2, Now: now})
		wantErr(t, "Spawn of 3 past MaxItems 2", err, store.ErrTooManyChildren)
		a, err := e.spawnWith(l, store.SpawnParams{Step: "a", Items: children(2), MaxChildren: 3, Now: now})
		e.must(err, "Spawn a")
		_, err = e.spawnWith(l, store.SpawnParams{Step: "b", Items: children(2), MaxChildren: 3, Now: now})
		wantErr(t, "Spawn past MaxChildren 3", err, store.ErrTooManyChildren)
		b, err := e.spawnWith(l, store.SpawnParams{Step: "b", Items: children(1), MaxChildren: 3, Now: now})
		e.must(err, "Spawn b up to MaxChildren")
		e.wantJournal(l.ExecutionID, [2]string{"a", string(a.Step.Result)}, [2]string{"b", string(b.Step.Result)})
		e.wantInflight(acme, 4)

		// Depth: the child is at depth 1; its own spawn would be depth 2.
		c := e.claimKind("child", at(2*time.Second), 1)
		var cl store.Lease
		for _, x := range c {
			cl = x
		}
		now = at(3 * time.Second)
		_, err = e.spawnWith(cl, store.SpawnParams{Step: "deep", Items: []store.Submission{job("grandchild")}, MaxDepth: 1, Now: now})
		wantErr(t, "Spawn past MaxDepth 1", err, store.ErrTooManyChildren)
		e.wantInflight(acme, 4)
		g, err := e.spawnWith(cl, store.SpawnParams{Step: "deep", Items: []store.Submission{job("grandchild")}, MaxDepth: 2, Now: now})
		e.must(err, "Spawn within MaxDepth 2")
		e.wantChildOf(g.Children[0].ID, cl.ExecutionID, "deep", store.ParentEndCancel, 2)
		e.wantInflight(acme, 5)
	})

	t.Run("JournalBoundsRefuseAndChangeNothing", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		_, err := e.recordStep(l, at(time.Second), "first", `1`)
		e.must(err, "RecordStep")
		_, err = e.spawnWith(l, store.SpawnParams{Step: "ship", Items: children(2), MaxSteps: 1, Now: at(2 * time.Second)})
		wantErr(t, "Spawn past MaxSteps", err, store.ErrTooManySteps)
		_, err = e.spawnWith(l, store.SpawnParams{Step: "ship", Items: children(2), MaxJournalBytes: 40, Now: at(2 * time.Second)})
		wantErr(t, "Spawn past MaxJournalBytes", err, store.ErrJournalTooLarge)
		e.wantJournal(l.ExecutionID, [2]string{"first", `1`})
		e.wantChildren(acme, l.ExecutionID, 10)
		e.wantInflight(acme, 1)
	})

	t.Run("StorageBudgetAllOrNothing", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.budget(4096)
		l := e.run(acme, base, job("flow"))
		big := func(i int) store.Submission {
			return store.Submission{Kind: "child", Payload: mustJSON(fmt.Sprintf(`{"n":%d,"pad":%q}`, i, strings.Repeat("x", 1500)))}
		}
		_, err := e.spawn(l, at(time.Second), "ship", big(0), big(1), big(2))
		wantErr(t, "Spawn past the storage budget", err, store.ErrStorageExceeded)
		e.wantJournal(l.ExecutionID)
		e.wantInflight(acme, 1)
		before := e.tenant(acme).StoredBytes
		ids := e.wantSpawn(l, at(2*time.Second), "ship", "", big(0), big(1))
		if after := e.tenant(acme).StoredBytes; after <= before {
			t.Errorf("StoredBytes %d after a spawn of two payloads, want more than %d", after, before)
		}
		e.wantChildren(acme, l.ExecutionID, 10, ids...)
		e.wantInflight(acme, 3)
	})

	t.Run("Fenced", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		l := e.run(acme, base, job("flow"))
		for name, p := range map[string]store.SpawnParams{
			"another token":  {ExecutionID: l.ExecutionID, Tenant: acme, Token: "not-the-token", Now: at(time.Second)},
			"another tenant": {ExecutionID: l.ExecutionID, Tenant: globex, Token: l.Token, Now: at(time.Second)},
			"expired lease":  {ExecutionID: l.ExecutionID, Tenant: acme, Token: l.Token, Now: at(leaseFor + time.Second)},
			"no such id":     {ExecutionID: "0190a6b4-0000-7000-8000-000000000000", Tenant: acme, Token: l.Token, Now: at(time.Second)},
		} {
			p.Step, p.Items = "ship", children(2)
			_, err := e.s.Spawn(e.ctx, &p)
			wantErr(t, "Spawn with "+name, err, store.ErrLeaseLost)
		}
		_, err := e.complete(l, at(2*time.Second), nil)
		e.must(err, "Complete")
		_, err = e.spawn(l, at(3*time.Second), "ship", children(2)...)
		wantErr(t, "Spawn after Complete", err, store.ErrLeaseLost)
		e.wantJournal(l.ExecutionID)
		e.wantChildren("", l.ExecutionID, 10)
		e.wantInflight(acme, 0)
		e.wantInflight(globex, 0)
	})

	t.Run("CancelRequestedParentSpawnsCancelled", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		_, err := e.cancel(acme, l.ExecutionID, at(time.Second))
		e.must(err, "Cancel")
		now := at(2 * time.Second)
		res, err := e.spawn(l, now, "ship", children(2)...)
		e.must(err, "Spawn under a cancel request")
		ids := checkSpawnResult(t, "Spawn", res, 2)
		for i, c := range res.Children {
			if c.Status != store.StatusCancelled {
				t.Errorf("child %d of a cancel-requested parent answered %s, want cancelled", i, c.Status)
			}
			e.wantCancelled(ids[i], now)
		}
		loose := e.wantSpawn(l, now, "loose", store.ParentEndAbandon, job("loose"))
		e.wantStatus(loose[0], store.StatusQueued)
		if got := e.claimKind("child", at(3*time.Second), 10); len(got) != 0 {
			t.Errorf("claimed %d children of a cancel-requested parent, want none", len(got))
		}
		e.wantInflight(acme, 2)
	})

	t.Run("ListByParentInSpawnOrder", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		l := e.run(acme, base, job("flow"))
		a := e.wantSpawn(l, at(time.Second), "a", "", children(3)...)
		e.submit(acme, at(2*time.Second), job("other"))
		e.submit(globex, at(2*time.Second), job("other"))
		b := e.wantSpawn(l, at(3*time.Second), "b", store.ParentEndAbandon, children(4)...)
		all := append(append([]string{}, a...), b...)
		for _, limit := range []int{1, 2, 3, 500} {
			e.wantChildren(acme, l.ExecutionID, limit, all...)
			e.wantChildren("", l.ExecutionID, limit, all...)
		}
		e.wantChildren(globex, l.ExecutionID, 10)
		// A grandchild lists under its own parent only.
		cl := e.claimKind("child", at(4*time.Second), 1)
		var c store.Lease
		for _, x := range cl {
			c = x
		}
		g := e.wantSpawn(c, at(5*time.Second), "g", "", job("grandchild"))
		e.wantChildren(acme, c.ExecutionID, 10, g...)
		e.wantChildren(acme, l.ExecutionID, 2, all...)
		// The other filters apply too, spawn order kept.
		var queued []string
		for _, id := range all {
			if id != c.ExecutionID {
				queued = append(queued, id)
			}
		}
		got := e.listChildren(store.ListParams{Tenant: acme, ParentID: l.ExecutionID, Status: store.StatusQueued, Limit: 2})
		var gotIDs []string
		for _, x := range got {
			gotIDs = append(gotIDs, x.ID)
		}
		if fmt.Sprint(gotIDs) != fmt.Sprint(queued) {
			t.Errorf("List ParentID, queued = %v, want %v", gotIDs, queued)
		}
		e.wantChildren(acme, "0190a6b4-0000-7000-8000-000000000000", 10)
		e.wantInflight(acme, 10)
	})

	t.Run("TenantIsolation", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		l := e.run(acme, base, job("flow"))
		ids := e.wantSpawn(l, at(time.Second), "ship", "", children(2)...)
		for _, id := range ids {
			x := e.get(id)
			if x.Tenant != acme {
				t.Errorf("child %s in tenant %s, want its parent's (acme)", id, x.Tenant)
			}
			_, err := e.s.Get(e.ctx, &store.GetParams{Tenant: globex, ID: id})
			wantErr(t, "Get of acme's child as globex", err, store.ErrNotFound)
			_, err = e.cancel(globex, id, at(2*time.Second))
			wantErr(t, "Cancel of acme's child as globex", err, store.ErrNotFound)
		}
		e.wantChildren(globex, l.ExecutionID, 10)
		_, err := e.s.Suspend(e.ctx, &store.SuspendParams{
			ExecutionID: l.ExecutionID, Tenant: globex, Token: l.Token, Step: "join", Children: "ship", Now: at(3 * time.Second),
		})
		wantErr(t, "fan-in as globex", err, store.ErrLeaseLost)
		e.wantStatus(l.ExecutionID, store.StatusRunning)
		e.wantInflight(acme, 3)
		e.wantInflight(globex, 0)
	})
}

// testChildrenFeed checks the optional store.ChangeFeed across a family:
// the executions a spawn admits, the parent a child's end resumes and the
// children a parent's end cancels are reported by the call that changed
// them, before it returns.
func testChildrenFeed(t *testing.T, ns NewStore) {
	t.Run("FeedNamesTheFamily", func(t *testing.T) {
		e := start(t, ns)
		f, ok := e.s.(store.ChangeFeed)
		if !ok {
			t.Skip("SKIP: this backend does not implement the optional store.ChangeFeed")
		}
		var mu sync.Mutex
		all := false
		got := map[string]bool{}
		stop := f.WatchChanges(func(c store.Change) {
			mu.Lock()
			defer mu.Unlock()
			if c.IDs == nil {
				all = true
			}
			for _, id := range c.IDs {
				got[id] = true
			}
		})
		defer stop()
		reported := func(what string, ids ...string) {
			t.Helper()
			mu.Lock()
			defer mu.Unlock()
			for _, id := range ids {
				if !got[id] && !all {
					t.Errorf("%s: execution %s changed and was not reported", what, id)
				}
			}
			got, all = map[string]bool{}, false
		}
		l := e.run(acme, base, job("flow"))
		ids := e.wantSpawn(l, at(time.Second), "ship", "", children(2)...)
		reported("Spawn", ids...)
		e.wantFanIn(l, at(2*time.Second), "join", "ship", 1, 0, store.StatusSuspended)
		reported("Suspend", l.ExecutionID)
		_, err := e.cancel(acme, ids[0], at(3*time.Second))
		e.must(err, "Cancel child 0")
		reported("a child's end resuming its parent", ids[0], l.ExecutionID)
		l = e.claimKind("flow", at(4*time.Second), 1)[l.ExecutionID]
		reported("Claim", l.ExecutionID)
		_, err = e.complete(l, at(5*time.Second), nil)
		e.must(err, "Complete parent")
		reported("a parent's end cancelling its child", l.ExecutionID, ids[1])
	})
}
