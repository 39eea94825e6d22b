package storetest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testChildrenRace runs I13 under real concurrency. Run it under -race.
func testChildrenRace(t *testing.T, ns NewStore) {
	t.Run("Race/ConcurrentSpawnsOfOneStepOneSet", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		const n = 16
		answers := make([]*store.SpawnResult, n)
		errs := make([]error, n)
		together(n, func(i int) {
			items := []store.Submission{child(10 * i), child(10*i + 1), child(10*i + 2)}
			answers[i], errs[i] = e.s.Spawn(e.ctx, &store.SpawnParams{
				ExecutionID: l.ExecutionID, Tenant: acme, Token: l.Token, Step: "ship", Items: items, Now: at(time.Second),
			})
		})
		recorded := 0
		var ids []string
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("Spawn %d: %v", i, errs[i])
			}
			got := checkSpawnResult(t, fmt.Sprint("Spawn ", i), answers[i], 3)
			if answers[i].Recorded {
				recorded++
			}
			if ids == nil {
				ids = got
			} else if fmt.Sprint(got) != fmt.Sprint(ids) {
				t.Errorf("I13: Spawn %d answered %v, another %v: two sets of children for one step", i, got, ids)
			}
		}
		if recorded != 1 {
			t.Errorf("I13: %d of %d concurrent spawns of one step reported Recorded, want exactly 1", recorded, n)
		}
		e.wantJournal(l.ExecutionID, [2]string{"ship", string(store.SpawnStep(ids))})
		e.wantChildren(acme, l.ExecutionID, 10, ids...)
		e.wantInflight(acme, 4)
	})

	t.Run("Race/ChildEndVsSuspendNeverLosesTheWakeUp", func(t *testing.T) {
		e := start(t, ns)
		const n = 32 // parents, each with two children ending as it suspends
		parents := make([]store.Lease, n)
		kids := make([][]string, n)
		for i := range n {
			id := e.submit(acme, base, job("flow")).ID
			parents[i] = e.claimKind("flow", base, 1)[id]
			if parents[i].Token == "" {
				t.Fatalf("parent %d not claimed", i)
			}
			kids[i] = e.wantSpawn(parents[i], at(time.Second), "ship", "", children(2)...)
		}
		leases := e.claimKind("child", at(2*time.Second), 2*n+1)
		if len(leases) != 2*n {
			t.Fatalf("claimed %d children, want %d", len(leases), 2*n)
		}
		now := at(3 * time.Second)
		answers := make([]store.Status, n)
		errs := make(chan error, 3*n)
		var wg sync.WaitGroup
		gate := make(chan struct{})
		// A quarter of the parents suspend at once, a quarter after their
		// first child ended (racing the second), a quarter after both, and
		// a quarter after the second.
		ended := make([][]chan struct{}, n)
		for i := range n {
			ended[i] = []chan struct{}{make(chan struct{}), make(chan struct{})}
		}
		for i := range n {
			wg.Go(func() {
				<-gate
				switch i % 4 {
				case 1:
					<-ended[i][0]
				case 2:
					<-ended[i][0]
					<-ended[i][1]
				case 3:
					<-ended[i][1]
				}
				x, err := e.s.Suspend(e.ctx, &store.SuspendParams{
					ExecutionID: parents[i].ExecutionID, Tenant: acme, Token: parents[i].Token,
					Step: "join", Children: "ship", Now: now,
				})
				if err != nil {
					errs <- fmt.Errorf("suspend %d: %w", i, err)
					return
				}
				answers[i] = x.Status
			})
			for j, id := range kids[i] {
				wg.Go(func() {
					<-gate
					defer close(ended[i][j])
					l := leases[id]
					if _, err := e.s.Complete(e.ctx, &store.CompleteParams{
						ExecutionID: id, Tenant: acme, Token: l.Token, Result: mustJSON(fmt.Sprint(j)), Now: now,
					}); err != nil {
						errs <- fmt.Errorf("complete child %d of %d: %w", j, i, err)
					}
				})
			}
		}
		close(gate)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for i, p := range parents {
			if answers[i] != store.StatusQueued && answers[i] != store.StatusSuspended {
				t.Errorf("parent %d: Suspend answered %s", i, answers[i])
			}
			e.wantResumed(p.ExecutionID)
			e.wantFanInStep(p.ExecutionID, "join", kids[i], statuses(2, store.StatusSucceeded), false)
		}
		if n := e.wake(at(24*time.Hour), 0); n != 0 {
			t.Errorf("I13: Wake found %d fan-in waits left suspended, want none (a wake-up was lost)", n)
		}
		resumed := e.claimKind("flow", at(4*time.Second), 2*n)
		if len(resumed) != n {
			t.Errorf("I13: claimed %d resumed parents, want each of the %d once", len(resumed), n)
		}
		for _, l := range resumed {
			if l.Attempt != 1 {
				t.Errorf("parent %s resumed at attempt %d, want 1", l.ExecutionID, l.Attempt)
			}
		}
		e.claimNone(acme, at(5*time.Second))
		e.wantInflight(acme, n)
	})

	t.Run("Race/HundredChildrenEndAtOnce", func(t *testing.T) {
		for _, count := range []int{0, 50} {
			t.Run(fmt.Sprint("Count", count), func(t *testing.T) {
				e := start(t, ns)
				l := e.run(acme, base, job("flow"))
				const n = 100
				ids := e.wantSpawn(l, at(time.Second), "ship", "", children(n)...)
				cs := e.claimChildren(at(2*time.Second), ids...)
				e.wantFanIn(l, at(3*time.Second), "join", "ship", count, 0, store.StatusSuspended)
				errs := make([]error, n)
				together(n, func(i int) {
					_, errs[i] = e.s.Complete(e.ctx, &store.CompleteParams{
						ExecutionID: ids[i], Tenant: acme, Token: cs[i].Token, Result: mustJSON(fmt.Sprint(i)), Now: at(4 * time.Second),
					})
				})
				for i, err := range errs {
					if err != nil {
						t.Fatalf("Complete child %d: %v", i, err)
					}
				}
				e.wantResumed(l.ExecutionID)
				r := e.fanInOf(l.ExecutionID, "join")
				if len(r.Children) != n || r.TimedOut {
					t.Fatalf("fan-in step: %d children, timed_out %v; want %d and false", len(r.Children), r.TimedOut, n)
				}
				ended := 0
				for i, c := range r.Children {
					if c.ExecutionID != ids[i] {
						t.Fatalf("fan-in step: child %d is %s, want %s (spawn order)", i, c.ExecutionID, ids[i])
					}
					if c.Status == store.StatusSucceeded {
						ended++
						wantJSON(t, fmt.Sprint("result of child ", i), c.Result, mustJSON(fmt.Sprint(i)))
					} else if c.Status != store.StatusRunning {
						t.Errorf("fan-in step: child %d %s, want succeeded or running", i, c.Status)
					}
				}
				want := count
				if count == 0 {
					want = n
				}
				if ended < want {
					t.Errorf("I13: the parent resumed with %d children ended, want at least %d", ended, want)
				}
				if res := e.claimKind("flow", at(5*time.Second), 5); len(res) != 1 {
					t.Errorf("I13: the parent was claimed %d times after its wait, want once", len(res))
				}
				e.wantInflight(acme, 1)
			})
		}
	})

	t.Run("Race/ChildEndsVsParentCancel", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		const n = 24
		ids := e.wantSpawn(l, at(time.Second), "ship", "", children(n)...)
		cs := e.claimChildren(at(2*time.Second), ids...)
		e.wantFanIn(l, at(3*time.Second), "join", "ship", 0, 0, store.StatusSuspended)
		errs := make([]error, n+1)
		together(n+1, func(i int) {
			if i == n {
				_, errs[i] = e.s.Cancel(e.ctx, &store.CancelParams{Tenant: acme, ID: l.ExecutionID, Now: at(4 * time.Second)})
				return
			}
			_, errs[i] = e.s.Complete(e.ctx, &store.CompleteParams{
				ExecutionID: ids[i], Tenant: acme, Token: cs[i].Token, Now: at(4 * time.Second),
			})
		})
		for i, err := range errs {
			if err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
		}
		// Either the cancel came first (the parent stays cancelled) or
		// every child ended first (the parent resumed, and the cancel
		// then cancelled the queued parent). Never a resumed cancelled one.
		x := e.get(l.ExecutionID)
		if x.Status != store.StatusCancelled {
			t.Errorf("parent after its cancel: %s, want cancelled", x.Status)
		}
		for _, id := range ids {
			st := e.get(id).Status
			if st != store.StatusSucceeded && st != store.StatusCancelled {
				t.Errorf("child %s: %s, want succeeded or cancelled", id, st)
			}
		}
		e.claimNone(acme, at(5*time.Second))
		e.wantInflight(acme, 0)
	})

	t.Run("Race/SpawnVsCancelNoChildLives", func(t *testing.T) {
		e := start(t, ns)
		const n = 16
		parents := make([]store.Lease, n)
		for i := range n {
			id := e.submit(acme, base, job("flow")).ID
			parents[i] = e.claimKind("flow", base, 1)[id]
		}
		errs := make([]error, 2*n)
		results := make([]*store.SpawnResult, n)
		together(2*n, func(i int) {
			p := parents[i/2]
			if i%2 == 0 {
				results[i/2], errs[i] = e.s.Spawn(e.ctx, &store.SpawnParams{
					ExecutionID: p.ExecutionID, Tenant: acme, Token: p.Token, Step: "ship", Items: children(3), Now: at(time.Second),
				})
				return
			}
			_, errs[i] = e.s.Cancel(e.ctx, &store.CancelParams{Tenant: acme, ID: p.ExecutionID, Now: at(time.Second)})
		})
		for i, err := range errs {
			if err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
		}
		for i, res := range results {
			for _, c := range checkSpawnResult(t, fmt.Sprint("Spawn ", i), res, 3) {
				e.wantCancelled(c, at(time.Second))
			}
		}
		if got := e.claimKind("child", at(2*time.Second), 100); len(got) != 0 {
			t.Errorf("I13: claimed %d children of cancelled parents, want none", len(got))
		}
		e.wantInflight(acme, n)
	})

	ends := []struct {
		name string
		end  func(e *env, l store.Lease, now time.Time) error
	}{
		{"Cancel", func(e *env, l store.Lease, now time.Time) error {
			_, err := e.s.Cancel(e.ctx, &store.CancelParams{Tenant: acme, ID: l.ExecutionID, Now: now})
			return err
		}},
		{"Complete", func(e *env, l store.Lease, now time.Time) error {
			_, err := e.s.Complete(e.ctx, &store.CompleteParams{ExecutionID: l.ExecutionID, Tenant: acme, Token: l.Token, Now: now})
			return err
		}},
		{"Fail", func(e *env, l store.Lease, now time.Time) error {
			_, err := e.s.Fail(e.ctx, &store.FailParams{ExecutionID: l.ExecutionID, Tenant: acme, Token: l.Token, Error: "x", Now: now})
			return err
		}},
		{"ForceDelete", func(e *env, l store.Lease, now time.Time) error {
			return e.s.Delete(e.ctx, &store.DeleteParams{Tenant: acme, ID: l.ExecutionID, Force: true, Now: now})
		}},
	}
	for _, c := range ends {
		t.Run("Race/NoChildClaimedAfterParent"+c.name, func(t *testing.T) {
			e := start(t, ns)
			const rounds, n, workers = 4, 40, 4
			for round := range rounds {
				now := at(time.Duration(round) * time.Minute)
				id := e.submit(acme, now, job("flow")).ID
				l := e.claimKind("flow", now, 1)[id]
				if l.Token == "" {
					t.Fatalf("round %d: parent not claimed", round)
				}
				ids := e.wantSpawn(l, now, "ship", "", children(n)...)
				var ended atomic.Bool
				var late atomic.Int64
				errs := make(chan error, workers+1)
				var wg sync.WaitGroup
				gate := make(chan struct{})
				for w := range workers {
					wg.Go(func() {
						<-gate
						for range 2 * n {
							after := ended.Load()
							res, err := e.s.Claim(e.ctx, &store.ClaimParams{
								WorkerID: fmt.Sprint("w", w), Tenant: acme, Kinds: []string{"child"}, Max: 1,
								LeaseDuration: time.Hour, Now: now,
							})
							if err != nil {
								errs <- err
								return
							}
							if after && len(res.Leases) > 0 {
								late.Add(int64(len(res.Leases)))
							}
							if after {
								return
							}
						}
					})
				}
				wg.Go(func() {
					<-gate
					time.Sleep(time.Millisecond)
					if err := c.end(e, l, now); err != nil {
						errs <- err
					}
					ended.Store(true)
				})
				close(gate)
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Fatal(err)
				}
				if k := late.Load(); k > 0 {
					t.Errorf("I13: round %d: %d children claimed after their parent's %s answered", round, k, c.name)
				}
				for _, id := range ids {
					x, err := e.s.Get(e.ctx, &store.GetParams{ID: id})
					switch {
					case c.name == "ForceDelete":
						if err == nil {
							t.Errorf("round %d: child %s (%s) outlived its parent's force delete", round, id, x.Status)
						}
					case err != nil:
						t.Fatalf("Get child %s: %v", id, err)
					case x.Status == store.StatusCancelled:
					case x.Status == store.StatusRunning && x.CancelRequested:
					default:
						t.Errorf("round %d: child %s after its parent's %s: %s (CancelRequested %v), want cancelled",
							round, id, c.name, x.Status, x.CancelRequested)
					}
				}
				if got := e.claimKind("child", now.Add(time.Second), 2*n); len(got) != 0 {
					t.Errorf("round %d: %d children claimable after their parent's end", round, len(got))
				}
			}
			CheckInflight(t, e.s, acme)
		})
	}
}
