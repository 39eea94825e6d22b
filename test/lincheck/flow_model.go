package lincheck

import (
	"fmt"
	"slices"
	"strings"

	"github.com/latch-run/latch/store"
)

// Flow is the model of one execution's flow state (store/flow.go): its
// journal, in record order, the signals kept for a later wait, in arrival
// order, and the idempotency keys of the signals it was sent, with their
// first answers. Its slices are never changed in place, so that a State's
// Clone can share them.
type Flow struct {
	Steps   []StepOut
	Signals []SignalIn
	Answers []Answer
}

// SignalIn is a signal kept for a later wait.
type SignalIn struct{ Name, Data string }

// Answer is the first answer to a signal with an idempotency key.
type Answer struct {
	Key       string
	Delivered bool
}

func (f Flow) equal(o Flow) bool {
	return slices.Equal(f.Steps, o.Steps) && slices.Equal(f.Signals, o.Signals) && slices.Equal(f.Answers, o.Answers)
}

func (f Flow) step(name string) (StepOut, bool) {
	for _, st := range f.Steps {
		if st.Name == name {
			return st, true
		}
	}
	return StepOut{}, false
}

// journal is what a lease carries: every recorded step, by name.
func (f Flow) journal() string {
	var b strings.Builder
	for _, st := range slices.SortedFunc(slices.Values(f.Steps), func(a, b StepOut) int { return strings.Compare(a.Name, b.Name) }) {
		b.WriteString(st.Name)
		b.WriteByte('=')
		b.WriteString(st.Result)
		b.WriteByte('\n')
	}
	return b.String()
}

// carriesFirst reports whether a lease's steps (journalString) are this
// journal's first steps in record order (maybe none): what a lease marked
// partial (store.Lease.StepsPartial) may carry, as one does whose
// execution was force deleted before its claim read the journal.
func (f Flow) carriesFirst(steps string) bool {
	for n := range len(f.Steps) + 1 {
		if steps == (Flow{Steps: f.Steps[:n]}).journal() {
			return true
		}
	}
	return false
}

