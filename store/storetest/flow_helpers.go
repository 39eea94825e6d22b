package storetest

import (
	"encoding/json"
	"time"

	"github.com/latch-run/latch/store"
)

// The env's calls of the flow operations. Like heartbeat and complete they
// return the error for the test to judge; the ones named want* fail the
// test on an unexpected error.

func (e *env) recordStep(l store.Lease, now time.Time, name, result string) (*store.RecordStepResult, error) {
	var raw json.RawMessage
	if result != "" {
		raw = mustJSON(result)
	}
	return e.s.RecordStep(e.ctx, &store.RecordStepParams{
		ExecutionID: l.ExecutionID, Tenant: l.Tenant, Token: l.Token, Name: name, Result: raw, Now: now,
	})
}

func (e *env) sleep(l store.Lease, now time.Time, step string, until time.Time) (*store.Execution, error) {
	return e.s.Suspend(e.ctx, &store.SuspendParams{
		ExecutionID: l.ExecutionID, Tenant: l.Tenant, Token: l.Token, Step: step, Until: until, Now: now,
	})
}

func (e *env) wait(l store.Lease, now time.Time, step, signal string, timeout time.Duration) (*store.Execution, error) {
	return e.s.Suspend(e.ctx, &store.SuspendParams{
		ExecutionID: l.ExecutionID, Tenant: l.Tenant, Token: l.Token, Step: step,
		Signal: signal, Timeout: timeout, Now: now,
	})
}

func (e *env) signal(tenant, id, name, data, key string, now time.Time) (*store.SignalResult, error) {
	var raw json.RawMessage
	if data != "" {
		raw = mustJSON(data)
	}
	return e.s.Signal(e.ctx, &store.SignalParams{
		Tenant: tenant, ExecutionID: id, Name: name, Data: raw, IdempotencyKey: key, Now: now,
	})
}

// wantSignal sends a signal that must succeed and reports Delivered.
func (e *env) wantSignal(id, name, data string, now time.Time, delivered bool) {
	e.t.Helper()
	res, err := e.signal(acme, id, name, data, "", now)
	e.must(err, "Signal "+name)
	if res == nil {
		e.t.Fatal("Signal returned a nil result and no error")
	}
	if res.Delivered != delivered {
		e.t.Errorf("Signal %s: Delivered = %v, want %v", name, res.Delivered, delivered)
	}
}

func (e *env) wake(now time.Time, limit int) int {
	e.t.Helper()
	res, err := e.s.Wake(e.ctx, &store.WakeParams{Now: now, Limit: limit})
	e.must(err, "Wake")
	if res == nil {
		e.t.Fatal("Wake returned a nil result and no error")
	}
	return res.Woken
}

func (e *env) steps(id string) []*store.Step {
	e.t.Helper()
	st, err := e.s.Steps(e.ctx, &store.StepsParams{ID: id})
	e.must(err, "Steps "+id)
	if st.Next != 0 {
		e.t.Errorf("Steps of %s without a page bound: next %d, want 0", id, st.Next)
	}
	return st.Items
}

// wantJournal asserts the execution's journal: names in record order, and
// each one's result (canonical JSON; "null" for none).
func (e *env) wantJournal(id string, want ...[2]string) []*store.Step {
	e.t.Helper()
	got := e.steps(id)
	if len(got) != len(want) {
		names := make([]string, len(got))
		for i, s := range got {
			names[i] = s.Name
		}
		e.t.Fatalf("journal of %s: %d steps %q, want %d", id, len(got), names, len(want))
	}
	for i, w := range want {
		if got[i].Name != w[0] {
			e.t.Errorf("journal of %s: step %d is %q, want %q", id, i, got[i].Name, w[0])
		}
		wantJSON(e.t, "result of step "+w[0], got[i].Result, mustJSON(w[1]))
		if got[i].Result == nil {
			e.t.Errorf("journal of %s: step %q has a nil Result, want JSON (null for none)", id, w[0])
		}
	}
	return got
}

// wantLeaseJournal asserts the journal a lease carries.
func wantLeaseJournal(e *env, l store.Lease, want map[string]string) {
	e.t.Helper()
	if len(l.Steps) != len(want) {
		e.t.Errorf("lease of %s carries %d steps %v, want %d", l.ExecutionID, len(l.Steps), l.Steps, len(want))
	}
	for name, result := range want {
		got, ok := l.Steps[name]
		if !ok {
			e.t.Errorf("lease of %s: step %q missing from its journal", l.ExecutionID, name)
			continue
		}
		wantJSON(e.t, "lease journal "+name, got, mustJSON(result))
	}
}

// wantSuspended asserts that the execution is suspended as given, holding
// no lease.
func (e *env) wantSuspended(id, step, waitingFor string, wakeAt time.Time) *store.Execution {
	e.t.Helper()
	x := e.wantStatus(id, store.StatusSuspended)
	if x.SuspendStep != step || x.WaitingFor != waitingFor {
		e.t.Errorf("suspended %s: step %q waiting for %q, want %q and %q", id, x.SuspendStep, x.WaitingFor, step, waitingFor)
	}
	switch {
	case wakeAt.IsZero() && x.WakeAt != nil:
		e.t.Errorf("suspended %s: WakeAt %s, want nil", id, fmtTime(*x.WakeAt))
	case !wakeAt.IsZero():
		wantTimePtr(e.t, "WakeAt", x.WakeAt, wakeAt)
	}
	if x.LeaseExpiresAt != nil || x.WorkerID != "" {
		e.t.Errorf("suspended %s still shows a lease (worker %q, expires %v)", id, x.WorkerID, x.LeaseExpiresAt)
	}
	return x
}

// wantResumed asserts that the execution is queued with no trace of its
// suspension.
func (e *env) wantResumed(id string) *store.Execution {
	e.t.Helper()
	x := e.wantStatus(id, store.StatusQueued)
	if x.WakeAt != nil || x.WaitingFor != "" || x.SuspendStep != "" {
		e.t.Errorf("resumed %s keeps its suspension: WakeAt %v WaitingFor %q SuspendStep %q",
			id, x.WakeAt, x.WaitingFor, x.SuspendStep)
	}
	return x
}
