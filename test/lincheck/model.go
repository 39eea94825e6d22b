package lincheck

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/latch-run/latch/store"
)

// defaultLease is the lease the contract gives a zero LeaseDuration.
const defaultLease = int64(30 * time.Second)

// TenantState is a tenant's settings and its quota counter.
type TenantState struct {
	MaxInflight int
	Inflight    int
	DedupTTL    int64 // ns
	Retention   int64 // ns
	// Turn orders the tenants a claim serves (I12): smallest first, ties
	// by name. A claim gives each tenant it served a turn past every
	// other's, in the order it last served them (State.TurnSeq counts).
	Turn int64
}

// Exec is the model's execution: what the store shows, plus the current
// lease token (known to the model from the Claim that issued it) and
// whether its next (or current) run resumes a flow: queued again by the
// flow's own progress (Suspend, Signal, Wake), so its claim counts no start.
type Exec struct {
	View
	Token  string
	Resume bool
	// A child's OnParentEnd, and a fan-in wait's Count while suspended on
	// one (children_model.go).
	OnParentEnd store.ParentEnd
	WaitCount   int
}

type tenantKey struct{ tenant, key string }

// KeyState is a dedup mapping: (tenant, key) -> execution until Expires.
type KeyState struct {
	ID      string
	Expires int64
}

// State is the sequential specification of the store contract (store.Store
// and docs/api.md) for a set of tenants. Apply checks one operation's answer
// against it and advances it; the state is then exactly what a correct store
// holds after the same sequence of operations.
//
// Freedom the contract leaves to a backend is accepted, never pinned: the
// ids and lease tokens it mints (learned from its answers), and which of
// several equally ranked ready executions a Claim takes.
//
// Concurrent is that freedom under concurrency (store.Store.Claim): a claim
// may pass by executions that concurrent operations hold, so it may hand out
// any of the executions ready at its linearization point, up to Max, in any
// order — possibly fewer than Max, possibly none. Every one it hands out
// must still be ready, match its filters and be handed out once. Check sets
// it (its histories are concurrent); Property, whose single client has no
// concurrent operation, does not, and requires the exact count and order.
type State struct {
	Tenants    map[string]TenantState
	Execs      map[string]Exec
	Keys       map[tenantKey]KeyState
	Flows      map[string]Flow // execution id -> its journal and signals; absent when empty
	TurnSeq    int64           // the largest turn given
	Concurrent bool
	Hits       HitCounting
	// Events (event_model.go): the retained events in publish order (never
	// changed in place), the first answers of publish idempotency keys, the
	// events each execution consumed (slices never changed in place), the
	// key and since of each event wait, and the history's subscriptions.
	Events   []EventIn
	Idem     map[tenantKey]PublishOut
	Consumed map[string][]string
	EvWaits  map[string]EventWait
	Subs     []SubSpec
}

// HitCounting says whether the store under test counts dedup hits
// (Execution.DedupHits and LastDedupHitAt): decided by its first
// deduplicated answer, which shows the hit if it does. Until then no
// execution has a hit either way. A store that counts is then held to the
// exact count and time of every hit, in every answer that shows the
// execution; one whose first deduplicated answer shows none must show none
// ever after (a count that appears later is a difference). Every backend
// of this repository counts; the tolerance is for the checker's own
// deliberately racy wrappers (racy_test.go), which answer a duplicate
// from a read and count nothing.
type HitCounting uint8

const (
	HitsUnknown HitCounting = iota // no deduplicated answer yet
	HitsCounted
	HitsNotCounted
)

// NewState returns the state of a store holding the given tenants and no
// executions. Zero settings take the store defaults.
func NewState(tenants ...store.CreateTenantParams) *State {
	s := &State{Tenants: map[string]TenantState{}, Execs: map[string]Exec{}, Keys: map[tenantKey]KeyState{},
		Flows: map[string]Flow{}, Idem: map[tenantKey]PublishOut{}, Consumed: map[string][]string{}, EvWaits: map[string]EventWait{}}
	for _, p := range tenants {
		ts := TenantState{MaxInflight: p.MaxInflight, DedupTTL: int64(p.DedupTTL), Retention: int64(p.Retention)}
		if ts.MaxInflight == 0 {
			ts.MaxInflight = store.DefaultMaxInflight
		}
		if ts.DedupTTL == 0 {
			ts.DedupTTL = int64(store.DefaultDedupTTL)
		}
		if ts.Retention == 0 {
			ts.Retention = int64(store.DefaultRetention)
		}
		s.Tenants[p.Name] = ts
	}
	return s
}

