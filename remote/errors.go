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
	ErrInvalidRequest       = newSentinel("invalid_request")
	ErrUnauthorized         = newSentinel("unauthorized")
	ErrInvalidTicket        = newSentinel("invalid_ticket")
	ErrForbidden            = newSentinel("forbidden")
	ErrTenantDisabled       = newSentinel("tenant_disabled")
	ErrNotFound             = newSentinel("not_found")
	ErrMethodNotAllowed     = newSentinel("method_not_allowed")
	ErrNotTerminal          = newSentinel("not_terminal")
	ErrLeaseLost            = newSentinel("lease_lost")
	ErrNotActive            = newSentinel("not_active")
	ErrNotFailed            = newSentinel("not_failed")
	ErrTooManySteps         = newSentinel("too_many_steps")
	ErrJournalTooLarge      = newSentinel("journal_too_large")
	ErrSignalBufferFull     = newSentinel("signal_buffer_full")
	ErrStorageExceeded      = newSentinel("storage_exceeded")
	ErrTooManyChildren      = newSentinel("too_many_children")
	ErrTooManySubscriptions = newSentinel("too_many_subscriptions")
	ErrTenantExists         = newSentinel("tenant_exists")
	ErrScheduleLimit        = newSentinel("schedule_limit")
	ErrScheduleTooFrequent  = newSentinel("schedule_too_frequent")
	ErrPayloadTooLarge      = newSentinel("payload_too_large")
	ErrUnsupportedMediaType = newSentinel("unsupported_media_type")
	ErrDedupKeyReused       = newSentinel("dedup_key_reused")
	ErrQuotaExceeded        = newSentinel("quota_exceeded")
	ErrTooManyRequests      = newSentinel("too_many_requests")
	ErrHeadersTooLarge      = newSentinel("headers_too_large")
	ErrInternal             = newSentinel("internal")
	ErrUnavailable          = newSentinel("unavailable")
)

// sentinels lists every sentinel, for the tests that keep them in step
// with the server's codes.
var sentinels []*sentinel

func newSentinel(code string) error {
	s := &sentinel{code}
	sentinels = append(sentinels, s)
	return s
}

// asError is err's *Error, if it is one.
func asError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
