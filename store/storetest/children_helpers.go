package storetest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// The env's calls of the children operations (store/children.go). Like
// the flow calls they return the error for the test to judge; the ones
// named want* fail the test on an unexpected error.

// child is a submission of kind "child" with payload {"n":i}, so that
// every child of a spawn is told apart by its payload.
func child(i int) store.Submission {
	return store.Submission{Kind: "child", Payload: mustJSON(fmt.Sprintf(`{"n":%d}`, i))}
}

// children returns n child submissions, numbered from 0.
func children(n int) []store.Submission {
	out := make([]store.Submission, n)
	for i := range out {
		out[i] = child(i)
	}
	return out
}

// spawnWith calls Spawn under l with the fields of p the lease does not
// give.
func (e *env) spawnWith(l store.Lease, p store.SpawnParams) (*store.SpawnResult, error) {
	p.ExecutionID, p.Tenant, p.Token = l.ExecutionID, l.Tenant, l.Token
	return e.s.Spawn(e.ctx, &p)
}

func (e *env) spawn(l store.Lease, now time.Time, step string, items ...store.Submission) (*store.SpawnResult, error) {
	return e.spawnWith(l, store.SpawnParams{Step: step, Items: items, Now: now})
}

// wantSpawn spawns items under step, which must be recorded now, and
// returns the children's ids in spawn order.
func (e *env) wantSpawn(l store.Lease, now time.Time, step string, ends store.ParentEnd, items ...store.Submission) []string {
	e.t.Helper()
	res, err := e.spawnWith(l, store.SpawnParams{Step: step, Items: items, OnParentEnd: ends, Now: now})
	e.must(err, "Spawn "+step)
	ids := checkSpawnResult(e.t, "Spawn "+step, res, len(items))
	if !res.Recorded {
		e.t.Fatalf("Spawn %s: Recorded false on the first spawn of the step", step)
	}
	return ids
}

// checkSpawnResult checks the shape of a spawn's answer: n children with
// distinct ids, and a step whose result is SpawnStep of those ids.
func checkSpawnResult(t testing.TB, what string, res *store.SpawnResult, n int) []string {
	t.Helper()
	if res == nil {
		t.Fatalf("%s: nil result and no error", what)
	}
	if len(res.Children) != n {
		t.Fatalf("%s: %d children, want %d", what, len(res.Children), n)
	}
	ids := make([]string, n)
	seen := map[string]bool{}
	for i, c := range res.Children {
		if c.ID == "" || seen[c.ID] {
			t.Fatalf("%s: child %d has id %q (empty or repeated)", what, i, c.ID)
		}
		seen[c.ID] = true
		ids[i] = c.ID
	}
	got, ok := store.ParseSpawnStep(res.Step.Result)
	if !ok {
		t.Fatalf("%s: step result %s is not a spawn's", what, res.Step.Result)
	}
	if fmt.Sprint(got) != fmt.Sprint(ids) {
		t.Errorf("%s: step records %v, answer lists %v", what, got, ids)
	}
	return ids
}

// fanIn suspends l until count of the children of spawn step children
// have ended (0 = all), under step, with timeout (0 = none).
func (e *env) fanIn(l store.Lease, now time.Time, step, children string, count int, timeout time.Duration) (*store.Execution, error) {
	return e.s.Suspend(e.ctx, &store.SuspendParams{
		ExecutionID: l.ExecutionID, Tenant: l.Tenant, Token: l.Token, Step: step,
		Children: children, Count: count, Timeout: timeout, Now: now,
	})
}

// wantFanIn suspends as fanIn does and asserts the status it answers.
func (e *env) wantFanIn(l store.Lease, now time.Time, step, children string, count int, timeout time.Duration, want store.Status) {
	e.t.Helper()
	x, err := e.fanIn(l, now, step, children, count, timeout)
	e.must(err, "Suspend (fan-in) "+step)
	if x.Status != want {
		e.t.Fatalf("fan-in %s on %s: status %s, want %s", step, children, x.Status, want)
	}
}

// fanInOf reads the fan-in step name of execution id.
func (e *env) fanInOf(id, name string) *store.FanInResult {
	e.t.Helper()
	for _, s := range e.steps(id) {
		if s.Name != name {
			continue
		}
		var r store.FanInResult
		if err := json.Unmarshal(s.Result, &r); err != nil {
			e.t.Fatalf("fan-in step %s of %s: result %s: %v", name, id, s.Result, err)
		}
		// The contract's shape: every child has each of execution_id,
		// status, result and error, null when it has none.
		var raw struct {
			Children []map[string]json.RawMessage `json:"children"`
		}
		if err := json.Unmarshal(s.Result, &raw); err != nil {
			e.t.Fatalf("fan-in step %s of %s: result %s: %v", name, id, s.Result, err)
		}
		for i, c := range raw.Children {
			for _, k := range []string{"execution_id", "status", "result", "error"} {
				if _, ok := c[k]; !ok {
					e.t.Errorf("fan-in step %s of %s: child %d has no %q (want it, null when none): %s", name, id, i, k, s.Result)
				}
			}
		}
		return &r
	}
	e.t.Fatalf("execution %s has no step %q", id, name)
	return nil
}

