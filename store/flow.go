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
	// MaxJournalBytes overrides the journal's bound of bytes
	// (MaxJournalBytes) when above 0; for tests, like MaxSteps.
	MaxJournalBytes int
	Now             time.Time
}

// StepBound is the journal's bound this call enforces.
func (p *RecordStepParams) StepBound() int { return bound(p.MaxSteps, MaxSteps) }

// ByteBound is the journal's bound of bytes this call enforces.
func (p *RecordStepParams) ByteBound() int { return bound(p.MaxJournalBytes, MaxJournalBytes) }

// RecordStepResult is the step as recorded: the one given (Recorded) or the
// one recorded before under the same name, which wins.
type RecordStepResult struct {
	Step     Step
	Recorded bool
}

// SuspendParams are the arguments of Store.Suspend. Exactly one of Until
// (a sleep), Signal (a wait for a signal), Children (a fan-in wait) and
// Event (a wait for an event) is set.
type SuspendParams struct {
	ExecutionID string
	Tenant      string // "" = any tenant
	Token       string
	// Step is the name the suspension's outcome is recorded under: null
	// for a sleep, the signal's data or TimedOut for a wait.
	Step   string
	Until  time.Time
	Signal string
	// Children names a spawn step of this execution (children.go): the
	// wait ends when Count of that spawn's children have ended (0 = all).
	Children string
	Count    int
	// Event names the event a wait for an event waits for (events.go);
	// EventKey, when set, matches only events published with that key;
	// Since (zero = the execution's CreatedAt) matches only events
	// published at or after it.
	Event    string
	EventKey string
	Since    time.Time
	// Timeout bounds a wait: it ends with TimedOut (a fan-in wait: its
	// FanInResult with TimedOut) at Now+Timeout. 0 = no timeout.
	Timeout time.Duration
	// MaxSteps and MaxJournalBytes override the journal's bounds as
	// RecordStepParams' do (tests only).
	MaxSteps        int
	MaxJournalBytes int
	Now             time.Time
}

// StepBound is the journal's bound this call enforces.
func (p *SuspendParams) StepBound() int { return bound(p.MaxSteps, MaxSteps) }

// ByteBound is the journal's bound of bytes this call enforces.
func (p *SuspendParams) ByteBound() int { return bound(p.MaxJournalBytes, MaxJournalBytes) }

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
	// MaxJournalBytes overrides the journal's bound of bytes, which a
	// signal that ends a wait records a step under (tests only).
	MaxJournalBytes int
	Now             time.Time
}

// BufferBound is the bound of kept signals this call enforces.
func (p *SignalParams) BufferBound() int { return bound(p.MaxBuffered, MaxBufferedSignals) }

// ByteBound is the journal's bound of bytes this call enforces.
func (p *SignalParams) ByteBound() int { return bound(p.MaxJournalBytes, MaxJournalBytes) }

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

// StepsParams are the arguments of Store.Steps: one page of a journal, in
// record order.
type StepsParams struct {
	Tenant string // "" = any tenant
	ID     string
	// After is a previous page's Next: the page starts after that step. 0
	// = the first page.
	After int64
	// Limit bounds the page's steps: 1..MaxSteps; 0 = every step.
	Limit int
	// MaxBytes bounds the page by its steps' sizes (StepSize): the page
	// ends after the step that reaches it (so a page it cuts holds at
	// least that step) and Next is set. 0 = no bound. The store reads
	// the sizes first and the results of the steps it answers only.
	MaxBytes int
}

// StepsPage is one page of a journal. Next is the After of the next page,
// 0 when this is the last.
type StepsPage struct {
	Items []*Step
	Next  int64
}

// StepSize is what a step counts towards its journal's bound of bytes
// (MaxJournalBytes), a page's (StepsParams.MaxBytes) and a lease's
// (ClaimJournalBytes): its name and its result's JSON, in bytes.
func StepSize(name string, result json.RawMessage) int { return len(name) + len(jsonOrNull(result)) }

// jsonOrNull is v, or null for none.
func jsonOrNull(v json.RawMessage) json.RawMessage {
	if len(v) == 0 {
		return json.RawMessage("null")
	}
	return v
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
//   - MaxJournalBytes: the bytes of its journal, each step counting its
//     StepSize. A step that would pass it is refused with
//     ErrJournalTooLarge, nothing written: by RecordStep; by a Signal
//     that would end a wait (the signal is not kept either); by a
//     Suspend that consumes a kept signal too large for the journal, or
//     whose outcome could not fit even as TimedOut (the larger of a
//     sleep's and a timed-out wait's outcome), so that a Wake always
//     records its step. Without it a journal could hold MaxSteps results
//     of the payload limit each (10 GiB), which every read of it and
//     every lease carried. 64 MiB is far above what a flow's results
//     need, and holds 64 results of the payload limit.
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
	MaxJournalBytes    = 64 << 20
	MaxBufferedSignals = 1_000
)

// ClaimJournalBytes bounds the journals the leases of one claim carry
// together (Lease.Steps): each lease's steps in record order, the leases in
// the claim's order, up to and including the step whose StepSize reaches
// it. A lease that carries less than its whole journal (none of it, when
// the leases before it spent the bound) says so (Lease.StepsPartial), and
// its worker reads the rest with Steps when a step it runs is not in what
// it carries. So a claim of many leases costs the same bound as one.
const ClaimJournalBytes = 1 << 20

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

// Check reports whether p is a valid suspension: a step name, and exactly
// one of a sleep (Until), a wait for a signal (Signal), a fan-in wait
// (Children, with a Count not below zero) or a wait for an event (Event,
// with an EventKey within MaxEventKeyLen), a wait's Timeout not below
// zero.
func (p *SuspendParams) Check() error {
	if err := CheckStepName(p.Step); err != nil {
		return err
	}
	kinds := 0
	for _, set := range []bool{!p.Until.IsZero(), p.Signal != "", p.Children != "", p.Event != ""} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		return fieldError("until", "a suspension is a sleep (until), a wait for a signal (signal), for children (children) or for an event (event): exactly one of them")
	}
	if p.Until.IsZero() && p.Timeout < 0 {
		return fieldError("timeout_seconds", "must not be negative")
	}
	switch {
	case p.Signal != "":
		return CheckSignalName(p.Signal)
	case p.Event != "":
		if err := CheckSignalName(p.Event); err != nil {
			return &FieldError{Field: "event", Rule: err.Error()}
		}
		if p.EventKey != "" {
			return CheckText("key", p.EventKey, MaxEventKeyLen)
		}
		return nil
	case p.Children != "":
		if p.Count < 0 {
			return fieldError("count", "must not be negative")
		}
		return CheckStepName(p.Children)
	}
	return nil
}
