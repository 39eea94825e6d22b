package store

import (
	"encoding/json"
	"time"
)

// Status is the state of an execution.
type Status string

// The statuses of docs/api.md ("Executions"). The last four are terminal.
const (
	StatusScheduled Status = "scheduled" // run_at in the future (first run or retry backoff)
	StatusQueued    Status = "queued"    // ready to be claimed
	StatusRunning   Status = "running"   // leased to a worker
	StatusSuspended Status = "suspended" // a flow waiting for a time or a signal (docs/flows.md)
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
	StatusSkipped   Status = "skipped" // a schedule tick dropped by the overlap policy
)

// Terminal reports whether no further transition can happen.
func (s Status) Terminal() bool {
	switch s {
	case StatusSucceeded, StatusFailed, StatusCancelled, StatusSkipped:
		return true
	}
	return false
}

// Inflight reports whether an execution in this status holds a quota slot.
// A suspended execution does: it is not done, only waiting.
func (s Status) Inflight() bool {
	return s == StatusScheduled || s == StatusQueued || s == StatusRunning || s == StatusSuspended
}

// Valid reports whether s is one of the defined statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusScheduled, StatusQueued, StatusRunning, StatusSuspended,
		StatusSucceeded, StatusFailed, StatusCancelled, StatusSkipped:
		return true
	}
	return false
}

// Execution is one requested run of a job kind. Optional fields use the zero
// value for "none": an empty DedupKey, ConcurrencyKey, RateKey or Schedule,
// a nil Result, an empty Error, nil times.
//
// ConcurrencyKey limits how many executions run at once (I4): a claim starts
// this one only while fewer than ConcurrencyLimit executions of the same
// tenant with the same key are running. Like dedup keys, concurrency keys
// are scoped per tenant: another tenant's executions with the same key
// string never count against the limit.
type Execution struct {
	ID               string
	Tenant           string
	Kind             string
	Queue            string
	Priority         int
	Status           Status
	DedupKey         string
	ConcurrencyKey   string
	ConcurrencyLimit int // meaningful only with ConcurrencyKey
	RateKey          string
	Payload          json.RawMessage // canonical JSON, never nil
	Result           json.RawMessage // nil until succeeded
	Error            string          // last failure message
	Attempt          int             // number of starts so far
	MaxAttempts      int
	TimeoutSeconds   int
	Schedule         string

	CreatedAt  time.Time
	RunAt      time.Time
	StartedAt  *time.Time // start of the latest attempt
	FinishedAt *time.Time

	// CancelRequested is set by Cancel on a running execution: the worker
	// learns it from its heartbeat and the execution ends cancelled.
	CancelRequested bool
	// WorkerID and LeaseExpiresAt describe the current lease while running.
	WorkerID       string
	LeaseExpiresAt *time.Time

	// A suspended execution (docs/flows.md) waits until WakeAt (a sleep's
	// end or a wait's timeout; nil for a wait without one) or for the
	// signal WaitingFor ("" for a sleep). SuspendStep is the step its
	// outcome is recorded under. All three are empty in every other status.
	WakeAt      *time.Time
	WaitingFor  string
	SuspendStep string

	// TraceParent is the submission's W3C traceparent ("" = none).
	TraceParent string
	// DedupHits counts the submits and schedule fires its DedupKey
	// answered with this execution instead of a new one (Deduplicated),
	// the latest at LastDedupHitAt (nil: never). Each hit is counted in
	// the step that answers it.
	DedupHits      int
	LastDedupHitAt *time.Time
	// StoredBytes is what the execution counts in its tenant's storage
	// budget (storage.go).
	StoredBytes int64

	// A child (children.go) names the execution that spawned it and the
	// spawn step ("" for an execution nobody spawned, and for an
	// abandoned child whose parent was deleted), and what its parent's
	// end does to it. Depth is 0 for an execution nobody spawned, its
	// parent's plus one for a child.
	ParentID    string
	ParentStep  string
	OnParentEnd ParentEnd
	Depth       int
}

