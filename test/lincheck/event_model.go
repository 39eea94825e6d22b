package lincheck

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/latch-run/latch/store"
)

// EventIn is a retained event (store.Event): the model's workloads keep
// every event for the tenant's default EventRetention, longer than any
// history, and never prune them.
type EventIn struct {
	ID, Tenant, Name, Key, Data string
	At                          int64 // PublishedAt, unix ns
}

func (e EventIn) event() *store.Event {
	return &store.Event{ID: e.ID, Tenant: e.Tenant, Name: e.Name, Key: e.Key, Data: rawOrNil(e.Data), PublishedAt: timeOf(e.At)}
}

// EventWait is a suspended wait for an event: its key ("" = any) and
// since, kept with the suspension.
type EventWait struct {
	Key   string
	Since int64
}

// SubSpec is an enabled subscription of a history (created before the
// history, never changed during it), with the settings the model predicts.
type SubSpec struct {
	Tenant, Name, Event, Kind string
}

// applyPublish checks a Publish's answer (I14) and advances: a repeat of
// an idempotency key answers the first answer and changes nothing; a new
// event is retained, resumes every suspended wait of its tenant it
// matches (each consuming it once) and starts one execution per enabled
// subscription of its tenant on its name, in name order, unless the
// quota refuses it.
func (s *State) applyPublish(in Input, out Output) error {
	t, ok := s.Tenants[in.Tenant]
	if !ok {
		return wantCode(out.Err, CodeNotFound)
	}
	got := out.Published
	if in.IdemKey != "" {
		if first, ok := s.Idem[tenantKey{in.Tenant, in.IdemKey}]; ok {
			if err := wantCode(out.Err, OK); err != nil {
				return err
			}
			first.Replayed = true
			if !got.equal(first) {
				return fmt.Errorf("I14: repeat of publish key %s answered %s, want the first answer %s", in.IdemKey, got, first)
			}
			return nil
		}
	}
	if err := wantCode(out.Err, OK); err != nil {
		return err
	}
	if got.Replayed {
		return fmt.Errorf("I14: publish answered replayed (%s) for key %q, which no retained event used", got, in.IdemKey)
	}
	if got.EventID == "" || slices.ContainsFunc(s.Events, func(e EventIn) bool { return e.ID == got.EventID }) {
		return fmt.Errorf("publish answered a used or empty event id %q", got.EventID)
	}
	e := EventIn{ID: got.EventID, Tenant: in.Tenant, Name: in.Name, Key: in.EvKey, Data: null(in.Data), At: in.Now}
	raw := store.EventStep(e.event())
	step := canonical(raw)
	want := PublishOut{EventID: e.ID}
	for _, id := range slices.Sorted(maps.Keys(s.Execs)) {
		x := s.Execs[id]
		w, waiting := s.EvWaits[id]
		if x.Tenant != e.Tenant || x.Status != store.StatusSuspended || x.WaitingFor != store.EventWaitFor(e.Name) ||
			!waiting || !store.EventMatches(e.Key, timeOf(e.At), w.Key, timeOf(w.Since)) {
			continue
		}
		s.consume(&x, e.ID, step, in.Now)
		want.Resumed++
	}
	for i, sub := range s.Subs {
		if sub.Tenant != e.Tenant || sub.Event != e.Name {
			continue
		}
		if t.Inflight+1 > t.MaxInflight {
			want.Starts = append(want.Starts, StartOut{Sub: sub.Name, Err: CodeQuota})
			continue
		}
		id := ""
		if len(want.Starts) < len(got.Starts) {
			id = got.Starts[len(want.Starts)].ID
		}
		if _, dup := s.Execs[id]; dup || id == "" {
			return fmt.Errorf("I14: start %d of event %s (subscription %s) has a used or empty id %q (answer %s)", i, short(e.ID), sub.Name, id, got)
		}
		key := store.EventDedupKey(e.ID, sub.Name)
		s.Execs[id] = Exec{View: View{ID: id, Tenant: e.Tenant, Kind: sub.Kind, Key: key, Payload: string(raw),
			Status: store.StatusQueued, MaxAttempts: store.DefaultMaxAttempts, RunAt: in.Now}}
		s.Keys[tenantKey{e.Tenant, key}] = KeyState{ID: id, Expires: in.Now + t.DedupTTL}
		t.Inflight++
		want.Starts = append(want.Starts, StartOut{Sub: sub.Name, ID: id})
	}
	if !got.equal(want) {
		return fmt.Errorf("I14: publish %s key %q answered %s, want %s", e.Name, e.Key, got, want)
	}
	s.Tenants[e.Tenant] = t
	// Kept in (tenant, name, published at) order, a tie after the events
	// published before it: the order a wait consumes them in, and one
	// order for publishes that commute (concurrent ones of other names or
	// times), so that porcupine sees them reach one state.
	at := len(s.Events)
	for at > 0 && eventAfter(s.Events[at-1], e) {
		at--
	}
	s.Events = slices.Insert(slices.Clip(s.Events), at, e)
	if in.IdemKey != "" {
		s.Idem[tenantKey{in.Tenant, in.IdemKey}] = want
	}
	return nil
}

