package latch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/latch-run/latch/engine"
	"github.com/latch-run/latch/internal/tracing"
	"github.com/latch-run/latch/remote"
	"github.com/latch-run/latch/store"
)

// remoteFlow is the flowEngine of a Job a remote worker claimed: the
// journal its lease carried, read on (GET …/steps) when the lease carried
// part of it, and the flow's records, suspensions and spawns sent under
// the lease's token (docs/api.md, "Flows"). It keeps the rules of the
// engine's flow: a step recorded before is never run again, a bound of the
// journal or of the children fails the execution for good (Permanent), a
// lost lease is ErrLeaseLost, and a written suspension ends the lease with
// ErrSuspended.
type remoteFlow struct {
	a *remoteAttempt

	mu      sync.Mutex
	journal engine.Journal
	// cursor is where the next page of the journal's rest starts ("" =
	// the first page), when the lease did not carry all of it.
	cursor string
	// suspendedAs is the status a written suspend left the execution in;
	// "" while none was written.
	suspendedAs remote.Status
}

func newRemoteFlow(a *remoteAttempt) *remoteFlow {
	return &remoteFlow{a: a, journal: engine.NewJournal(a.lease.Steps, a.lease.StepsComplete)}
}

// recorded returns the journal's result for name, if any, reading the
// rest of the journal page by page, as the engine's flow does, when the
// lease did not carry all of it.
func (f *remoteFlow) recorded(ctx context.Context, name string) (json.RawMessage, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.journal.Lookup(name, func(add func(string, json.RawMessage)) (bool, error) {
		cctx, cancel := f.a.callCtx(ctx)
		page, err := f.a.w.c.StepsPage(cctx, f.a.lease.ExecutionID, remote.PageOptions{Cursor: f.cursor})
		cancel()
		if err != nil {
			if errors.Is(err, remote.ErrNotFound) {
				return false, engine.ErrLeaseLost // deleted: every call under the lease is lost
			}
			return false, fmt.Errorf("step %q: read the journal: %w", name, fromRemote(err))
		}
		for _, st := range page.Items {
			add(st.Name, st.Result)
		}
		if page.NextCursor == nil || *page.NextCursor == "" {
			return true, nil
		}
		f.cursor = *page.NextCursor
		return false, nil
	})
}

func (f *remoteFlow) note(name string, result json.RawMessage) {
	f.mu.Lock()
	f.journal.Note(name, result)
	f.mu.Unlock()
}

// Step: as engine.Job.Step, its record sent with POST …/steps.
func (f *remoteFlow) Step(ctx context.Context, name string, fn func(ctx context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	if err := store.CheckStepName(name); err != nil {
		return nil, Permanent(err)
	}
	if r, ok, err := f.recorded(ctx, name); ok || err != nil {
		return r, err
	}
	started := time.Now().UTC()
	sctx, span := tracing.Start(ctx, f.a.w.tracer, "step "+name, trace.SpanKindInternal, tracing.AttrExecutionID.String(f.a.lease.ExecutionID))
	result, err := fn(sctx)
	if err == nil {
		result, err = f.record(sctx, name, result, started)
	}
	endSpan(span, err)
	if err != nil {
		return nil, err
	}
	return result, nil
}

func (f *remoteFlow) record(ctx context.Context, name string, result json.RawMessage, started time.Time) (json.RawMessage, error) {
	raw, err := engine.StepRecord(name, result)
	if err != nil {
		return nil, err
	}
	var res remote.StepRecorded
	err = f.a.write(ctx, "steps", remote.StepRequest{LeaseToken: f.a.lease.LeaseToken, Name: name, Result: raw, StartedAt: &started}, &res)
	if err != nil {
		return nil, remoteFlowError(name, err)
	}
	f.note(name, res.Result)
	return res.Result, nil
}

// Sleep: as engine.Job.Sleep.
func (f *remoteFlow) Sleep(ctx context.Context, name string, d time.Duration) error {
	if _, ok, err := f.recorded(ctx, name); ok || err != nil {
		return err
	}
	if d <= 0 {
		_, err := f.Step(ctx, name, func(context.Context) (json.RawMessage, error) { return nil, nil })
		return err
	}
	return f.suspend(ctx, &store.SuspendParams{Step: name, Until: time.Now().Add(d)})
}

// WaitSignal: as engine.Job.WaitSignal.
func (f *remoteFlow) WaitSignal(ctx context.Context, name, signal string, timeout time.Duration) (json.RawMessage, error) {
	if r, ok, err := f.recorded(ctx, name); ok || err != nil {
		if err != nil {
			return nil, err
		}
		return engine.RecordedSignal(r)
	}
	return nil, f.suspend(ctx, &store.SuspendParams{Step: name, Signal: signal, Timeout: max(timeout, 0)})
}

// WaitEvent: as engine.Job.WaitEvent, the wait suspended over HTTP.
func (f *remoteFlow) WaitEvent(ctx context.Context, name, event, key string, since time.Time, timeout time.Duration) (json.RawMessage, error) {
	if r, ok, err := f.recorded(ctx, name); ok || err != nil {
		if err != nil {
			return nil, err
		}
		return engine.RecordedEvent(name, r)
	}
	return nil, f.suspend(ctx, &store.SuspendParams{Step: name, Event: event, EventKey: key, Since: since, Timeout: max(timeout, 0)})
}

// suspend sends the suspension and returns ErrSuspended once it is
// written, whatever the server made of it: the lease is over.
func (f *remoteFlow) suspend(ctx context.Context, p *store.SuspendParams) error {
	if err := p.Check(); err != nil {
		return Permanent(err)
	}
	req := remote.SuspendRequest{LeaseToken: f.a.lease.LeaseToken, Step: p.Step, Signal: p.Signal, Children: p.Children, Count: p.Count,
		Event: p.Event, Key: p.EventKey,
		TimeoutSeconds: int((p.Timeout + time.Second - 1) / time.Second)} // a part of a second waits the whole second
	if !p.Until.IsZero() {
		until := p.Until.UTC()
		req.Until = &until
	}
	if !p.Since.IsZero() {
		since := p.Since.UTC()
		req.Since = &since
	}
	var x remote.Execution
	if err := f.a.write(ctx, "suspend", req, &x); err != nil {
		return remoteFlowError(p.Step, err)
	}
	f.mu.Lock()
	f.suspendedAs = x.Status
	f.mu.Unlock()
	f.a.log.Debug("flow suspended", "step", p.Step, "status", x.Status)
	return ErrSuspended
}

// suspension is the status a written suspend left the execution in, or
// "" if the attempt did not suspend.
func (f *remoteFlow) suspension() remote.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.suspendedAs
}

