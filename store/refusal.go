package store

import "errors"

// Refusals are the sentinels of a business rule: the store answered, and
// refused the call (or found nothing to act on). Repeating the same call
// cannot change the answer by itself; something else must change first
// (work finishing, a lease expiring). Every other error — ErrUnavailable,
// a context's end, a driver's failure — is the store not answering. Metrics count refusals as answers and workers stop retrying
// them; a new sentinel belongs here or in the test's list of failures.
var Refusals = []error{
	ErrNotFound, ErrExists, ErrQuotaExceeded, ErrDedupKeyReused, ErrLeaseLost,
	ErrNotTerminal, ErrNotActive, ErrTooManySteps, ErrJournalTooLarge, ErrSignalBufferFull,
	ErrStorageExceeded, ErrNotFailed, ErrScheduleLimit, ErrInvalid, ErrTooManyChildren,
	ErrTooManySubscriptions,
}

// IsRefusal reports whether err wraps one of Refusals.
func IsRefusal(err error) bool {
	for _, r := range Refusals {
		if errors.Is(err, r) {
			return true
		}
	}
	return false
}