// Clone returns a deep copy: all values are plain structs, but for a
// Flow's slices, which are never changed in place (copy on write).
func (s *State) Clone() *State {
	return &State{Tenants: maps.Clone(s.Tenants), Execs: maps.Clone(s.Execs), Keys: maps.Clone(s.Keys),
		Flows: maps.Clone(s.Flows), TurnSeq: s.TurnSeq, Concurrent: s.Concurrent, Hits: s.Hits,
		Events: s.Events, Idem: maps.Clone(s.Idem), Consumed: maps.Clone(s.Consumed), EvWaits: maps.Clone(s.EvWaits), Subs: s.Subs}
}

// Equal reports whether two states are the same.
func (s *State) Equal(o *State) bool {
	return maps.Equal(s.Tenants, o.Tenants) && maps.Equal(s.Execs, o.Execs) && maps.Equal(s.Keys, o.Keys) &&
		maps.EqualFunc(s.Flows, o.Flows, Flow.equal) && s.TurnSeq == o.TurnSeq && s.Hits == o.Hits && s.eventsEqual(o)
}

// Hash is an order-independent hash of the state: Equal states hash equal.
func (s *State) Hash() uint64 {
	var h uint64
	f := fnv.New64a()
	for id, x := range s.Execs {
		f.Reset()
		fmt.Fprintf(f, "%s|%s|%d|%t|%s|%d|%d|%t|%d|%s|%d", id, x.Status, x.Attempt, x.CancelRequested, x.Token,
			x.FinishedAt, x.LeaseExpires, x.Resume, x.WakeAt, x.WaitingFor, x.DedupHits)
		h ^= f.Sum64()
	}
	for id, fl := range s.Flows {
		f.Reset()
		fmt.Fprintf(f, "f|%s|%d|%d|%d", id, len(fl.Steps), len(fl.Signals), len(fl.Answers))
		for _, st := range fl.Steps {
			fmt.Fprintf(f, "|%s=%s", st.Name, st.Result)
		}
		for _, sg := range fl.Signals {
			fmt.Fprintf(f, "|%s:%s", sg.Name, sg.Data)
		}
		h ^= f.Sum64()
	}
	for k, v := range s.Keys {
		f.Reset()
		fmt.Fprintf(f, "k|%s|%s|%s", k.tenant, k.key, v.ID)
		h ^= f.Sum64()
	}
	for name, t := range s.Tenants {
		f.Reset()
		fmt.Fprintf(f, "t|%s|%d", name, t.Inflight)
		h ^= f.Sum64()
	}
	for id, ev := range s.Consumed {
		f.Reset()
		fmt.Fprintf(f, "c|%s|%v", id, ev)
		h ^= f.Sum64()
	}
	f.Reset()
	fmt.Fprintf(f, "e|%d|%d", len(s.Events), len(s.Idem))
	h ^= f.Sum64()
	return h
}