func (f Flow) String() string {
	var parts []string
	for _, st := range f.Steps {
		parts = append(parts, st.Name+"="+st.Result)
	}
	for _, sg := range f.Signals {
		parts = append(parts, "sig "+sg.Name+":"+sg.Data)
	}
	for _, a := range f.Answers {
		parts = append(parts, fmt.Sprintf("key %s:%t", a.Key, a.Delivered))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// setFlow stores f as id's flow state, leaving no entry for an empty one
// (so that equal states compare equal).
func (s *State) setFlow(id string, f Flow) {
	if len(f.Steps) == 0 && len(f.Signals) == 0 && len(f.Answers) == 0 {
		delete(s.Flows, id)
		return
	}
	s.Flows[id] = f
}

// record appends a step to x's journal, recorded at now by x's attempt.
func (s *State) record(x *Exec, name, result string, now int64) {
	f := s.Flows[x.ID]
	f.Steps = append(slices.Clip(f.Steps), StepOut{Name: name, Result: result, RecordedAt: now, Attempt: x.Attempt})
	s.setFlow(x.ID, f)
}

// resume queues x again at now by its flow's own progress: whatever it
// held (a lease, a suspension) ends, the quota slot stays, and its next
// claim counts no start.
func (s *State) resume(x *Exec, now int64) {
	x.Status, x.RunAt, x.Resume = store.StatusQueued, now, true
	x.Token, x.LeaseExpires = "", 0
	x.WakeAt, x.WaitingFor, x.SuspendStep, x.WaitCount = 0, "", "", 0
	s.Execs[x.ID] = *x
}

func null(data string) string {
	if data == "" {
		return "null"
	}
	return data
}

// applyFlow checks the answer of a flow operation (I10, I11) and advances.
func (s *State) applyFlow(in Input, out Output) error {
	switch in.Op {
	case OpRecordStep:
		x, err := s.fence(in, out)
		if x == nil {
			return err
		}
		want, ok := s.Flows[x.ID].step(in.Name)
		if !ok { // the first record of a name wins
			want = StepOut{Name: in.Name, Result: null(in.Data), StartedAt: in.StartedAt, RecordedAt: in.Now, Attempt: x.Attempt}
			f := s.Flows[x.ID]
			f.Steps = append(slices.Clip(f.Steps), want)
			s.setFlow(x.ID, f)
		}
		if out.Recorded != !ok || out.Step != want {
			return fmt.Errorf("record %s answered %+v recorded=%t, want %+v recorded=%t", in.Name, out.Step, out.Recorded, want, !ok)
		}
		return nil
	case OpSuspend:
		if in.Children != "" {
			return s.fanIn(in, out)
		}
		x, err := s.fence(in, out)
		if x == nil {
			return err
		}
		s.suspend(x, in)
		return wantView(out.X, x.View)
	case OpSignal:
		return s.signal(in, out)
	case OpWake:
		if err := wantCode(out.Err, OK); err != nil {
			return err
		}
		n := 0
		for _, x := range s.Execs {
			if x.Status != store.StatusSuspended || x.WakeAt == 0 || x.WakeAt > in.Now {
				continue
			}
			result := "null" // a sleep's end
			if x.WaitingFor != "" {
				result = string(store.TimedOut)
			}
			s.record(&x, x.SuspendStep, result, in.Now)
			s.resume(&x, in.Now)
			n++
		}
		if out.Counts[0] != n {
			return fmt.Errorf("wake woke %d, want %d", out.Counts[0], n)
		}
		return nil
	case OpRetry:
		x, ok := s.lookup(in.Tenant, in.ID)
		if !ok {
			return wantCode(out.Err, CodeNotFound)
		}
		if x.Status != store.StatusFailed {
			return wantCode(out.Err, CodeNotFailed)
		}
		// A cancel child whose parent has ended or has its cancel
		// requested is cancelled, not queued (I13): no slot, no claim.
		if p, ok := s.Execs[x.ParentID]; ok && x.OnParentEnd != store.ParentEndAbandon &&
			(!p.Status.Inflight() || p.CancelRequested) {
			if err := wantCode(out.Err, OK); err != nil {
				return err
			}
			x.Status, x.FinishedAt = store.StatusCancelled, in.Now
			s.Execs[x.ID] = x
			return wantView(out.X, x.View)
		}
		t := s.Tenants[x.Tenant]
		if t.Inflight+1 > t.MaxInflight {
			return wantCode(out.Err, CodeQuota)
		}
		if err := wantCode(out.Err, OK); err != nil {
			return err
		}
		t.Inflight++
		s.Tenants[x.Tenant] = t
		// The journal stays; the attempts start again.
		x.Status, x.Attempt, x.RunAt, x.FinishedAt, x.Resume = store.StatusQueued, 0, in.Now, 0, false
		s.Execs[x.ID] = x
		return wantView(out.X, x.View)
	case OpSteps:
		x, ok := s.lookup(in.Tenant, in.ID)
		if !ok {
			return wantCode(out.Err, CodeNotFound)
		}
		if err := wantCode(out.Err, OK); err != nil {
			return err
		}
		if want := s.Flows[x.ID].Steps; !slices.Equal(out.Steps, want) {
			return fmt.Errorf("journal of %s is %+v, want %+v", short(x.ID), out.Steps, want)
		}
		return nil
	}
	return fmt.Errorf("unknown flow operation %v", in.Op)
}

// suspend applies a fenced Suspend to the running x (store.Store.Suspend).
func (s *State) suspend(x *Exec, in Input) {
	f := s.Flows[x.ID]
	switch _, recorded := f.step(in.Name); {
	case x.CancelRequested:
		s.finish(x, store.StatusCancelled, in.Now)
		return
	case recorded: // the step's outcome is known: nothing to wait for
		s.resume(x, in.Now)
		return
	case in.Signal == "" && in.Event == "" && in.Until <= in.Now: // a sleep already over
		s.record(x, in.Name, "null", in.Now)
		s.resume(x, in.Now)
		return
	case in.Event != "" && s.suspendEvent(x, in): // a retained event consumed
		return
	case in.Signal != "":
		// The oldest signal of that name kept for a wait is consumed.
		for i, sg := range f.Signals {
			if sg.Name == in.Signal {
				f.Signals = append(slices.Clip(f.Signals[:i]), f.Signals[i+1:]...)
				s.setFlow(x.ID, f)
				s.record(x, in.Name, sg.Data, in.Now)
				s.resume(x, in.Now)
				return
			}
		}
	}
	x.Status, x.Token, x.LeaseExpires, x.Resume = store.StatusSuspended, "", 0, false
	x.SuspendStep, x.WaitingFor, x.WakeAt = in.Name, in.Signal, 0
	if in.Event != "" {
		x.WaitingFor = store.EventWaitFor(in.Event)
		s.waitEvent(x.ID, in)
	}
	switch {
	case x.WaitingFor == "":
		x.WakeAt = in.Until
	case in.Timeout > 0:
		x.WakeAt = in.Now + in.Timeout
	}
	s.Execs[x.ID] = *x
}

// signal applies a Signal (store.Store.Signal).
func (s *State) signal(in Input, out Output) error {
	x, ok := s.lookup(in.Tenant, in.ID)
	if !ok {
		return wantCode(out.Err, CodeNotFound)
	}
	f := s.Flows[x.ID]
	if in.IdemKey != "" {
		for _, a := range f.Answers {
			if a.Key == in.IdemKey { // a repeat: the first answer, nothing changed
				if err := wantCode(out.Err, OK); err != nil {
					return err
				}
				if out.Delivered != a.Delivered {
					return fmt.Errorf("repeat of signal key %s answered delivered=%t, want the first answer %t",
						in.IdemKey, out.Delivered, a.Delivered)
				}
				return nil
			}
		}
	}
	if x.Status.Terminal() {
		return wantCode(out.Err, CodeNotActive)
	}
	if err := wantCode(out.Err, OK); err != nil {
		return err
	}
	delivered := x.Status == store.StatusSuspended && x.WaitingFor == in.Name
	if out.Delivered != delivered {
		return fmt.Errorf("signal %s to %s (%s, waiting for %q) answered delivered=%t, want %t",
			in.Name, short(x.ID), x.Status, x.WaitingFor, out.Delivered, delivered)
	}
	if in.IdemKey != "" {
		f.Answers = append(slices.Clip(f.Answers), Answer{Key: in.IdemKey, Delivered: delivered})
	}
	if !delivered {
		f.Signals = append(slices.Clip(f.Signals), SignalIn{Name: in.Name, Data: null(in.Data)})
	}
	s.setFlow(x.ID, f)
	if delivered {
		s.record(&x, x.SuspendStep, null(in.Data), in.Now)
		s.resume(&x, in.Now)
	}
	return nil
}
