package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/latch-run/latch/store"
)

// SQLSTATE codes the store reacts to.
const (
	codeUniqueViolation      = "23505"
	codeForeignKeyViolation  = "23503"
	codeCheckViolation       = "23514"
	codeNotNullViolation     = "23502"
	codeInvalidText          = "22P02" // e.g. a malformed uuid
	codeUntranslatable       = "22P05" // e.g. \u0000 in text
	codeBadEncoding          = "22021" // invalid UTF-8
	codeNumericOutOfRange    = "22003"
	codeSerializationFailure = "40001"
	codeDeadlockDetected     = "40P01"
	codeUndefinedTable       = "42P01"
	codeAbort                = "LA001" // latch_abort(): run the operation as a transaction
)

// pgCode returns err's SQLSTATE, or "".
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// retryable reports an error after which running the whole operation again
// may succeed and is safe: the transaction was rolled back by the server.
func retryable(err error) bool {
	switch pgCode(err) {
	case codeDeadlockDetected, codeSerializationFailure:
		return true
	}
	return false
}

// aborted reports that a fast path ended itself with latch_abort.
func aborted(err error) bool { return pgCode(err) == codeAbort }

// interpretError maps a driver error onto the store's sentinels, keeping the
// original with %w so that callers can still inspect it:
//
//	unique, foreign-key, check, not-null violation,  store.ErrInvalid: the
//	malformed or unencodable value                    parameters broke a rule
//	                                                  the schema enforces
//	context cancelled or deadline passed              the context's error
//	anything else                                     wrapped as it is
//
// Errors that already wrap a store sentinel pass through unchanged, so that
// operations can return business refusals from inside a transaction.
// Callers that know better map first: a unique violation on latch_tenants is
// store.ErrTenantExists, a foreign-key violation on latch_api_keys is
// store.ErrNotFound.
func interpretError(err error) error {
	if err == nil || isSentinel(err) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	switch pgCode(err) {
	case codeUniqueViolation, codeForeignKeyViolation, codeCheckViolation, codeNotNullViolation,
		codeInvalidText, codeUntranslatable, codeBadEncoding, codeNumericOutOfRange:
		return fmt.Errorf("postgres: %w: %w", store.ErrInvalid, err)
	case codeUndefinedTable:
		return fmt.Errorf("postgres: the latch schema is missing (run `latch migrate up --store URL`): %w", err)
	}
	return fmt.Errorf("postgres: %w", err)
}

func isSentinel(err error) bool {
	for _, s := range []error{store.ErrNotFound, store.ErrTenantExists, store.ErrQuotaExceeded,
		store.ErrDedupKeyReused, store.ErrLeaseLost, store.ErrNotTerminal, store.ErrInvalid, store.ErrScheduleLimit} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}