// Apply checks out as the answer to in in this state. On success it
// advances the state and returns nil; otherwise it returns what differs and
// the state must be discarded (it may be partly changed).
func (s *State) Apply(in Input, out Output) error {
	if out.Err.unexpected() {
		return fmt.Errorf("backend error: %s", out.Err)
	}
	switch in.Op {
	case OpAdmit:
		return s.admit(in, out)
	case OpGet:
		x, ok := s.lookup(in.Tenant, in.ID)
		if !ok {
			return wantCode(out.Err, CodeNotFound)
		}
		if err := wantCode(out.Err, OK); err != nil {
			return err
		}
		return wantView(out.X, x.View)
	case OpCancel:
		return s.cancel(in, out)
	case OpDelete:
		return s.delete(in, out)
	case OpClaim:
		return s.claim(in, out)
	case OpHeartbeat:
		x, err := s.fence(in, out)
		if x == nil {
			return err
		}
		x.LeaseExpires = in.Now + leaseOf(in.Lease)
		if out.CancelRequested != x.CancelRequested || out.Expires != x.LeaseExpires {
			return fmt.Errorf("heartbeat answered cancel=%t expires=%s, want cancel=%t expires=%s",
				out.CancelRequested, fmtNS(out.Expires), x.CancelRequested, fmtNS(x.LeaseExpires))
		}
		s.Execs[x.ID] = *x
		return nil
	case OpComplete:
		x, err := s.fence(in, out)
		if x == nil {
			return err
		}
		st := store.StatusSucceeded
		if x.CancelRequested {
			st = store.StatusCancelled
		}
		s.finish(x, st, in.Now)
		return wantView(out.X, x.View)
	case OpFail:
		x, err := s.fence(in, out)
		if x == nil {
			return err
		}
		switch {
		case x.CancelRequested:
			s.finish(x, store.StatusCancelled, in.Now)
		case in.Retry && x.Attempt < x.MaxAttempts:
			s.requeue(x, in.Now+max(in.Delay, 0), in.Now)
		default:
			s.finish(x, store.StatusFailed, in.Now)
		}
		return wantView(out.X, x.View)
	case OpRelease:
		x, err := s.fence(in, out)
		if x == nil {
			return err
		}
		// The attempt still counts as a start, unless it never started:
		// then the claim is given back, a start's count or a resume's flag.
		resume := x.Resume
		if in.Unstarted && !resume {
			x.Attempt--
		}
		if x.CancelRequested {
			s.finish(x, store.StatusCancelled, in.Now)
		} else {
			s.requeue(x, in.Now, in.Now)
			if in.Unstarted && resume {
				x.Resume = true
				s.Execs[x.ID] = *x
			}
		}
		return wantView(out.X, x.View)
	case OpTenant:
		t, ok := s.Tenants[in.Tenant]
		if !ok {
			return wantCode(out.Err, CodeNotFound)
		}
		if err := wantCode(out.Err, OK); err != nil {
			return err
		}
		if out.Inflight != t.Inflight || out.MaxInflight != t.MaxInflight {
			return fmt.Errorf("tenant %s: inflight %d of %d, want %d of %d",
				in.Tenant, out.Inflight, out.MaxInflight, t.Inflight, t.MaxInflight)
		}
		return nil
	case OpRescue:
		return s.rescue(in, out)
	case OpPromote:
		return s.promote(in, out)
	case OpPrune:
		return s.prune(in, out)
	case OpRecordStep, OpSuspend, OpSignal, OpWake, OpRetry, OpSteps:
		return s.applyFlow(in, out)
	case OpSpawn:
		return s.spawn(in, out)
	case OpPublish:
		return s.applyPublish(in, out)
	}
	return fmt.Errorf("unknown operation %v", in.Op)
}

func leaseOf(d int64) int64 {
	if d <= 0 {
		return defaultLease
	}
	return d
}

func wantCode(got, want Code) error {
	if got != want {
		if want == OK {
			return fmt.Errorf("error %q, want success", got)
		}
		if got == OK {
			return fmt.Errorf("success, want error %q", want)
		}
		return fmt.Errorf("error %q, want %q", got, want)
	}
	return nil
}