// eventAfter reports whether a sorts after b in State.Events.
func eventAfter(a, b EventIn) bool {
	if a.Tenant != b.Tenant {
		return a.Tenant > b.Tenant
	}
	if a.Name != b.Name {
		return a.Name > b.Name
	}
	return a.At > b.At
}

// consume ends x's wait with the event id: its step recorded, the event
// marked consumed by x, x queued again.
func (s *State) consume(x *Exec, id, step string, now int64) {
	s.record(x, x.SuspendStep, step, now)
	s.Consumed[x.ID] = append(slices.Clip(s.Consumed[x.ID]), id)
	s.resume(x, now)
}

// suspendEvent ends a wait for an event at once when a retained event of
// x's tenant matches it and x has not consumed it: the oldest (published
// at, then publish order) is consumed. It reports whether it did.
func (s *State) suspendEvent(x *Exec, in Input) bool {
	best := -1
	for i, e := range s.Events {
		if e.Tenant != x.Tenant || e.Name != in.Event || !store.EventMatches(e.Key, timeOf(e.At), in.EvKey, timeOf(in.Since)) ||
			slices.Contains(s.Consumed[x.ID], e.ID) {
			continue
		}
		if best < 0 || e.At < s.Events[best].At {
			best = i
		}
	}
	if best < 0 {
		return false
	}
	x.SuspendStep = in.Name
	s.consume(x, s.Events[best].ID, canonical(store.EventStep(s.Events[best].event())), in.Now)
	return true
}

// waitEvent keeps a suspended wait's key and since for the publishes.
func (s *State) waitEvent(id string, in Input) {
	s.EvWaits[id] = EventWait{Key: in.EvKey, Since: in.Since}
}

// eventsEqual compares the event parts of two states.
func (s *State) eventsEqual(o *State) bool {
	return slices.Equal(s.Events, o.Events) && maps.EqualFunc(s.Idem, o.Idem, PublishOut.equal) &&
		maps.EqualFunc(s.Consumed, o.Consumed, slices.Equal) && maps.Equal(s.EvWaits, o.EvWaits)
}

// eventsString describes the event parts of a state.
func (s *State) eventsString() string {
	if len(s.Events) == 0 {
		return ""
	}
	out := " events"
	for _, e := range s.Events {
		out += fmt.Sprintf(" %s/%s:%s@%v", e.Tenant, e.Name, short(e.ID), time.Duration(e.At-base.UnixNano()))
		if e.Key != "" {
			out += "[" + e.Key + "]"
		}
	}
	for _, id := range slices.Sorted(maps.Keys(s.Consumed)) {
		out += " " + short(id) + " consumed"
		for _, e := range s.Consumed[id] {
			out += " " + short(e)
		}
	}
	return out
}
