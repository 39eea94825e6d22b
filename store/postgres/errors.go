package postgres

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"

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
	codeStorage              = "LA002" // a storage budget passed (migration 11's triggers)

	// The server is going away or not there yet (a restart, a failover).
	codeAdminShutdown      = "57P01"
	codeCrashShutdown      = "57P02"
	codeCannotConnectNow   = "57P03" // starting up, or in recovery
	codeTooManyConnections = "53300"
	classConnection        = "08" // connection exception: 08000, 08003, 08006, ...
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

// aborted reports that a fast path ended itself with latch_abort, or
// that its tenant's storage budget ended it (LA002): either way the
// transaction path decides.
func aborted(err error) bool { return pgCode(err) == codeAbort || pgCode(err) == codeStorage }

// interpretError maps a driver error onto the store's sentinels, keeping the
// original with %w so that callers can still inspect it:
//
//	unique violation                                  store.ErrExists: the row
//	                                                  (a key hash, an id) is
//	                                                  there already
//	foreign-key, check, not-null violation,           store.ErrInvalid: the
//	malformed or unencodable value                    parameters broke a rule
//	                                                  the schema enforces
//	context cancelled or deadline passed              the context's error
//	the server unreachable or going away (see         store.ErrUnavailable
//	unavailable)
//	anything else                                     wrapped as it is
//
// Errors that already wrap a store sentinel pass through unchanged, so that
// operations can return business refusals from inside a transaction.
// Callers that know better map first: a unique violation on latch_tenants is
// store.ErrTenantExists, a foreign-key violation on latch_api_keys is
// store.ErrNotFound.
func interpretError(err error) error { return driverErrors.Interpret(err) }

var driverErrors = store.DriverErrors{Prefix: "postgres: ", Known: isSentinel, Unavailable: unavailable, Codes: interpretCode}

// interpretCode maps an error of a server that answered, by its SQLSTATE.
func interpretCode(err error) error {
	switch pgCode(err) {
	case codeUniqueViolation:
		return fmt.Errorf("postgres: %w: %w", store.ErrExists, err)
	case codeForeignKeyViolation, codeCheckViolation, codeNotNullViolation,
		codeInvalidText, codeUntranslatable, codeBadEncoding, codeNumericOutOfRange:
		return fmt.Errorf("postgres: %w: %w", store.ErrInvalid, err)
	case codeStorage:
		return fmt.Errorf("postgres: %w: %w", store.ErrStorageExceeded, err)
	case codeUndefinedTable:
		return fmt.Errorf("postgres: the latch schema is missing (run `latch migrate up --store URL`): %w", err)
	}
	return fmt.Errorf("postgres: %w", err)
}

// unavailable reports an error of the server's absence rather than of the
// operation: the server refused the connection or could not be dialled,
// closed or reset it, sent admin_shutdown (57P01, a restart),
// crash_shutdown (57P02), cannot_connect_now (57P03, starting or in
// recovery), too_many_connections or a connection exception (class 08);
// the pool was closed (this process is stopping); or pgx failed before
// sending anything (conn busy or closed: SafeToRetry).
func unavailable(err error) bool {
	switch code := pgCode(err); {
	case code == codeAdminShutdown, code == codeCrashShutdown, code == codeCannotConnectNow,
		code == codeTooManyConnections, strings.HasPrefix(code, classConnection):
		return true
	case code != "":
		return false // any other answer of a server that is there
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.Is(err, puddle.ErrClosedPool) || errors.Is(err, pgconn.ErrConnClosed) ||
		pgconn.SafeToRetry(err) || errors.As(err, &ne) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE)
}

func isSentinel(err error) bool {
	for _, s := range []error{store.ErrNotFound, store.ErrExists, store.ErrQuotaExceeded,
		store.ErrDedupKeyReused, store.ErrLeaseLost, store.ErrNotTerminal, store.ErrInvalid, store.ErrUnavailable,
		store.ErrScheduleLimit, store.ErrNotActive, store.ErrNotFailed} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}
