package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testChildrenRetry: Retry of a failed child (I13, store/children.go). A
// child spawned with cancel whose parent has ended, or has its cancel
// requested, is cancelled by the retry instead of queued, so that no
// worker claims it; an abandoned child, or a child of a live parent,
// retries as any execution does.
func testChildrenRetry(t *testing.T, ns NewStore) {
	ends := []struct {
		name   string
		end    func(e *env, l store.Lease, now time.Time)
		parent store.Status
		live   int // in flight once the parent ended: the parent itself
	}{
		{"ParentCompleted", func(e *env, l store.Lease, now time.Time) {
			_, err := e.complete(l, now, mustJSON(`1`))
			e.must(err, "Complete parent")
		}, store.StatusSucceeded, 0},
		{"ParentCancelRequested", func(e *env, l store.Lease, now time.Time) {
			_, err := e.cancel(acme, l.ExecutionID, now)
			e.must(err, "Cancel running parent")
		}, store.StatusRunning, 1},
	}
	for _, c := range ends {
		t.Run("Retry/"+c.name, func(t *testing.T) {
			e := start(t, ns)
			l := e.run(acme, base, job("flow"))
			kids := e.wantSpawn(l, at(time.Second), "ship", store.ParentEndCancel, children(2)...)
			side := e.wantSpawn(l, at(time.Second), "side", store.ParentEndAbandon, child(9))[0]
			for _, cl := range e.claimChildren(at(2*time.Second), kids[0], kids[1], side) {
				_, err := e.fail(cl, at(3*time.Second), "boom", false, 0)
				e.must(err, "Fail child "+cl.ExecutionID)
			}
			c.end(e, l, at(4*time.Second))
			e.wantStatus(l.ExecutionID, c.parent)
			e.wantInflight(acme, c.live)

			now := at(5 * time.Second)
			for _, id := range kids {
				x, err := e.s.Retry(e.ctx, &store.RetryParams{Tenant: acme, ID: id, Now: now})
				e.must(err, "Retry of cancel child "+id)
				wantFinished(t, "Retry's answer for cancel child "+id, x, store.StatusCancelled, now)
				e.wantCancelled(id, now)
				if g := e.get(id); g.Error != "boom" {
					t.Errorf("cancel child %s: Error %q, want the failure's \"boom\" kept", id, g.Error)
				}
				_, err = e.s.Retry(e.ctx, &store.RetryParams{Tenant: acme, ID: id, Now: now})
				wantErr(t, "second Retry of cancel child "+id, err, store.ErrNotFailed)
			}
			e.wantInflight(acme, c.live) // no quota slot taken

			x, err := e.s.Retry(e.ctx, &store.RetryParams{Tenant: acme, ID: side, Now: now})
			e.must(err, "Retry of the abandoned child")
			if x.Status != store.StatusQueued || x.FinishedAt != nil {
				t.Errorf("Retry of the abandoned child: status %s FinishedAt %v, want queued and none", x.Status, x.FinishedAt)
			}
			e.wantInflight(acme, c.live+1)
			got := e.claimKind("child", at(6*time.Second), 10)
			if _, ok := got[side]; !ok || len(got) != 1 {
				t.Errorf("Claim after the retries handed out %d children (abandoned one among them: %v), want only the abandoned one", len(got), ok)
			}
			for _, id := range kids {
				e.wantCancelled(id, now)
			}
		})
	}

	// A retry racing its parent's end: whichever comes first, the child
	// ends cancelled and no claim hands it out (the retry before the end
	// queues it and the end cancels it; the end before, the retry cancels
	// it).
	t.Run("Retry/RaceWithParentEnd", func(t *testing.T) {
		e := start(t, ns)
		const n = 16
		parents := make([]store.Lease, n)
		kids := make([]string, n)
		for i := range n {
			id := e.submit(acme, base, job("flow")).ID
			parents[i] = e.claimKind("flow", base, 1)[id]
			if parents[i].Token == "" {
				t.Fatalf("parent %d not claimed", i)
			}
			kids[i] = e.wantSpawn(parents[i], at(time.Second), "ship", store.ParentEndCancel, child(i))[0]
		}
		for _, cl := range e.claimChildren(at(2*time.Second), kids...) {
			_, err := e.fail(cl, at(3*time.Second), "boom", false, 0)
			e.must(err, "Fail child "+cl.ExecutionID)
		}
		now := at(4 * time.Second)
		errs := make([]error, 2*n)
		answers := make([]*store.Execution, n)
		together(2*n, func(i int) {
			if i%2 == 0 {
				_, errs[i] = e.complete(parents[i/2], now, mustJSON(`1`))
				return
			}
			answers[i/2], errs[i] = e.s.Retry(e.ctx, &store.RetryParams{Tenant: acme, ID: kids[i/2], Now: now})
		})
		for i, err := range errs {
			e.must(err, fmt.Sprintf("operation %d (Complete of a parent or Retry of its child)", i))
		}
		for i, x := range answers {
			if x.Status != store.StatusQueued && x.Status != store.StatusCancelled {
				t.Errorf("Retry of child %d answered %s, want queued (before its parent's end) or cancelled (after)", i, x.Status)
			}
			e.wantCancelled(kids[i], now)
		}
		if got := e.claimKind("child", at(5*time.Second), 2*n); len(got) != 0 {
			t.Errorf("I13: a claim after the race handed out %d cancel children of ended parents", len(got))
		}
		e.wantInflight(acme, 0)
	})

	t.Run("Retry/ChildOfAWaitingParent", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		ids := e.wantSpawn(l, at(time.Second), "ship", store.ParentEndCancel, children(2)...)
		cs := e.claimChildren(at(2*time.Second), ids...)
		_, err := e.fail(cs[0], at(3*time.Second), "boom", false, 0)
		e.must(err, "Fail child 0")
		e.wantFanIn(l, at(4*time.Second), "join", "ship", 0, 0, store.StatusSuspended)
		x, err := e.s.Retry(e.ctx, &store.RetryParams{Tenant: acme, ID: ids[0], Now: at(5 * time.Second)})
		e.must(err, "Retry child 0 of a suspended parent")
		if x.Status != store.StatusQueued {
			t.Fatalf("Retry child 0 of a live parent: status %s, want queued", x.Status)
		}
		e.wantSuspended(l.ExecutionID, "join", store.ChildrenWaitFor("ship"), time.Time{})
		e.wantInflight(acme, 3)
		_, err = e.complete(cs[1], at(6*time.Second), mustJSON(`1`))
		e.must(err, "Complete child 1")
		// Child 0 is in flight again: the wait for both still holds.
		e.wantSuspended(l.ExecutionID, "join", store.ChildrenWaitFor("ship"), time.Time{})
		again := e.claimChildren(at(7*time.Second), ids[0])[0]
		_, err = e.complete(again, at(8*time.Second), mustJSON(`0`))
		e.must(err, "Complete the retried child 0")
		e.wantResumed(l.ExecutionID)
		e.wantFanInStep(l.ExecutionID, "join", ids, statuses(2, store.StatusSucceeded), false)
		e.wantInflight(acme, 1)
	})
}