func wantView(got, want View) error {
	if got == want {
		return nil
	}
	var d []string
	add := func(name string, g, w any) {
		if g != w {
			d = append(d, fmt.Sprintf("%s %v (want %v)", name, g, w))
		}
	}
	add("id", got.ID, want.ID)
	add("tenant", got.Tenant, want.Tenant)
	add("kind", got.Kind, want.Kind)
	add("key", got.Key, want.Key)
	add("payload", got.Payload, want.Payload)
	add("priority", got.Priority, want.Priority)
	add("concurrency_key", got.CKey, want.CKey)
	add("concurrency_limit", got.CLimit, want.CLimit)
	add("status", got.Status, want.Status)
	add("attempt", got.Attempt, want.Attempt)
	add("max_attempts", got.MaxAttempts, want.MaxAttempts)
	add("cancel_requested", got.CancelRequested, want.CancelRequested)
	add("run_at", fmtNS(got.RunAt), fmtNS(want.RunAt))
	add("finished_at", fmtNS(got.FinishedAt), fmtNS(want.FinishedAt))
	add("lease_expires", fmtNS(got.LeaseExpires), fmtNS(want.LeaseExpires))
	add("wake_at", fmtNS(got.WakeAt), fmtNS(want.WakeAt))
	add("waiting_for", got.WaitingFor, want.WaitingFor)
	add("suspend_step", got.SuspendStep, want.SuspendStep)
	add("parent_id", got.ParentID, want.ParentID)
	add("parent_step", got.ParentStep, want.ParentStep)
	add("dedup_hits", got.DedupHits, want.DedupHits)
	add("last_dedup_hit", fmtNS(got.LastDedupHit), fmtNS(want.LastDedupHit))
	return fmt.Errorf("execution %s differs: %s", short(want.ID), strings.Join(d, ", "))
}

// lookup finds an execution visible to tenant ("" = any tenant).
func (s *State) lookup(tenant, id string) (Exec, bool) {
	x, ok := s.Execs[id]
	if !ok || (tenant != "" && x.Tenant != tenant) {
		return Exec{}, false
	}
	return x, true
}

// liveKey returns the execution a (tenant, key) maps to now, if any.
func (s *State) liveKey(tenant, key string, now int64) (Exec, bool) {
	k, ok := s.Keys[tenantKey{tenant, key}]
	if !ok || k.Expires <= now {
		return Exec{}, false
	}
	x, ok := s.Execs[k.ID]
	return x, ok
}

func (s *State) admit(in Input, out Output) error {
	t, ok := s.Tenants[in.Tenant]
	if !ok {
		return wantCode(out.Err, CodeNotFound)
	}
	if err := wantCode(out.Err, OK); err != nil {
		return err
	}
	if len(out.Items) != len(in.Items) {
		return fmt.Errorf("%d items answered for %d submitted", len(out.Items), len(in.Items))
	}
	for i, sub := range in.Items {
		got := out.Items[i]
		fail := func(err error) error { return fmt.Errorf("item %d (key %q): %w", i, sub.Key, err) }
		payload := sub.Payload
		if payload == "" {
			payload = "{}"
		}
		if sub.Kind == "" {
			if err := wantCode(got.Err, CodeInvalid); err != nil {
				return fail(err)
			}
			continue
		}
		if sub.Key != "" {
			if x, ok := s.liveKey(in.Tenant, sub.Key, in.Now); ok {
				if x.Kind != sub.Kind || x.Payload != payload {
					if err := wantCode(got.Err, CodeReused); err != nil {
						return fail(err)
					}
					continue
				}
				// Dedup contract 1 and 2: the live key answers with the one
				// execution it maps to, as it is now, this hit counted.
				if got.Err != OK || !got.Dedup {
					return fail(fmt.Errorf("answered err=%q deduplicated=%t id=%s, want deduplicated onto %s",
						got.Err, got.Dedup, short(got.X.ID), short(x.ID)))
				}
				if s.Hits == HitsUnknown {
					s.Hits = HitsNotCounted
					if got.X.DedupHits != 0 || got.X.LastDedupHit != 0 {
						s.Hits = HitsCounted
					}
				}
				if s.Hits == HitsCounted {
					x.DedupHits++
					x.LastDedupHit = in.Now
					s.Execs[x.ID] = x
				}
				if err := wantView(got.X, x.View); err != nil {
					return fail(err)
				}
				continue
			}
		}
		if t.Inflight+1 > t.MaxInflight {
			if err := wantCode(got.Err, CodeQuota); err != nil {
				return fail(fmt.Errorf("%w (tenant at %d of %d)", err, t.Inflight, t.MaxInflight))
			}
			continue
		}
		if got.Err != OK || got.Dedup {
			return fail(fmt.Errorf("answered err=%q deduplicated=%t id=%s, want a new execution",
				got.Err, got.Dedup, short(got.X.ID)))
		}
		if _, dup := s.Execs[got.X.ID]; dup || got.X.ID == "" {
			return fail(fmt.Errorf("new execution reuses id %q", got.X.ID))
		}
		x := Exec{View: View{ID: got.X.ID, Tenant: in.Tenant, Kind: sub.Kind, Key: sub.Key, Payload: payload,
			Priority: sub.Priority, Status: store.StatusQueued, MaxAttempts: sub.MaxAttempts, RunAt: in.Now}}
		if x.MaxAttempts <= 0 {
			x.MaxAttempts = store.DefaultMaxAttempts
		}
		if x.CKey = sub.CKey; x.CKey != "" {
			x.CLimit = sub.CLimit
			if x.CLimit <= 0 {
				x.CLimit = store.DefaultConcurrencyLimit
			}
		}
		if sub.RunAt > in.Now {
			x.RunAt, x.Status = sub.RunAt, store.StatusScheduled
		}
		if err := wantView(got.X, x.View); err != nil {
			return fail(err)
		}
		s.Execs[x.ID] = x
		t.Inflight++
		if sub.Key != "" {
			s.Keys[tenantKey{in.Tenant, sub.Key}] = KeyState{ID: x.ID, Expires: in.Now + t.DedupTTL}
		}
	}
	s.Tenants[in.Tenant] = t
	return nil
}

