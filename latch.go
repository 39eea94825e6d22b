package latch

import (
	"cmp"
	"encoding/json"
	"fmt"
	"time"

	"github.com/latch-run/latch/engine"
	"github.com/latch-run/latch/store"
)

// Errors. They are the store's sentinels (and the engine's causes): test
// with errors.Is. "Retry" says whether repeating the call may succeed.
var (
	// ErrNotFound: no such execution or tenant (or another tenant's). Retry: no.
	ErrNotFound = store.ErrNotFound
	// ErrTenantExists: CreateTenant with a taken name. Retry: no.
	ErrTenantExists = store.ErrTenantExists
	// ErrQuotaExceeded: admitting would exceed the tenant's MaxInflight;
	// nothing was written. Retry: yes, once work finishes.
	ErrQuotaExceeded = store.ErrQuotaExceeded
	// ErrDedupKeyReused: the dedup key maps to an execution submitted with
	// another kind or payload. Retry: no.
	ErrDedupKeyReused = store.ErrDedupKeyReused
	// ErrNotTerminal: Delete without Force of an unfinished execution.
	// Retry: yes, after it finishes.
	ErrNotTerminal = store.ErrNotTerminal
	// ErrInvalid: a request breaks a rule (the message names the field).
	// Retry: no.
	ErrInvalid = store.ErrInvalid
	// ErrLeaseLost: a handler's context cause when its worker lost the
	// lease; nothing the handler returns is recorded.
	ErrLeaseLost = store.ErrLeaseLost

	// ErrCancelled: a handler's context cause when the execution was
	// cancelled. The execution ends cancelled and is not retried.
	ErrCancelled = engine.ErrCancelled
	// ErrShutdown: a handler's context cause when its worker stops hard.
	// The execution is handed to another worker; it runs again even if its
	// attempts are spent.
	ErrShutdown = engine.ErrShutdown
	// ErrTimeout: a handler's context cause when the execution's timeout
	// passed. The attempt is retried while attempts remain.
	ErrTimeout = engine.ErrTimeout

	// ErrSuspended: returned by Job.Sleep, Job.WaitSignal, Job.WaitChildren,
	// Job.SpawnAndWait, Map and Job.WaitEvent when the execution was
	// suspended (or, for a wait for an event already published, queued
	// again at once). The handler must return it at once.
	ErrSuspended = engine.ErrSuspended
	// ErrWaitTimedOut: returned by Job.WaitSignal when the wait's timeout
	// passed before the signal came, by Job.WaitChildren when it passed
	// before enough children ended, and by Job.WaitEvent when it passed
	// before a matching event was published.
	ErrWaitTimedOut = engine.ErrWaitTimedOut
	// ErrNotActive: Signal to an execution that has ended. Retry: no.
	ErrNotActive = store.ErrNotActive
	// ErrNotFailed: Retry of an execution that is not failed. Retry: no.
	ErrNotFailed = store.ErrNotFailed
	// ErrTooManySteps: Job.Step, Job.Sleep or Job.WaitSignal under a new
	// step name when the execution's journal holds store.MaxSteps steps.
	// Nothing was recorded; the error is Permanent, so returning it fails
	// the execution without a retry. Retry: no.
	ErrTooManySteps = store.ErrTooManySteps
	// ErrJournalTooLarge: Job.Step, Job.Sleep or Job.WaitSignal under a
	// new step name whose record (or outcome) would make the execution's
	// journal pass store.MaxJournalBytes; or Signal whose data would end a
	// wait so. Nothing was written; for a step the error is Permanent, so
	// returning it fails the execution without a retry. Retry: no.
	ErrJournalTooLarge = store.ErrJournalTooLarge
	// ErrSignalBufferFull: Signal that would be kept when the execution
	// keeps store.MaxBufferedSignals signals no wait has consumed. Nothing
	// was written. Retry: once a wait of the flow consumed one.
	ErrSignalBufferFull = store.ErrSignalBufferFull
	// ErrTooManyChildren: Job.Spawn past store.MaxSpawnItems children in
	// one spawn, store.MaxChildren of one execution or store.MaxSpawnDepth
	// levels. Nothing was admitted; the error is Permanent. Retry: no.
	ErrTooManyChildren = store.ErrTooManyChildren
	// ErrStorageExceeded: a submit, step, signal or result that would take
	// the tenant's StoredBytes past its MaxStoredBytes. Nothing was
	// written. Retry: once executions were deleted or pruned, or the budget
	// raised.
	ErrStorageExceeded = store.ErrStorageExceeded
)

// Permanent marks a handler's error as not worth retrying: the execution
// fails even if attempts remain.
func Permanent(err error) error { return engine.Permanent(err) }

// RetryAfter marks a handler's error as retryable after d rather than after
// the default exponential backoff.
func RetryAfter(err error, d time.Duration) error { return engine.RetryAfter(err, d) }

// Status is the state of an execution.
type Status string

