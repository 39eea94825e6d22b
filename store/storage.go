package store

import (
	"encoding/json"
	"fmt"
)

// A tenant's storage budget (docs/security.md). Each execution counts the
// bytes its tenant sent to be kept with it, each once, when it enters the
// store: its payload (Admit, a schedule's tick), a step's result
// (RecordStep), a signal's data (Signal), its result (Complete) and each
// failure's text (Fail). Execution.StoredBytes is that sum; a tenant's
// StoredBytes is the sum over its executions, kept in the same atomic step
// as the bytes it counts, and released with them (Delete, Prune,
// DeleteTenant). The step an event becomes when it ends a wait is a copy
// of the event, one per wait, and counts as a step's result does
// (events.go). What the store writes by itself (a skipped tick, a wake's
// null, the step a consumed signal becomes, a run's record) counts nothing
// more.
//
// An operation that would take StoredBytes above MaxStoredBytes is
// refused with ErrStorageExceeded and writes nothing, except Fail: an
// attempt must always be able to end, so a failure's text is counted
// even over the budget (the next admission is refused instead).
const (
	// DefaultMaxStoredBytes is a new tenant's budget: 1 GiB. Ordinary use
	// stays far below it (a million executions of 1 KiB, kept for the
	// default 7-day retention), while one tenant can no longer fill the
	// disk every tenant shares: at the 53 MiB in 19 s of issue 26's
	// schedules, it is reached in some 6 minutes and refused from then on.
	DefaultMaxStoredBytes int64 = 1 << 30
	// MaxStoredBytesLimit bounds max_stored_bytes: 1 PiB, no bound in
	// practice.
	MaxStoredBytesLimit int64 = 1 << 50
)

// StoredSize is what json counts in a tenant's storage budget: its
// length in bytes (0 for nil).
func StoredSize(b json.RawMessage) int64 { return int64(len(b)) }

// checkMaxStoredBytes checks a given max_stored_bytes: 0..MaxStoredBytesLimit.
func checkMaxStoredBytes(v *int64) error {
	if v != nil && (*v < 0 || *v > MaxStoredBytesLimit) {
		return fmt.Errorf("%w: max_stored_bytes %d not in 0..%d", ErrInvalid, *v, MaxStoredBytesLimit)
	}
	return nil
}