// finish moves an in-flight execution to a terminal status and frees its
// quota slot. A suspension ends with it.
func (s *State) finish(x *Exec, st store.Status, now int64) {
	if x.Status.Inflight() {
		t := s.Tenants[x.Tenant]
		t.Inflight--
		s.Tenants[x.Tenant] = t
	}
	x.Status, x.FinishedAt, x.Token, x.LeaseExpires, x.Resume = st, now, "", 0, false
	x.WakeAt, x.WaitingFor, x.SuspendStep, x.WaitCount = 0, "", "", 0
	s.Execs[x.ID] = *x
	// In the same operation (I13): as a parent, its children spawned with
	// cancel are cancelled; as a child, its parent's fan-in wait may end.
	s.cancelChildren(x.ID, now)
	s.childEnded(*x, now)
}

// requeue ends a running attempt; the execution is claimable again at runAt
// and its next claim counts a start.
func (s *State) requeue(x *Exec, runAt, now int64) {
	x.Status = store.StatusQueued
	if runAt > now {
		x.Status = store.StatusScheduled
	}
	x.RunAt, x.Token, x.LeaseExpires, x.Resume = runAt, "", 0, false
	s.Execs[x.ID] = *x
}

// fence is the check Heartbeat, Complete, Fail and Release share. It
// returns the execution when in carries its current, unexpired lease token;
// otherwise it checks that the answer is CodeLeaseLost and returns nil. Lost
// are: an execution that does not exist or is another tenant's (the two
// look the same), one not running under that token, and one whose lease
// expired before Now — lost from that moment, whether or not Rescue has run.
func (s *State) fence(in Input, out Output) (*Exec, error) {
	x, ok := s.lookup(in.Tenant, in.ID)
	if !ok || x.Status != store.StatusRunning || x.Token != in.Token || in.Token == "" || x.LeaseExpires < in.Now {
		return nil, wantCode(out.Err, CodeLeaseLost)
	}
	if err := wantCode(out.Err, OK); err != nil {
		return nil, err
	}
	return &x, nil
}

func (s *State) cancel(in Input, out Output) error {
	x, ok := s.lookup(in.Tenant, in.ID)
	if !ok {
		return wantCode(out.Err, CodeNotFound)
	}
	if err := wantCode(out.Err, OK); err != nil {
		return err
	}
	switch x.Status {
	case store.StatusQueued, store.StatusScheduled, store.StatusSuspended:
		s.finish(&x, store.StatusCancelled, in.Now)
	case store.StatusRunning:
		requested := x.CancelRequested
		x.CancelRequested = true
		s.Execs[x.ID] = x
		if !requested { // its parent's end for its children
			s.cancelChildren(x.ID, in.Now)
		}
	}
	return wantView(out.X, x.View)
}

