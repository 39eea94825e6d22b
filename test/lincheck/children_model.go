package lincheck

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/latch-run/latch/store"
)

// The model of children (store/children.go, I13): Spawn admits a spawn's
// children, all or none, once per (parent, step); a fan-in wait (Suspend
// with Children) ends, once, in the operation whose child's end makes its
// condition hold; a parent's end cancels its children spawned with cancel
// in that same operation, so none of them is claimed after it.

// fanInStep renders a fan-in wait's step result as the model compares it:
// every child in spawn order with its id and status, its result when it
// succeeded and its error when it failed (what a child's end wrote; what a
// cancelled or retried child keeps of an earlier attempt is the backend's
// to choose), and whether a timeout ended the wait.
func fanInStep(children []store.FanInChild, timedOut bool) string {
	type child struct {
		ID     string          `json:"execution_id"`
		Status store.Status    `json:"status"`
		Result json.RawMessage `json:"result,omitempty"`
		Error  string          `json:"error,omitempty"`
	}
	out := struct {
		Children []child `json:"children"`
		TimedOut bool    `json:"timed_out"`
	}{Children: make([]child, len(children)), TimedOut: timedOut}
	for i, c := range children {
		out.Children[i] = child{ID: c.ExecutionID, Status: c.Status}
		switch c.Status {
		case store.StatusSucceeded:
			out.Children[i].Result = json.RawMessage(canonical(c.Result))
		case store.StatusFailed:
			out.Children[i].Error = c.Error
		}
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// stepResult is a step's result as the model compares it: a fan-in wait's
// through fanInStep, any other canonical.
func stepResult(raw []byte) string {
	var probe struct {
		Children []json.RawMessage `json:"children"`
	}
	if json.Unmarshal(raw, &probe) == nil && len(probe.Children) > 0 && strings.HasPrefix(string(probe.Children[0]), "{") {
		var r store.FanInResult
		if err := json.Unmarshal(raw, &r); err == nil {
			return fanInStep(r.Children, r.TimedOut)
		}
	}
	return canonical(raw)
}

// ChildOut is one child in a Spawn's answer.
type ChildOut struct {
	ID     string
	Status store.Status
}

// spawnIDs returns the children of x's spawn step, if step is a spawn's.
func (s *State) spawnIDs(id, step string) ([]string, bool) {
	st, ok := s.Flows[id].step(step)
	if !ok {
		return nil, false
	}
	return store.ParseSpawnStep(json.RawMessage(st.Result))
}

// fanInChildren is the fan-in step of ids as they are now.
func (s *State) fanInChildren(ids []string) (string, int) {
	kids := make([]store.FanInChild, len(ids))
	ended := 0
	for i, id := range ids {
		c, ok := s.Execs[id]
		switch {
		case !ok:
			kids[i] = store.FanInChild{ExecutionID: id, Status: store.StatusDeleted}
			ended++
			continue
		case c.Status.Terminal():
			ended++
		}
		kids[i] = store.FanInChild{ExecutionID: id, Status: c.Status}
		switch c.Status {
		case store.StatusSucceeded:
			kids[i].Result = json.RawMessage(`{"ok":true}`) // Do's Complete
		case store.StatusFailed:
			kids[i].Error = "boom" // Do's Fail
		}
	}
	return fanInStep(kids, false), ended
}

// fenced is fence for the operations whose refusals come after it: x when
// in carries x's current lease (out.Err is the caller's to check), else
// the check that the answer is CodeLeaseLost.
func (s *State) fenced(in Input, out Output) (*Exec, error) {
	x, ok := s.lookup(in.Tenant, in.ID)
	if !ok || x.Status != store.StatusRunning || x.Token != in.Token || in.Token == "" || x.LeaseExpires < in.Now {
		return nil, wantCode(out.Err, CodeLeaseLost)
	}
	return &x, nil
}

// spawn checks a Spawn's answer (store.Store.Spawn).
func (s *State) spawn(in Input, out Output) error {
	x, err := s.fenced(in, out)
	if x == nil {
		return err
	}
	if st, ok := s.Flows[x.ID].step(in.Name); ok {
		ids, isSpawn := store.ParseSpawnStep(json.RawMessage(st.Result))
		if !isSpawn {
			return wantCode(out.Err, CodeInvalid)
		}
		if err := wantCode(out.Err, OK); err != nil {
			return err
		}
		// A repeat: the recorded children as they are now, none admitted.
		if out.Recorded || out.Step != st {
			return fmt.Errorf("repeated spawn %s answered %+v recorded=%t, want %+v recorded=false", in.Name, out.Step, out.Recorded, st)
		}
		want := make([]ChildOut, len(ids))
		for i, id := range ids {
			want[i] = ChildOut{ID: id, Status: store.StatusDeleted}
			if c, ok := s.Execs[id]; ok {
				want[i].Status = c.Status
			}
		}
		if !slices.Equal(out.Spawned, want) {
			return fmt.Errorf("repeated spawn %s answered children %v, want %v", in.Name, out.Spawned, want)
		}
		return nil
	}
	ends := store.ParentEndCancel
	if in.Abandon {
		ends = store.ParentEndAbandon
	}
	stillborn := x.CancelRequested && ends == store.ParentEndCancel
	live := len(in.Items)
	if stillborn {
		live = 0
	}
	t := s.Tenants[x.Tenant]
	if t.Inflight+live > t.MaxInflight {
		if err := wantCode(out.Err, CodeQuota); err != nil {
			return fmt.Errorf("%w (a spawn of %d, tenant at %d of %d)", err, live, t.Inflight, t.MaxInflight)
		}
		return nil
	}
	if err := wantCode(out.Err, OK); err != nil {
		return err
	}
	if !out.Recorded || len(out.Spawned) != len(in.Items) {
		return fmt.Errorf("new spawn %s answered recorded=%t with %d children, want recorded with %d",
			in.Name, out.Recorded, len(out.Spawned), len(in.Items))
	}
	ids := make([]string, len(in.Items))
	for i, sub := range in.Items {
		id := out.Spawned[i].ID
		if _, dup := s.Execs[id]; dup || id == "" || slices.Contains(ids[:i], id) {
			return fmt.Errorf("spawn %s: child %d reuses id %q", in.Name, i, id)
		}
		ids[i] = id
		payload := sub.Payload
		if payload == "" {
			payload = "{}"
		}
		c := Exec{View: View{ID: id, Tenant: x.Tenant, Kind: sub.Kind, Payload: payload, Priority: sub.Priority,
			Status: store.StatusQueued, MaxAttempts: sub.MaxAttempts, RunAt: in.Now, ParentID: x.ID, ParentStep: in.Name},
			OnParentEnd: ends}
		if c.MaxAttempts <= 0 {
			c.MaxAttempts = store.DefaultMaxAttempts
		}
		if stillborn {
			c.Status, c.FinishedAt = store.StatusCancelled, in.Now
		}
		if out.Spawned[i].Status != c.Status {
			return fmt.Errorf("spawn %s: child %d answered %s, want %s", in.Name, i, out.Spawned[i].Status, c.Status)
		}
		s.Execs[id] = c
	}
	t.Inflight += live
	s.Tenants[x.Tenant] = t
	want := StepOut{Name: in.Name, Result: string(store.SpawnStep(ids)), RecordedAt: in.Now, Attempt: x.Attempt}
	if out.Step != want {
		return fmt.Errorf("spawn %s recorded %+v, want %+v", in.Name, out.Step, want)
	}
	s.record(x, in.Name, want.Result, in.Now)
	return nil
}

// fanIn checks a fan-in wait's answer (Suspend with Children).
func (s *State) fanIn(in Input, out Output) error {
	x, err := s.fenced(in, out)
	if x == nil {
		return err
	}
	switch _, recorded := s.Flows[x.ID].step(in.Name); {
	case x.CancelRequested:
		if err := wantCode(out.Err, OK); err != nil {
			return err
		}
		s.finish(x, store.StatusCancelled, in.Now)
		return wantView(out.X, x.View)
	case recorded:
		if err := wantCode(out.Err, OK); err != nil {
			return err
		}
		s.resume(x, in.Now)
		return wantView(out.X, x.View)
	}
	ids, ok := s.spawnIDs(x.ID, in.Children)
	if !ok || in.Count > len(ids) {
		return wantCode(out.Err, CodeInvalid)
	}
	if err := wantCode(out.Err, OK); err != nil {
		return err
	}
	result, ended := s.fanInChildren(ids)
	if store.ChildrenWaitHolds(ended, len(ids), in.Count) {
		s.record(x, in.Name, result, in.Now)
		s.resume(x, in.Now)
		return wantView(out.X, x.View)
	}
	x.Status, x.Token, x.LeaseExpires, x.Resume = store.StatusSuspended, "", 0, false
	x.SuspendStep, x.WaitingFor, x.WakeAt, x.WaitCount = in.Name, store.ChildrenWaitFor(in.Children), 0, in.Count
	s.Execs[x.ID] = *x
	return wantView(out.X, x.View)
}

// childEnded is the hook of c's end (terminal, or deleted in flight): its
// parent's fan-in wait on c's spawn ends if its condition now holds.
func (s *State) childEnded(c Exec, now int64) {
	if c.ParentID == "" {
		return
	}
	p, ok := s.Execs[c.ParentID]
	if !ok || p.Status != store.StatusSuspended || p.WaitingFor != store.ChildrenWaitFor(c.ParentStep) {
		return
	}
	ids, _ := s.spawnIDs(p.ID, c.ParentStep)
	result, ended := s.fanInChildren(ids)
	if !store.ChildrenWaitHolds(ended, len(ids), p.WaitCount) {
		return
	}
	s.record(&p, p.SuspendStep, result, now)
	s.resume(&p, now)
}

// children returns the ids of parent's children, sorted (the order of a
// cascade changes nothing of its outcome).
func (s *State) children(parent string) []string {
	var ids []string
	for id, c := range s.Execs {
		if c.ParentID == parent {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// cancelChildren is a parent's end for its children spawned with cancel
// that are in flight: a queued, scheduled or suspended one is cancelled at
// now (finish, which cascades), a running one gets its cancel requested
// and its own children cancelled in turn.
func (s *State) cancelChildren(parent string, now int64) {
	for _, id := range s.children(parent) {
		c := s.Execs[id]
		if c.OnParentEnd != store.ParentEndCancel || !c.Status.Inflight() {
			continue
		}
		if c.Status != store.StatusRunning {
			s.finish(&c, store.StatusCancelled, now)
			continue
		}
		if c.CancelRequested {
			continue
		}
		c.CancelRequested = true
		s.Execs[id] = c
		s.cancelChildren(id, now)
	}
}

// deleteFamily removes x with its children and theirs; a child spawned
// with abandon still in flight stays and loses its parent.
func (s *State) deleteFamily(x Exec) {
	for _, id := range s.children(x.ID) {
		c := s.Execs[id]
		if c.Status.Inflight() && c.OnParentEnd == store.ParentEndAbandon {
			c.ParentID, c.ParentStep = "", ""
			s.Execs[id] = c
			continue
		}
		s.deleteFamily(c)
	}
	s.remove(x)
}

// familyString describes x's family links for the state's description.
func familyString(x Exec) string {
	var b strings.Builder
	if x.ParentID != "" {
		fmt.Fprintf(&b, "<%s.%s", short(x.ParentID), x.ParentStep)
		if x.OnParentEnd == store.ParentEndAbandon {
			b.WriteString("(abandon)")
		}
	}
	if x.WaitCount > 0 {
		fmt.Fprintf(&b, "count%d", x.WaitCount)
	}
	return b.String()
}
