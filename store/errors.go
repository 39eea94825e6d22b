package store

import (
	"errors"
	"fmt"
)

// Sentinel errors. Backends wrap them with %w; callers test with errors.Is.
// "Retry" below says whether repeating the same call may succeed.
var (
	// ErrNotFound: the execution, tenant or key does not exist, or belongs to
	// another tenant (the two are indistinguishable by design). Retry: no.
	ErrNotFound = errors.New("not found")

	// ErrExists: the thing a call would create exists already — an API
	// key hash already stored (AddAPIKey, CreateTenant's first key), an
	// explicit Submission.ID already taken. Nothing was written. Every
	// backend answers it for its own driver's duplicate (a unique
	// violation, a key already set) in its one mapping function. Retry: no.
	ErrExists = errors.New("already exists")

	// ErrTenantExists: CreateTenant with a name already taken. It is an
	// ErrExists (errors.Is holds for both). Retry: no.
	ErrTenantExists = fmt.Errorf("tenant %w", ErrExists)

	// ErrQuotaExceeded: admitting would make the tenant's inflight exceed its
	// max_inflight. Nothing was written. Retry: yes, once work finishes.
	ErrQuotaExceeded = errors.New("quota exceeded")

	// ErrDedupKeyReused: the tenant's dedup key maps to a live execution that
	// was submitted with a different kind or payload. Retry: no.
	ErrDedupKeyReused = errors.New("dedup key reused with a different kind or payload")

	// ErrLeaseLost: the lease token is not the execution's current one (the
	// lease expired and was rescued, the execution was cancelled and stopped,
	// force deleted, or already finished). Nothing was changed. Retry: no; the
	// worker must abandon the attempt.
	ErrLeaseLost = errors.New("lease lost")

	// ErrNotTerminal: Delete without Force of an execution that is still
	// scheduled, queued or running. Retry: yes, after it finishes.
	ErrNotTerminal = errors.New("execution is not terminal")

	// ErrNotActive: a new signal to an execution that is terminal: no wait
	// can ever consume it. Nothing was written. Retry: no.
	ErrNotActive = errors.New("execution is not active")

	// ErrTooManySteps: recording a step under a new name (RecordStep, or a
	// Suspend whose outcome would be a new step) would give the
	// execution's journal more than its bound of steps (MaxSteps). Nothing
	// was written; the lease is kept. A name recorded already is answered
	// as recorded, full or not. Retry: no — a journal never shrinks while
	// its execution lives.
	ErrTooManySteps = errors.New("too many steps")

	// ErrJournalTooLarge: recording a step (RecordStep; a Suspend that
	// consumes a kept signal, or whose outcome could not fit; a Signal
	// that would end a wait) would make the execution's journal pass its
	// bound of bytes (MaxJournalBytes). Nothing was written; a lease is
	// kept; a signal is not kept either. Retry: no — a journal never
	// shrinks while its execution lives.
	ErrJournalTooLarge = errors.New("journal too large")

	// ErrSignalBufferFull: a signal that would be kept for a later wait
	// finds the execution holding its bound of kept signals
	// (MaxBufferedSignals). Nothing was written. A signal that ends a wait
	// at once, and a repeat of an idempotency key, are never refused so.
	// Retry: yes, once a wait of the flow has consumed a kept signal.
	ErrSignalBufferFull = errors.New("signal buffer full")

	// ErrStorageExceeded: the operation would take its tenant's stored
	// bytes above its MaxStoredBytes (storage.go). Nothing was written; a
	// worker's lease is kept. Retry: yes, once executions of the tenant
	// were deleted or pruned, or its budget raised.
	ErrStorageExceeded = errors.New("storage budget exceeded")

	// ErrNotFailed: Retry of an execution that is not failed. Retry: no.
	ErrNotFailed = errors.New("execution is not failed")

	// ErrScheduleLimit: PutSchedule would create a schedule for a tenant
	// that has MaxSchedules already. Nothing was written. Retry: yes, after
	// one is deleted.
	ErrScheduleLimit = errors.New("schedule limit reached")

	// ErrInvalid: the parameters break a rule the store enforces (an empty
	// kind, a negative limit). Callers validate first; this is a backstop.
	// Retry: no.
	ErrInvalid = errors.New("invalid parameters")

	// ErrUnavailable: the store cannot be reached or is going away — a
	// refused, reset or closed connection, a server shutting down or
	// starting up, a closed store, a database locked past its busy timeout.
	// Each backend maps its driver's errors of that kind onto it in one
	// function (interpretError), keeping the driver's error in the chain.
	// A call whose connection was lost midway may or may not have taken
	// effect. Retry: yes, later; a submit with the same dedup key, so that
	// a call that did take effect is not made twice.
	ErrUnavailable = errors.New("store unavailable")
)