// Spawn: as engine.Job.Spawn, the children admitted with POST …/children.
func (f *remoteFlow) Spawn(ctx context.Context, name string, items []store.Submission, ends store.ParentEnd) ([]string, error) {
	if err := store.CheckStepName(name); err != nil {
		return nil, Permanent(err)
	}
	if r, ok, err := f.recorded(ctx, name); err != nil {
		return nil, err
	} else if ok {
		return engine.SpawnedIDs(name, r)
	}
	p := store.SpawnParams{Step: name, Items: items, OnParentEnd: ends}
	if err := p.Check(time.Now(), store.DefaultMaxPayloadBytes); err != nil {
		return nil, Permanent(fmt.Errorf("spawn %q: %w", name, err))
	}
	req := remote.SpawnRequest{LeaseToken: f.a.lease.LeaseToken, Step: name, Items: make([]remote.SubmitRequest, len(items)),
		OnParentEnd: string(ends)}
	for i, it := range items {
		sub := remote.SubmitRequest{Kind: it.Kind, Payload: it.Payload, Queue: it.Queue, Priority: it.Priority,
			MaxAttempts: it.MaxAttempts, TimeoutSeconds: it.TimeoutSeconds, ConcurrencyKey: it.ConcurrencyKey,
			ConcurrencyLimit: it.ConcurrencyLimit, RateKey: it.RateKey}
		if len(it.Payload) == 0 {
			sub.Payload = nil
		}
		if !it.RunAt.IsZero() {
			at := it.RunAt.UTC()
			sub.RunAt = &at
		}
		req.Items[i] = sub
	}
	sctx, span := tracing.Start(ctx, f.a.w.tracer, "step "+name, trace.SpanKindInternal, tracing.AttrExecutionID.String(f.a.lease.ExecutionID))
	var res remote.Spawned
	err := f.a.write(sctx, "children", req, &res) // the children join the trace of this step (traceparent)
	endSpan(span, err)
	if err != nil {
		return nil, remoteSpawnError(name, err)
	}
	ids := make([]string, len(res.Children))
	for i, c := range res.Children {
		ids[i] = c.ExecutionID
	}
	f.note(name, store.SpawnStep(ids))
	f.a.log.Debug("flow spawned children", "step", name, "children", len(ids), "recorded", res.Recorded)
	return ids, nil
}

// WaitChildren: as engine.Job.WaitChildren.
func (f *remoteFlow) WaitChildren(ctx context.Context, name, spawn string, count int, timeout time.Duration) (*store.FanInResult, error) {
	if r, ok, err := f.recorded(ctx, name); err != nil {
		return nil, err
	} else if ok {
		return engine.RecordedFanIn(name, r)
	}
	r, ok, err := f.recorded(ctx, spawn)
	if err != nil {
		return nil, err
	}
	if err := engine.CheckFanIn(name, spawn, count, r, ok); err != nil {
		return nil, err
	}
	return nil, f.suspend(ctx, &store.SuspendParams{Step: name, Children: spawn, Count: count, Timeout: max(timeout, 0)})
}

// remoteErrors pairs the API's problem codes with the store's sentinels a
// handler's error is tested against (errors.Is with latch.ErrX).
var remoteErrors = []struct{ remote, local error }{
	{remote.ErrLeaseLost, store.ErrLeaseLost},
	{remote.ErrTooManySteps, store.ErrTooManySteps},
	{remote.ErrJournalTooLarge, store.ErrJournalTooLarge},
	{remote.ErrTooManyChildren, store.ErrTooManyChildren},
	{remote.ErrQuotaExceeded, store.ErrQuotaExceeded},
	{remote.ErrStorageExceeded, store.ErrStorageExceeded},
	{remote.ErrInvalidRequest, store.ErrInvalid},
	{remote.ErrNotFound, store.ErrNotFound},
}

// remoteError is an error answer of the server that errors.Is matches
// with its remote sentinel and with the store's of the same meaning.
type remoteError struct {
	err   error // the *remote.Error
	local error // the store's sentinel
}

func (e *remoteError) Error() string   { return e.local.Error() + " (" + e.err.Error() + ")" }
func (e *remoteError) Unwrap() []error { return []error{e.err, e.local} }

// fromRemote makes err, an answer of the server, match the store's
// sentinel of its code too; other errors pass.
func fromRemote(err error) error {
	for _, m := range remoteErrors {
		if errors.Is(err, m.remote) {
			return &remoteError{err: err, local: m.local}
		}
	}
	return err
}

// remoteFlowError is engine.FlowError for an answer of the server, its
// problem code matched to the store's sentinel first.
func remoteFlowError(step string, err error) error { return engine.FlowError(step, fromRemote(err)) }

// remoteSpawnError is engine.SpawnError for an answer of the server.
func remoteSpawnError(name string, err error) error { return engine.SpawnError(name, fromRemote(err)) }
