package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/latch-run/latch/internal/tracing"
	"github.com/latch-run/latch/store"
)

// Children (docs/flows.md, "Children"): a flow spawns child executions
// under a step (Job.Spawn) and waits for them (Job.WaitChildren). Both
// consult the journal first, so a run after a crash, a retry or a resume
// gets the ids the first spawn made, and the outcomes its wait recorded.

// Spawn admits items as children of the flow's execution under the step
// name, all of them or none, and returns their ids in item order. If the
// journal holds name, nothing is admitted and the recorded ids are
// returned: a replay gets the children of the first spawn, whatever items
// hold now. ends says what the parent's end does to them ("" = cancel).
//
// The errors: ErrLeaseLost; store.ErrQuotaExceeded and
// store.ErrStorageExceeded as they are (nothing admitted: returned from
// the handler, the attempt is retried later); Permanent errors for items
// that break a rule, a name recorded by something other than a spawn,
// and the bounds of children (store.ErrTooManyChildren) and of the
// journal.
func (j *Job) Spawn(ctx context.Context, name string, items []store.Submission, ends store.ParentEnd) ([]string, error) {
	if j == nil || j.flow == nil {
		return nil, errNoFlow
	}
	if err := store.CheckStepName(name); err != nil {
		return nil, Permanent(err)
	}
	if r, ok, err := j.flow.recorded(ctx, name); err != nil {
		return nil, err
	} else if ok {
		return SpawnedIDs(name, r)
	}
	f := j.flow
	a := f.a
	ctx, span := a.startStep(ctx, name)
	p := store.SpawnParams{
		ExecutionID: a.lease.ExecutionID,
		Tenant:      a.lease.Tenant,
		Token:       a.lease.Token,
		Step:        name,
		Items:       make([]store.Submission, len(items)),
		OnParentEnd: ends,
	}
	// The children's runs join the trace of this step.
	traceParent := tracing.Current(ctx)
	for i, it := range items {
		if it.TraceParent == "" {
			it.TraceParent = traceParent
		}
		p.Items[i] = it
	}
	if err := p.Check(a.w.cfg.Now(), store.DefaultMaxPayloadBytes); err != nil {
		endSpan(span, err)
		return nil, Permanent(fmt.Errorf("spawn %q: %w", name, err))
	}
	var res *store.SpawnResult
	err := a.write(ctx, "spawn", func(ctx context.Context) (err error) {
		p.Now = a.w.cfg.Now()
		res, err = a.w.cfg.Store.Spawn(ctx, &p)
		return err
	})
	endSpan(span, err)
	if err != nil {
		return nil, SpawnError(name, err)
	}
	ids := make([]string, len(res.Children))
	for i, c := range res.Children {
		ids[i] = c.ID
	}
	f.mu.Lock()
	f.journal.Note(name, res.Step.Result)
	f.mu.Unlock()
	a.log.Debug("flow spawned children", "step", name, "children", len(ids), "recorded", res.Recorded)
	return ids, nil
}

// WaitChildren waits, as the step name, until count of the children of the
// spawn step spawn (0 = all) have ended, or timeout passes (0: no timeout),
// and returns every child of that spawn, in spawn order, as it was then.
// If the journal holds name the wait is over and its record is returned
// (with ErrWaitTimedOut when the timeout ended it). Otherwise the execution
// is suspended until the condition holds — queued again at once when it
// holds already — and WaitChildren returns ErrSuspended: return it from
// the handler. A child that failed does not fail the wait: its outcome is
// in the result, for the flow to decide.
func (j *Job) WaitChildren(ctx context.Context, name, spawn string, count int, timeout time.Duration) (*store.FanInResult, error) {
	if j == nil || j.flow == nil {
		return nil, errNoFlow
	}
	if r, ok, err := j.flow.recorded(ctx, name); err != nil {
		return nil, err
	} else if ok {
		return RecordedFanIn(name, r)
	}
	r, ok, err := j.flow.recorded(ctx, spawn)
	if err != nil {
		return nil, err
	}
	if err := CheckFanIn(name, spawn, count, r, ok); err != nil {
		return nil, err
	}
	return nil, j.flow.suspend(ctx, &store.SuspendParams{Step: name, Children: spawn, Count: count, Timeout: max(timeout, 0)})
}
