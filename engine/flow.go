package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/latch-run/latch/store"
)

// Flows (docs/flows.md). A handler runs its execution as a flow by calling
// Job.Step, Job.Sleep, Job.WaitSignal, Job.Spawn and Job.WaitChildren. Each consults the journal its
// lease carried first, so a run after a crash, a retry or a resume skips
// every step recorded before it.

var (
	// ErrSuspended is returned by Job.Sleep, Job.WaitSignal and
	// Job.WaitChildren when the execution was suspended: the lease is
	// over, and the handler must return at once, with this error (or one
	// wrapping it). The worker then ends the attempt without writing
	// anything more and without counting a failure; the execution runs
	// again, from the start of the handler, when it resumes.
	ErrSuspended = errors.New("engine: flow suspended")

	// ErrWaitTimedOut is returned by Job.WaitSignal when the wait's
	// timeout passed before the signal came, and by Job.WaitChildren
	// (with the children as they were) when it passed before enough
	// children ended.
	ErrWaitTimedOut = errors.New("engine: wait timed out")

	// errNoFlow: a Job made outside a Worker (a test's) has no store.
	errNoFlow = errors.New("engine: this job was not claimed by a worker, so it cannot record steps")
)

// flow is the journal and the store access of one attempt's Job.
type flow struct {
	a *attempt

	mu      sync.Mutex
	journal Journal
	// after is where the next page of the journal's rest starts
	// (store.StepsPage.Next), when the lease did not carry all of it.
	after int64
	// suspendedAs is the status a written Suspend left the execution in
	// (suspended, queued or cancelled); "" while none was written.
	suspendedAs store.Status
}

func newFlow(a *attempt) *flow {
	return &flow{a: a, journal: NewJournal(a.lease.Steps, !a.lease.StepsPartial)}
}

// recorded returns the journal's result for name, if any. A lease that
// carried the journal's first steps only (store.Lease.StepsPartial) has
// the rest read, a page of store.ClaimJournalBytes at a time, on the first
// name not found in what the flow holds, until name is found or the
// journal ends: a step recorded before the attempt is never run again for
// want of its record, and a flow that finds every step in its lease reads
// nothing more.
func (f *flow) recorded(ctx context.Context, name string) (json.RawMessage, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.journal.Lookup(name, func(add func(string, json.RawMessage)) (bool, error) {
		a := f.a
		page, err := a.w.cfg.Store.Steps(ctx, &store.StepsParams{Tenant: a.lease.Tenant, ID: a.lease.ExecutionID,
			After: f.after, Limit: store.MaxListLimit, MaxBytes: store.ClaimJournalBytes})
		if err != nil {
			return false, leaseError(fmt.Errorf("step %q: read the journal: %w", name, err))
		}
		for _, st := range page.Items {
			add(st.Name, st.Result)
		}
		f.after = page.Next
		return page.Next == 0, nil
	})
}