// wantFanInStep asserts the fan-in step name of id: the children ids in
// spawn order with the given statuses, and TimedOut. Each child's result
// and error must be the child's as it is now (when it still exists).
func (e *env) wantFanInStep(id, name string, ids []string, statuses []store.Status, timedOut bool) *store.FanInResult {
	e.t.Helper()
	r := e.fanInOf(id, name)
	if r.TimedOut != timedOut {
		e.t.Errorf("fan-in step %s of %s: timed_out %v, want %v", name, id, r.TimedOut, timedOut)
	}
	if len(r.Children) != len(ids) {
		e.t.Fatalf("fan-in step %s of %s: %d children, want %d", name, id, len(r.Children), len(ids))
	}
	for i, c := range r.Children {
		if c.ExecutionID != ids[i] {
			e.t.Errorf("fan-in step %s: child %d is %s, want %s (spawn order)", name, i, c.ExecutionID, ids[i])
			continue
		}
		if c.Status != statuses[i] {
			e.t.Errorf("fan-in step %s: child %d status %s, want %s", name, i, c.Status, statuses[i])
		}
		if c.Status == store.StatusDeleted {
			continue
		}
		x := e.get(c.ExecutionID)
		if c.Status == x.Status {
			wantJSON(e.t, fmt.Sprintf("fan-in step %s: child %d result", name, i), c.Result, x.Result)
			if c.Error != x.Error {
				e.t.Errorf("fan-in step %s: child %d error %q, want %q", name, i, c.Error, x.Error)
			}
		}
	}
	return r
}

// statuses returns n copies of st.
func statuses(n int, st store.Status) []store.Status {
	out := make([]store.Status, n)
	for i := range out {
		out[i] = st
	}
	return out
}

// listChildren pages through the children of parent (Limit per page, with
// p's other filters) and returns them; the order is the test's to check.
func (e *env) listChildren(p store.ListParams) []*store.Execution {
	e.t.Helper()
	return listAll(e.t, e.s, p)
}

// wantChildren asserts that List by ParentID answers exactly ids, in that
// order (spawn order), one page of limit at a time.
func (e *env) wantChildren(tenant, parent string, limit int, ids ...string) {
	e.t.Helper()
	got := e.listChildren(store.ListParams{Tenant: tenant, ParentID: parent, Limit: limit})
	gotIDs := make([]string, len(got))
	for i, x := range got {
		gotIDs[i] = x.ID
	}
	if fmt.Sprint(gotIDs) != fmt.Sprint(ids) {
		e.t.Errorf("List ParentID %s (limit %d) = %v, want %v (spawn order)", parent, limit, gotIDs, ids)
	}
}

// claimKind claims up to max executions of kind and returns their leases
// by execution id.
func (e *env) claimKind(kind string, now time.Time, max int) map[string]store.Lease {
	e.t.Helper()
	out := map[string]store.Lease{}
	for _, l := range e.claim(store.ClaimParams{Tenant: acme, Kinds: []string{kind}, Max: max, Now: now}) {
		out[l.ExecutionID] = l
	}
	return out
}

// claimChildren claims every one of ids (they must all be ready, and be
// the only ready executions of kind "child") and returns their leases in
// the order of ids.
func (e *env) claimChildren(now time.Time, ids ...string) []store.Lease {
	e.t.Helper()
	got := e.claimKind("child", now, len(ids)+1)
	out := make([]store.Lease, len(ids))
	for i, id := range ids {
		l, ok := got[id]
		if !ok {
			e.t.Fatalf("claim of %d children: %s not claimed (got %d leases)", len(ids), id, len(got))
		}
		out[i] = l
	}
	if len(got) != len(ids) {
		e.t.Fatalf("claim of %d children handed out %d", len(ids), len(got))
	}
	return out
}

// wantChildOf asserts a child's family fields.
func (e *env) wantChildOf(id, parent, step string, ends store.ParentEnd, depth int) *store.Execution {
	e.t.Helper()
	x := e.get(id)
	if x.ParentID != parent || x.ParentStep != step || x.OnParentEnd != ends || x.Depth != depth {
		e.t.Errorf("child %s: parent %q step %q on_parent_end %q depth %d, want %q %q %q %d",
			id, x.ParentID, x.ParentStep, x.OnParentEnd, x.Depth, parent, step, ends, depth)
	}
	return x
}

// wantCancelled asserts that id was cancelled at now, its quota slot freed.
func (e *env) wantCancelled(id string, now time.Time) {
	e.t.Helper()
	wantFinished(e.t, "execution "+id, e.get(id), store.StatusCancelled, now)
}

// wantCancelRequested asserts that id is running with its cancel requested.
func (e *env) wantCancelRequested(id string) {
	e.t.Helper()
	x := e.wantStatus(id, store.StatusRunning)
	if !x.CancelRequested {
		e.t.Errorf("running %s: CancelRequested false, want true (its parent ended)", id)
	}
}