func (s *State) delete(in Input, out Output) error {
	x, ok := s.lookup(in.Tenant, in.ID)
	if !ok {
		return wantCode(out.Err, CodeNotFound)
	}
	if !x.Status.Terminal() && !in.Force {
		return wantCode(out.Err, CodeNotTerminal)
	}
	if err := wantCode(out.Err, OK); err != nil {
		return err
	}
	// With its family (children_model.go); a child deleted in flight ends
	// for its parent's fan-in wait.
	s.deleteFamily(x)
	if x.Status.Inflight() {
		s.childEnded(x, in.Now)
	}
	return nil
}

// remove deletes an execution with its dedup key, quota slot, journal and
// signals.
func (s *State) remove(x Exec) {
	delete(s.Flows, x.ID)
	if x.Status.Inflight() {
		t := s.Tenants[x.Tenant]
		t.Inflight--
		s.Tenants[x.Tenant] = t
	}
	delete(s.Execs, x.ID)
	if x.Key != "" {
		k := tenantKey{x.Tenant, x.Key}
		if s.Keys[k].ID == x.ID {
			delete(s.Keys, k)
		}
	}
}

// ready reports whether x is claimable at now by a claim with these filters.
func ready(x Exec, in Input) bool {
	if in.Tenant != "" && x.Tenant != in.Tenant {
		return false
	}
	if len(in.Kinds) > 0 && !slices.Contains(in.Kinds, x.Kind) {
		return false
	}
	return x.Status == store.StatusQueued || (x.Status == store.StatusScheduled && x.RunAt <= in.Now)
}

// before reports whether a must be claimed before b among one tenant's
// executions: higher priority first, then older RunAt. Ties may go either
// way.
func before(a, b Exec) bool {
	return a.Priority > b.Priority || (a.Priority == b.Priority && a.RunAt < b.RunAt)
}