// Lease is one claimed attempt handed to a worker. Token fences every later
// call for this attempt: it is valid only while this attempt holds the lease.
type Lease struct {
	ExecutionID    string
	Tenant         string
	Token          string
	Kind           string
	Queue          string
	Payload        json.RawMessage
	Attempt        int
	MaxAttempts    int
	TimeoutSeconds int
	ExpiresAt      time.Time
	// ReadyAt is when the execution became claimable: its RunAt at the
	// claim (the submit's time for a queued one, the due time of a
	// scheduled one, a retry's backoff end, a resume's time, or the time
	// a release or a rescue gave it back). Now minus ReadyAt is how long
	// it waited for a worker.
	ReadyAt     time.Time
	TraceParent string // the execution's ("" = none)
	// Steps is the execution's journal at the claim, by name: the steps
	// recorded before it, in record order, as far as the claim's bound
	// (ClaimJournalBytes) reaches. Empty (nil) when none is.
	Steps Journal
	// StepsPartial: Steps holds the journal's first steps only (maybe
	// none), cut at ClaimJournalBytes; the others are read with
	// Store.Steps. Also set on a lease whose execution was force deleted
	// before the claim read its journal (a store that reads journals after
	// its claim commits): Store.Steps then answers ErrNotFound.
	StepsPartial bool
}

// Tenant is a tenant record. Inflight is the number of its executions that
// are scheduled, queued or running.
type Tenant struct {
	Name        string
	MaxInflight int
	Inflight    int
	DedupTTL    time.Duration
	Retention   time.Duration
	CreatedAt   time.Time
	// Disabled: the tenant's keys are refused (but for the calls of leases
	// they hold), its schedules do not tick and its executions do not start.
	Disabled bool
	// MaxStoredBytes is the tenant's storage budget, StoredBytes what its
	// executions count in it (storage.go).
	MaxStoredBytes int64
	StoredBytes    int64
	// EventRetention is how long the tenant's events are kept after their
	// publish (events.go).
	EventRetention time.Duration
}

// NewExecution is the execution Admit creates for sub in tenant, named id:
// the package defaults applied to zero fields, a nil payload made {} (and
// counted in StoredBytes), queued
// at now, or scheduled when sub.RunAt is after now. Every backend builds
// its executions with it, so the defaults live in one place; a backend
// whose clock is coarser than a nanosecond rounds the times afterwards.
func NewExecution(id, tenant string, sub *Submission, now time.Time) *Execution {
	e := &Execution{
		ID:             id,
		Tenant:         tenant,
		Kind:           sub.Kind,
		Queue:          sub.Queue,
		Priority:       sub.Priority,
		Status:         StatusQueued,
		DedupKey:       sub.DedupKey,
		ConcurrencyKey: sub.ConcurrencyKey,
		RateKey:        sub.RateKey,
		Payload:        sub.Payload,
		MaxAttempts:    sub.MaxAttempts,
		TimeoutSeconds: sub.TimeoutSeconds,
		Schedule:       sub.Schedule,
		TraceParent:    sub.TraceParent,
		CreatedAt:      now.UTC(),
		RunAt:          now.UTC(),
	}
	if len(e.Payload) == 0 {
		e.Payload = json.RawMessage("{}")
	}
	e.StoredBytes = StoredSize(e.Payload)
	if e.Queue == "" {
		e.Queue = DefaultQueue
	}
	if e.MaxAttempts <= 0 {
		e.MaxAttempts = DefaultMaxAttempts
	}
	if e.TimeoutSeconds <= 0 {
		e.TimeoutSeconds = DefaultTimeoutSeconds
	}
	if e.ConcurrencyKey != "" {
		e.ConcurrencyLimit = sub.ConcurrencyLimit
		if e.ConcurrencyLimit <= 0 {
			e.ConcurrencyLimit = DefaultConcurrencyLimit
		}
	}
	if sub.RunAt.After(now) {
		e.RunAt = sub.RunAt.UTC()
		e.Status = StatusScheduled
	}
	return e
}
