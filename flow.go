package latch

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/latch-run/latch/store"
)

// Flows (docs/flows.md): a handler records steps, sleeps and waits for
// signals; a run after a crash, a retry or a resume skips what was
// recorded.

// Step runs fn once as the flow step name and returns its result as
// recorded (JSON). If an earlier run of this execution recorded name,
// fn is not called and the recorded result is returned. An error from fn
// records nothing and is returned as it is. A new name when the journal
// holds store.MaxSteps steps records nothing and returns ErrTooManySteps,
// marked Permanent: return it and the execution fails without a retry.
//
// A step is recorded once, but fn may run more than once: if the process
// dies after fn did its work and before the record, the next run calls it
// again. Make its effect idempotent with the execution id and the step
// name, e.g. as the idempotency key of the service it calls.
func (j *Job) Step(ctx context.Context, name string, fn func(ctx context.Context) (any, error)) (json.RawMessage, error) {
	return j.flow().Step(ctx, name, func(ctx context.Context) (json.RawMessage, error) {
		v, err := fn(ctx)
		if err != nil {
			return nil, err
		}
		return marshalResult(v)
	})
}

// StepValue is Step with a typed result: fn's value is recorded as JSON,
// and a recorded result is decoded into a T.
func StepValue[T any](ctx context.Context, j *Job, name string, fn func(ctx context.Context) (T, error)) (T, error) {
	var v T
	raw, err := j.Step(ctx, name, func(ctx context.Context) (any, error) { return fn(ctx) })
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, Permanent(fmt.Errorf("step %q: decoding the recorded result: %w", name, err))
	}
	return v, nil
}

// Sleep pauses the flow for d as the step name. Once the sleep is over
// (on the run after it), Sleep returns nil. Otherwise the execution is
// suspended, holding no worker, and Sleep returns ErrSuspended: return it
// from the handler at once. d <= 0 records the step and returns nil.
func (j *Job) Sleep(ctx context.Context, name string, d time.Duration) error {
	return j.flow().Sleep(ctx, name, d)
}

// WaitSignal waits, as the step name, for the signal called signal (see
// Client.Signal) and returns its data, or ErrWaitTimedOut when timeout (0:
// none) passed first. Until then the execution is suspended, holding no
// worker, and WaitSignal returns ErrSuspended: return it from the handler
// at once. A signal sent before the wait is kept and ends it at once.
func (j *Job) WaitSignal(ctx context.Context, name, signal string, timeout time.Duration) (json.RawMessage, error) {
	return j.flow().WaitSignal(ctx, name, signal, timeout)
}

// SignalOptions change Signal.
type SignalOptions struct {
	// IdempotencyKey makes the signal once-only for this execution: a
	// repeat with the same key answers what the first call answered and
	// changes nothing, even after the execution ended.
	IdempotencyKey string
}

// Signal sends the signal name with data (marshalled to JSON; nil is
// null) to an execution. delivered is true when it ended a wait at once,
// false when it is kept for a later wait of that name. ErrNotActive if the
// execution has ended; ErrSignalBufferFull if it would be kept and the
// execution keeps as many signals as it may (nothing written).
func (c *Client) Signal(ctx context.Context, tenant, id, name string, data any, opts SignalOptions) (delivered bool, err error) {
	var raw json.RawMessage
	if data != nil {
		if raw, err = marshalPayload(data); err != nil {
			return false, fmt.Errorf("latch: signal %s: %w", id, err)
		}
	}
	if err := store.CheckSignalName(name); err != nil {
		return false, fmt.Errorf("latch: signal %s: %w", id, err)
	}
	res, err := c.st.Signal(ctx, &store.SignalParams{Tenant: tenant, ExecutionID: id, Name: name, Data: raw,
		IdempotencyKey: opts.IdempotencyKey, Now: time.Now()})
	if err != nil {
		return false, fmt.Errorf("latch: signal %s: %w", id, err)
	}
	return res.Delivered, nil
}

// Retry queues a failed execution again: it keeps its journal, so the
// steps it recorded are not run again, and its attempts start afresh. It
// takes a quota slot (ErrQuotaExceeded at the quota). ErrNotFailed if it
// is not failed. A child spawned with cancel whose parent has ended (or has
// its cancel requested) is not queued: it is answered cancelled.
func (c *Client) Retry(ctx context.Context, tenant, id string) (*Execution, error) {
	e, err := c.st.Retry(ctx, &store.RetryParams{Tenant: tenant, ID: id, Now: time.Now()})
	if err != nil {
		return nil, fmt.Errorf("latch: retry %s: %w", id, err)
	}
	return fromStoreExecution(e), nil
}

// Step is one recorded step of an execution's journal.
type Step struct {
	Name       string
	Result     json.RawMessage
	StartedAt  time.Time // zero if the worker did not say
	RecordedAt time.Time
	Attempt    int
}

// Steps reads an execution's journal, in record order.
func (c *Client) Steps(ctx context.Context, tenant, id string) ([]Step, error) {
	st, err := c.st.Steps(ctx, &store.StepsParams{Tenant: tenant, ID: id})
	if err != nil {
		return nil, fmt.Errorf("latch: steps of %s: %w", id, err)
	}
	out := make([]Step, len(st.Items))
	for i, s := range st.Items {
		out[i] = Step{Name: s.Name, Result: s.Result, StartedAt: s.StartedAt, RecordedAt: s.RecordedAt, Attempt: s.Attempt}
	}
	return out, nil
}
