package store

import (
	"encoding/json"
	"time"
)

// Flows (docs/flows.md): an execution run as a flow records named steps in
// its journal, sleeps and waits for signals. The journal and the signal
// buffer belong to the execution: they go when it is deleted (force,
// retention, tenant delete) and nowhere else.

// TimedOut is the result recorded for a wait whose timeout passed before a
// signal came.
var TimedOut = json.RawMessage(`{"timed_out":true}`)

// Step is one recorded step of an execution's journal.
type Step struct {
	Name   string
	Result json.RawMessage // canonical JSON, never nil ("null" for none)
	// StartedAt is when the worker says it began the step; zero if it did
	// not say.
	StartedAt  time.Time
	RecordedAt time.Time
	// Attempt is the execution's attempt when the step was recorded.
	Attempt int
}

// Journal maps each recorded step's name to its result: what a lease
// carries so that a run skips the steps recorded before it.
type Journal map[string]json.RawMessage

// RecordStepParams are the arguments of Store.RecordStep.
type RecordStepParams struct {
	ExecutionID string
	Tenant      string // "" = any tenant
	Token       string
	Name        string
	Result      json.RawMessage // canonical JSON; nil = null
	StartedAt   time.Time       // zero = not given
	// MaxSteps overrides the journal's bound (MaxSteps) when above 0. It
	// is for tests, which reach the bound in a few calls: the engine and
	// the API never set it, so no request chooses its own bound.
	MaxSteps int
	Now      time.Time
}

// StepBound is the journal's bound this call enforces.
func (p *RecordStepParams) StepBound() int { return bound(p.MaxSteps, MaxSteps) }

// RecordStepResult is the step as recorded: the one given (Recorded) or the
// one recorded before under the same name, which wins.
type RecordStepResult struct {
	Step     Step
	Recorded bool
}

// SuspendParams are the arguments of Store.Suspend. Exactly one of Until
// (a sleep) and Signal (a wait) is set.
type SuspendParams struct {
	ExecutionID string
	Tenant      string // "" = any tenant
	Token       string
	// Step is the name the suspension's outcome is recorded under: null
	// for a sleep, the signal's data or TimedOut for a wait.
	Step   string
	Until  time.Time
	Signal string
	// Timeout bounds a wait: it ends with TimedOut at Now+Timeout. 0 =
	// no timeout.
	Timeout time.Duration
	// MaxSteps overrides the journal's bound as RecordStepParams.MaxSteps
	// does (tests only).
	MaxSteps int
	Now      time.Time
}

// StepBound is the journal's bound this call enforces.
func (p *SuspendParams) StepBound() int { return bound(p.MaxSteps, MaxSteps) }

// SignalParams are the arguments of Store.Signal.
type SignalParams struct {
	Tenant      string // "" = any tenant
	ExecutionID string
	Name        string
	Data        json.RawMessage // canonical JSON; nil = null
	// IdempotencyKey, when set, makes the signal once-only: a repeat with
	// the same key for the same execution answers the first answer.
	IdempotencyKey string
	// MaxBuffered overrides MaxBufferedSignals when above 0. It is for
	// tests, which reach the bound in a few calls: the engine and the API
	// never set it, so no request chooses its own bound.
	MaxBuffered int
	Now         time.Time
}

// BufferBound is the bound of kept signals this call enforces.
func (p *SignalParams) BufferBound() int { return bound(p.MaxBuffered, MaxBufferedSignals) }

// SignalResult reports what a signal did: Delivered when it ended a wait
// at once, false when it was kept for a later wait.
type SignalResult struct {
	Delivered bool
}

// WakeParams are the arguments of Store.Wake.
type WakeParams struct {
	Now   time.Time
	Limit int // at most this many per call; 0 = DefaultBatch
}

// WakeResult counts the suspended executions Wake queued again.
type WakeResult struct {
	Woken int
}

// RetryParams are the arguments of Store.Retry.
type RetryParams struct {
	Tenant string // "" = any tenant
	ID     string
	Now    time.Time
}

// StepsParams are the arguments of Store.Steps.
type StepsParams struct {
	Tenant string // "" = any tenant
	ID     string
}

// Bounds of one execution's flow state (docs/flows.md, "Limits and
// costs"), each enforced inside the store operation that adds to it, in
// the same atomic step as the write, so concurrent calls cannot pass it:
//
//   - MaxSteps: the steps of its journal. A new name past it is refused
//     with ErrTooManySteps, by RecordStep and by a Suspend whose outcome
//     would be a new step; a suspension checks at its start, so the
//     signal or the wake that ends it later always records its step. A
//     lease carries the whole journal and every run re-reads it, so the
//     bound also bounds a claim's read: 10,000 is far above any flow
//     written by hand (tens of steps) and leaves room for a loop that
//     makes each of a few thousand items its own step.
//   - MaxBufferedSignals: the signals kept, not yet consumed by a wait.
//     One more is refused with ErrSignalBufferFull and changes nothing; a
//     signal that ends a wait at once is always accepted, and a wait that
//     consumes a kept signal frees its place.
//   - Idempotency keys of signals need no bound of their own: a key is
//     kept with a signal that is either kept (MaxBufferedSignals at most)
//     or was consumed by a wait, each wait recording one step (MaxSteps
//     at most). So an execution keeps at most MaxSteps +
//     MaxBufferedSignals keys.
const (
	MaxSteps           = 10_000
	MaxBufferedSignals = 1_000
)

// bound is override when above 0, else def.
func bound(override, def int) int {
	if override > 0 {
		return override
	}
	return def
}

// Bounds of flow names, checked by CheckStepName and CheckSignalName.
const (
	MaxStepNameLen   = 256
	MaxSignalNameLen = 128
)

// CheckStepName reports whether name can name a step: free text, like a
// kind (CheckText).
func CheckStepName(name string) error {
	return CheckText("step", name, MaxStepNameLen)
}

// CheckSignalName reports whether name can name a signal: a name
// (CheckIdent), as it travels in a URL path.
func CheckSignalName(name string) error {
	return CheckIdent("signal", name, MaxSignalNameLen)
}

// Check reports whether p is a valid suspension: a step name, and either a
// sleep (Until) or a wait (Signal, with a Timeout not below zero).
func (p *SuspendParams) Check() error {
	if err := CheckStepName(p.Step); err != nil {
		return err
	}
	switch {
	case p.Until.IsZero() == (p.Signal == ""):
		return fieldError("until", "a suspension is either a sleep (until) or a wait (signal): exactly one of the two")
	case p.Signal != "":
		if p.Timeout < 0 {
			return fieldError("timeout_seconds", "must not be negative")
		}
		return CheckSignalName(p.Signal)
	}
	return nil
}