// turnOrder returns the tenants of the leases a claim alone must hand out,
// in order (I12): rounds over the tenants with candidates (left: how many
// each can start), smallest turn first (ties by name), one execution each a
// round, until want.
func (s *State) turnOrder(left map[string]int, want int) []string {
	order := slices.Collect(maps.Keys(left))
	slices.SortFunc(order, func(a, b string) int {
		if d := cmp.Compare(s.Tenants[a].Turn, s.Tenants[b].Turn); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	var out []string
	for len(out) < want {
		for _, t := range order {
			if left[t] > 0 && len(out) < want {
				out = append(out, t)
				left[t]--
			}
		}
	}
	return out
}

func (s *State) claim(in Input, out Output) error {
	if err := wantCode(out.Err, OK); err != nil {
		return err
	}
	var cands []Exec
	for _, x := range s.Execs {
		if ready(x, in) {
			cands = append(cands, x)
		}
	}
	// I4: a candidate with a concurrency key starts only while fewer than
	// its limit of its tenant's executions with that key run (suspended
	// ones hold no slot), counting those this claim starts.
	running := map[tenantKey]int{}
	for _, x := range s.Execs {
		if x.CKey != "" && x.Status == store.StatusRunning {
			running[tenantKey{x.Tenant, x.CKey}]++
		}
	}
	startable := func(c Exec) bool {
		return c.CKey == "" || running[tenantKey{c.Tenant, c.CKey}] < c.CLimit
	}
	// How many each tenant can start. (The workloads give every key one
	// limit, so the count does not depend on which of a key's candidates
	// come first.)
	left, keyed := map[string]int{}, map[tenantKey]int{}
	for _, c := range cands {
		if c.CKey == "" {
			left[c.Tenant]++
			continue
		}
		k := tenantKey{c.Tenant, c.CKey}
		if running[k]+keyed[k] < c.CLimit {
			keyed[k]++
			left[c.Tenant]++
		}
	}
	n := 0
	for _, v := range left {
		n += v
	}
	want := min(max(in.Max, 1), n)
	switch {
	case s.Concurrent && len(out.Leases) > want:
		return fmt.Errorf("claim handed out %d leases, want at most %d (%d ready, %d startable)", len(out.Leases), want, len(cands), n)
	case !s.Concurrent && len(out.Leases) != want:
		return fmt.Errorf("claim handed out %d leases, want %d (%d ready, %d startable)", len(out.Leases), want, len(cands), n)
	}
	var turns []string
	if !s.Concurrent {
		turns = s.turnOrder(left, want)
	}
	taken := map[string]bool{}
	var served []string // in the order last served
	for i, l := range out.Leases {
		x, ok := s.Execs[l.ID]
		if !ok || !ready(x, in) || taken[l.ID] {
			return fmt.Errorf("claim handed out %s, which is not ready (%s attempt %d)", short(l.ID), x.Status, x.Attempt)
		}
		if !s.Concurrent && x.Tenant != turns[i] {
			return fmt.Errorf("claim handed out %s of tenant %s as lease %d, want one of %s's (turn order %v)",
				short(x.ID), x.Tenant, i+1, turns[i], turns)
		}
		if !startable(x) {
			return fmt.Errorf("I4: claim handed out %s with concurrency key %s at its limit %d (%d running)",
				short(x.ID), x.CKey, x.CLimit, running[tenantKey{x.Tenant, x.CKey}])
		}
		// Which of its startable candidates a key starts first is left
		// free: a backend may keep a blocked one aside until its key's
		// other candidates have gone (Redis parks it, and an execution of
		// the key queued again meanwhile passes it).
		for _, c := range cands {
			if !s.Concurrent && !taken[c.ID] && c.Tenant == x.Tenant && c.CKey == "" && before(c, x) {
				return fmt.Errorf("claim handed out %s (priority %d, run_at %s) before %s (priority %d, run_at %s) of its tenant",
					short(x.ID), x.Priority, fmtNS(x.RunAt), short(c.ID), c.Priority, fmtNS(c.RunAt))
			}
		}
		taken[l.ID] = true
		if x.CKey != "" {
			running[tenantKey{x.Tenant, x.CKey}]++
		}
		served = append(slices.DeleteFunc(served, func(t string) bool { return t == x.Tenant }), x.Tenant)
		// A resume keeps its attempt; its flag stays for the run (an
		// unstarted Release gives it back).
		if !x.Resume {
			x.Attempt++
		}
		x.Status = store.StatusRunning
		x.LeaseExpires = in.Now + leaseOf(in.Lease)
		wantL := LeaseOut{ID: x.ID, Tenant: x.Tenant, Token: l.Token, Kind: x.Kind, Payload: x.Payload,
			Attempt: x.Attempt, MaxAttempts: x.MaxAttempts, Expires: x.LeaseExpires,
			Steps: s.Flows[x.ID].journal()}
		if l.Partial && s.Flows[x.ID].carriesFirst(l.Steps) {
			wantL.Steps, wantL.Partial = l.Steps, true
		}
		if l != wantL {
			return fmt.Errorf("lease %+v, want %+v", l, wantL)
		}
		if l.Token == "" || l.Token == x.Token {
			return fmt.Errorf("lease on %s has a stale or empty token %q", short(x.ID), l.Token)
		}
		x.Token = l.Token
		s.Execs[x.ID] = x
	}
	for _, t := range served {
		s.TurnSeq++
		ts := s.Tenants[t]
		ts.Turn = s.TurnSeq
		s.Tenants[t] = ts
	}
	return nil
}

func (s *State) rescue(in Input, out Output) error {
	if err := wantCode(out.Err, OK); err != nil {
		return err
	}
	var n [3]int
	for _, x := range s.Execs {
		if x.Status != store.StatusRunning || x.LeaseExpires >= in.Now {
			continue
		}
		switch {
		case x.CancelRequested:
			s.finish(&x, store.StatusCancelled, in.Now)
			n[2]++
		case x.Attempt < x.MaxAttempts:
			s.requeue(&x, in.Now, in.Now)
			n[0]++
		default:
			s.finish(&x, store.StatusFailed, in.Now)
			n[1]++
		}
	}
	if out.Counts != n {
		return fmt.Errorf("rescue requeued/failed/cancelled %v, want %v", out.Counts, n)
	}
	return nil
}

func (s *State) promote(in Input, out Output) error {
	if err := wantCode(out.Err, OK); err != nil {
		return err
	}
	n := 0
	for _, x := range s.Execs {
		if x.Status == store.StatusScheduled && x.RunAt <= in.Now {
			x.Status = store.StatusQueued
			s.Execs[x.ID] = x
			n++
		}
	}
	if out.Counts[0] != n {
		return fmt.Errorf("promote moved %d, want %d", out.Counts[0], n)
	}
	return nil
}

func (s *State) prune(in Input, out Output) error {
	if err := wantCode(out.Err, OK); err != nil {
		return err
	}
	n := 0
	for _, x := range s.Execs {
		if x.Status.Terminal() && x.FinishedAt != 0 && x.FinishedAt < in.Now-s.Tenants[x.Tenant].Retention {
			s.remove(x)
			n++
		}
	}
	for k, v := range s.Keys {
		if v.Expires <= in.Now {
			delete(s.Keys, k)
		}
	}
	if out.Counts[0] != n {
		return fmt.Errorf("prune removed %d executions, want %d", out.Counts[0], n)
	}
	return nil
}

// countInflight counts a tenant's scheduled, queued and running executions.
func (s *State) countInflight(tenant string) int {
	n := 0
	for _, x := range s.Execs {
		if x.Tenant == tenant && x.Status.Inflight() {
			n++
		}
	}
	return n
}

// String describes the state for visualizations and failure messages.
func (s *State) String() string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(s.Tenants)) {
		t := s.Tenants[name]
		fmt.Fprintf(&b, "%s inflight %d/%d; ", name, t.Inflight, t.MaxInflight)
	}
	xs := slices.Collect(maps.Values(s.Execs))
	slices.SortFunc(xs, func(a, b Exec) int { return strings.Compare(a.ID, b.ID) })
	for _, x := range xs {
		fmt.Fprintf(&b, "%s:%s#%d", short(x.ID), x.Status, x.Attempt)
		if x.Key != "" {
			fmt.Fprintf(&b, "[%s]", x.Key)
		}
		if x.CancelRequested {
			b.WriteString("!c")
		}
		if x.DedupHits > 0 {
			fmt.Fprintf(&b, "+%dhits", x.DedupHits)
		}
		if x.Resume {
			b.WriteString("(resume)")
		}
		if x.Status == store.StatusSuspended {
			fmt.Fprintf(&b, "{%s", x.SuspendStep)
			if x.WaitingFor != "" {
				fmt.Fprintf(&b, " waits %s", x.WaitingFor)
			}
			if x.WakeAt != 0 {
				fmt.Fprintf(&b, " until %s", fmtNS(x.WakeAt))
			}
			b.WriteString("}")
		}
		b.WriteString(familyString(x))
		if fl, ok := s.Flows[x.ID]; ok {
			b.WriteString(fl.String())
		}
		b.WriteString(" ")
	}
	keys := slices.SortedFunc(maps.Keys(s.Keys), func(a, b tenantKey) int {
		return strings.Compare(a.tenant+"\x00"+a.key, b.tenant+"\x00"+b.key)
	})
	for _, k := range keys {
		fmt.Fprintf(&b, "key %s→%s ", k.key, short(s.Keys[k].ID))
	}
	b.WriteString(s.eventsString())
	return strings.TrimSpace(b.String())
}

// short abbreviates an execution id (UUIDv7: the tail is the random part).
func short(id string) string {
	if len(id) > 6 {
		return id[len(id)-6:]
	}
	return id
}

// fmtNS shows a model time as an offset from the suite's base time.
func fmtNS(ns int64) string {
	if ns == 0 {
		return "none"
	}
	return "base" + fmt.Sprintf("%+v", time.Duration(ns-base.UnixNano()))
}
