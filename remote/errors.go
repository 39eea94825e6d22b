package remote

import (
	"errors"
	"fmt"
	"time"
)

// Error is a problem+json answer of the server (RFC 9457), or an error
// answer without one (then Code is empty and Detail holds the body's text).
// errors.Is matches it against the sentinel of its Code.
type Error struct {
	Status int    // the HTTP status
	Code   string // the stable problem code: branch on it, or use errors.Is
	Type   string
	Title  string
	Detail string
	// RetryAfter is the answer's Retry-After, or a batch slot's
	// retry_after_seconds; 0 when it has none.
	RetryAfter time.Duration

	retryAfterSet bool // the answer had a Retry-After, maybe of 0
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("%d %s", e.Status, e.Code)
	if e.Detail != "" {
		msg += ": " + e.Detail
	} else if e.Title != "" {
		msg += ": " + e.Title
	}
	return msg
}

// Is reports whether target is the sentinel of e's code.
func (e *Error) Is(target error) bool {
	s, ok := target.(*sentinel)
	return ok && s.code == e.Code
}

// sentinel is the error errors.Is matches an *Error of its code against.
type sentinel struct{ code string }

func (s *sentinel) Error() string { return "latch: " + s.code }

// Code is the problem code the sentinel stands for.
func (s *sentinel) Code() string { return s.code }

// The sentinels, one per problem code of docs/api.md ("Conventions").
var (
	ErrInvalidRequest       error = &sentinel{"invalid_request"}
	ErrUnauthorized         error = &sentinel{"unauthorized"}
	ErrInvalidTicket        error = &sentinel{"invalid_ticket"}
	ErrForbidden            error = &sentinel{"forbidden"}
	ErrTenantDisabled       error = &sentinel{"tenant_disabled"}
	ErrNotFound             error = &sentinel{"not_found"}
	ErrMethodNotAllowed     error = &sentinel{"method_not_allowed"}
	ErrNotTerminal          error = &sentinel{"not_terminal"}
	ErrLeaseLost            error = &sentinel{"lease_lost"}
	ErrNotActive            error = &sentinel{"not_active"}
	ErrNotFailed            error = &sentinel{"not_failed"}
	ErrTooManySteps         error = &sentinel{"too_many_steps"}
	ErrJournalTooLarge      error = &sentinel{"journal_too_large"}
	ErrSignalBufferFull     error = &sentinel{"signal_buffer_full"}
	ErrStorageExceeded      error = &sentinel{"storage_exceeded"}
	ErrTenantExists         error = &sentinel{"tenant_exists"}
	ErrScheduleLimit        error = &sentinel{"schedule_limit"}
	ErrScheduleTooFrequent  error = &sentinel{"schedule_too_frequent"}
	ErrPayloadTooLarge      error = &sentinel{"payload_too_large"}
	ErrUnsupportedMediaType error = &sentinel{"unsupported_media_type"}
	ErrDedupKeyReused       error = &sentinel{"dedup_key_reused"}
	ErrQuotaExceeded        error = &sentinel{"quota_exceeded"}
	ErrTooManyRequests      error = &sentinel{"too_many_requests"}
	ErrHeadersTooLarge      error = &sentinel{"headers_too_large"}
	ErrInternal             error = &sentinel{"internal"}
	ErrUnavailable          error = &sentinel{"unavailable"}
)

// sentinels lists every sentinel, for the tests that keep them in step
// with the server's codes.
var sentinels = []error{
	ErrInvalidRequest, ErrUnauthorized, ErrInvalidTicket, ErrForbidden, ErrTenantDisabled, ErrNotFound,
	ErrMethodNotAllowed, ErrNotTerminal, ErrLeaseLost, ErrNotActive, ErrNotFailed, ErrTooManySteps,
	ErrJournalTooLarge, ErrSignalBufferFull, ErrStorageExceeded, ErrTenantExists, ErrScheduleLimit,
	ErrScheduleTooFrequent, ErrPayloadTooLarge, ErrUnsupportedMediaType, ErrDedupKeyReused,
	ErrQuotaExceeded, ErrTooManyRequests, ErrHeadersTooLarge, ErrInternal, ErrUnavailable,
}

// asError is err's *Error, if it is one.
func asError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