// Step runs fn as the flow step name, once: if the journal holds name, it
// returns the recorded result without calling fn; otherwise it calls fn
// and records its result (JSON; nil is null) before returning it. When
// two runs race to record one step the first record wins, and Step
// returns that one. An error from fn records nothing and is returned as
// it is: return it from the handler to fail (or retry) the attempt.
//
// Recorded once is not run once: a process that dies after fn did its
// work and before the record runs fn again on the next attempt. Make fn's
// effect idempotent with the execution id and the step name (an
// idempotency key of the service it calls).
func (j *Job) Step(ctx context.Context, name string, fn func(ctx context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	if j == nil || j.flow == nil {
		return nil, errNoFlow
	}
	if err := store.CheckStepName(name); err != nil {
		return nil, Permanent(err)
	}
	if r, ok, err := j.flow.recorded(ctx, name); ok || err != nil {
		return r, err
	}
	started := j.flow.a.w.cfg.Now()
	ctx, span := j.flow.a.startStep(ctx, name)
	result, err := fn(ctx)
	if err == nil {
		result, err = j.flow.record(ctx, name, result, started)
	}
	endSpan(span, err)
	if err != nil {
		return nil, err
	}
	return result, nil
}

// record writes a step and returns the result that won.
func (f *flow) record(ctx context.Context, name string, result json.RawMessage, started time.Time) (json.RawMessage, error) {
	raw, err := StepRecord(name, result)
	if err != nil {
		return nil, err
	}
	a := f.a
	var res *store.RecordStepResult
	err = a.write(ctx, "step", func(ctx context.Context) (err error) {
		res, err = a.w.cfg.Store.RecordStep(ctx, &store.RecordStepParams{
			ExecutionID: a.lease.ExecutionID,
			Tenant:      a.lease.Tenant,
			Token:       a.lease.Token,
			Name:        name,
			Result:      raw,
			StartedAt:   started,
			Now:         a.w.cfg.Now(),
		})
		return err
	})
	if err != nil {
		return nil, FlowError(name, err)
	}
	f.mu.Lock()
	f.journal.Note(name, res.Step.Result)
	f.mu.Unlock()
	return res.Step.Result, nil
}

// Sleep pauses the flow for d as the step name. If the journal holds name
// the sleep is over and Sleep returns nil. A d of zero or less records the
// step and returns nil at once. Otherwise the execution is suspended until
// now+d and Sleep returns ErrSuspended: return it from the handler. The
// execution holds no worker slot while it sleeps; when it wakes, the
// handler runs again and this Sleep returns nil.
func (j *Job) Sleep(ctx context.Context, name string, d time.Duration) error {
	if j == nil || j.flow == nil {
		return errNoFlow
	}
	if _, ok, err := j.flow.recorded(ctx, name); ok || err != nil {
		return err
	}
	if d <= 0 {
		_, err := j.Step(ctx, name, func(context.Context) (json.RawMessage, error) { return nil, nil })
		return err
	}
	return j.flow.suspend(ctx, &store.SuspendParams{Step: name, Until: j.flow.a.w.cfg.Now().Add(d)})
}

// WaitSignal waits, as the step name, for the signal called signal (sent
// with the HTTP API, the CLI or Client.Signal) and returns its data. If
// the journal holds name the wait is over: WaitSignal returns the data
// recorded, or ErrWaitTimedOut if the timeout passed first. Otherwise the
// execution is suspended until the signal comes (at once, if one was
// already sent and not yet consumed) or timeout passes (0: no timeout),
// and WaitSignal returns ErrSuspended: return it from the handler.
//
// A timed-out wait is recorded as {"timed_out":true}; a signal whose data
// is exactly that reads as a timeout too.
func (j *Job) WaitSignal(ctx context.Context, name, signal string, timeout time.Duration) (json.RawMessage, error) {
	if j == nil || j.flow == nil {
		return nil, errNoFlow
	}
	if r, ok, err := j.flow.recorded(ctx, name); ok || err != nil {
		if err != nil {
			return nil, err
		}
		return RecordedSignal(r)
	}
	return nil, j.flow.suspend(ctx, &store.SuspendParams{Step: name, Signal: signal, Timeout: max(timeout, 0)})
}

// suspend writes the suspension and returns ErrSuspended once it is
// written, whatever the store made of it (suspended, queued again at once,
// or cancelled): the lease is over in each case.
func (f *flow) suspend(ctx context.Context, p *store.SuspendParams) error {
	if err := p.Check(); err != nil {
		return Permanent(err)
	}
	a := f.a
	p.ExecutionID, p.Tenant, p.Token = a.lease.ExecutionID, a.lease.Tenant, a.lease.Token
	var x *store.Execution
	err := a.write(ctx, "suspend", func(ctx context.Context) (err error) {
		p.Now = a.w.cfg.Now()
		x, err = a.w.cfg.Store.Suspend(ctx, p)
		return err
	})
	if err != nil {
		return FlowError(p.Step, err)
	}
	f.mu.Lock()
	f.suspendedAs = x.Status
	f.mu.Unlock()
	a.log.Debug("flow suspended", "step", p.Step, "status", x.Status)
	return ErrSuspended
}

// suspension returns the status a written Suspend left the execution in,
// or "" if the attempt did not suspend.
func (f *flow) suspension() store.Status {
	if f == nil {
		return ""
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.suspendedAs
}

// leaseError turns a store's lease verdict into the engine's ErrLeaseLost,
// which the handler returns and the worker understands; other errors pass.
func leaseError(err error) error {
	if errors.Is(err, store.ErrLeaseLost) || errors.Is(err, store.ErrNotFound) {
		return ErrLeaseLost
	}
	return err
}