// Execution statuses. The last four are terminal.
const (
	StatusScheduled Status = "scheduled" // waiting for its run_at (first run or retry)
	StatusQueued    Status = "queued"    // ready to be claimed
	StatusRunning   Status = "running"   // leased to a worker
	StatusSuspended Status = "suspended" // a flow waiting for a time or a signal
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
	StatusSkipped   Status = "skipped" // a schedule tick dropped by the overlap policy
)

// Terminal reports whether no further transition can happen.
func (s Status) Terminal() bool { return store.Status(s).Terminal() }

// Execution is one requested run of a job kind. Optional fields are zero
// when unset.
type Execution struct {
	ID               string
	Tenant           string
	Kind             string
	Queue            string
	Priority         int
	Status           Status
	DedupKey         string
	ConcurrencyKey   string
	ConcurrencyLimit int
	RateKey          string
	Payload          json.RawMessage
	Result           json.RawMessage // nil until succeeded
	Error            string          // the last failure's message
	Attempt          int             // starts so far
	MaxAttempts      int
	Timeout          time.Duration
	Schedule         string // the schedule that submitted it

	CreatedAt  time.Time
	RunAt      time.Time
	StartedAt  *time.Time // start of the latest attempt
	FinishedAt *time.Time

	// CancelRequested: Cancel was called while it ran; it ends cancelled
	// when its worker stops.
	CancelRequested bool

	// A suspended flow resumes by itself at WakeAt (nil: only a signal
	// resumes it), or when the signal WaitingFor comes ("" for a sleep).
	WakeAt     *time.Time
	WaitingFor string

	// TraceParent is the W3C traceparent its runs continue ("" = none):
	// the trace context of the Submit's ctx (docs/tracing.md).
	TraceParent string

	// A child (Job.Spawn) names the execution that spawned it and the
	// spawn step; both "" for an execution no one spawned, and for an
	// abandoned child whose parent was deleted.
	ParentID   string
	ParentStep string
}

// DecodeResult unmarshals the execution's result into v.
func (e *Execution) DecodeResult(v any) error {
	if e.Result == nil {
		return fmt.Errorf("latch: execution %s has no result (status %s)", e.ID, e.Status)
	}
	return json.Unmarshal(e.Result, v)
}

// DecodePayload unmarshals the execution's payload into v.
func (e *Execution) DecodePayload(v any) error {
	return json.Unmarshal(e.Payload, v)
}

func fromStoreExecution(s *store.Execution) *Execution {
	if s == nil {
		return nil
	}
	return &Execution{
		ID:               s.ID,
		Tenant:           s.Tenant,
		Kind:             s.Kind,
		Queue:            s.Queue,
		Priority:         s.Priority,
		Status:           Status(s.Status),
		DedupKey:         s.DedupKey,
		ConcurrencyKey:   s.ConcurrencyKey,
		ConcurrencyLimit: s.ConcurrencyLimit,
		RateKey:          s.RateKey,
		Payload:          s.Payload,
		Result:           s.Result,
		Error:            s.Error,
		Attempt:          s.Attempt,
		MaxAttempts:      s.MaxAttempts,
		Timeout:          time.Duration(s.TimeoutSeconds) * time.Second,
		Schedule:         s.Schedule,
		CreatedAt:        s.CreatedAt,
		RunAt:            s.RunAt,
		StartedAt:        s.StartedAt,
		FinishedAt:       s.FinishedAt,
		CancelRequested:  s.CancelRequested,
		WakeAt:           s.WakeAt,
		WaitingFor:       s.WaitingFor,
		TraceParent:      s.TraceParent,
		ParentID:         s.ParentID,
		ParentStep:       s.ParentStep,
	}
}

// Tenant is a tenant's settings and its current inflight count (its
// scheduled, queued, running and suspended executions).
type Tenant struct {
	Name        string
	MaxInflight int
	Inflight    int
	DedupTTL    time.Duration
	Retention   time.Duration
	CreatedAt   time.Time
	// MaxStoredBytes is the tenant's storage budget; StoredBytes what its
	// executions hold of it (payloads, step results, signal data, results
	// and failure texts).
	MaxStoredBytes int64
	StoredBytes    int64
	// EventRetention is how long the tenant's events are kept.
	EventRetention time.Duration
}

func fromStoreTenant(t *store.Tenant) *Tenant {
	return &Tenant{
		Name:        t.Name,
		MaxInflight: t.MaxInflight,
		Inflight:    t.Inflight,
		DedupTTL:    t.DedupTTL,
		Retention:   t.Retention,
		CreatedAt:   t.CreatedAt,

		MaxStoredBytes: t.MaxStoredBytes,
		StoredBytes:    t.StoredBytes,
		EventRetention: cmp.Or(t.EventRetention, store.DefaultEventRetention), // a store without events keeps none
	}
}

// invalid returns an ErrInvalid naming the field.
func invalid(field, format string, args ...any) error {
	return fmt.Errorf("latch: %w: %s: %s", ErrInvalid, field, fmt.Sprintf(format, args...))
}
