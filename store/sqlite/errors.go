package sqlite

import (
	"database/sql"
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/latch-run/latch/store"
)

// interpretError maps a driver error onto the store's sentinels, keeping
// the original in the chain: a database that cannot be used now (see
// unavailable) is store.ErrUnavailable; a PRIMARY KEY or UNIQUE constraint
// failure (a key hash or an id stored already) is store.ErrExists; the
// context's own errors and errors that already wrap a sentinel pass
// through; anything else is returned as it is.
func interpretError(err error) error { return driverErrors.Interpret(err) }

var driverErrors = store.DriverErrors{Prefix: "sqlite: ", Unavailable: unavailable, Codes: interpretCode}

// interpretCode maps a constraint failure: a unique one is store.ErrExists.
func interpretCode(err error) error {
	if isUniqueViolation(err) && !errors.Is(err, store.ErrExists) {
		return fmt.Errorf("sqlite: %w: %w", store.ErrExists, err)
	}
	return err
}

// unavailable reports an error of the database's state rather than of the
// operation: SQLITE_BUSY (any extended code) after the busy timeout, when
// another process holds the file's write lock for that long, or the Store
// or its connection closed (this process is stopping).
func unavailable(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()&0xff == sqlite3.SQLITE_BUSY
	}
	return errors.Is(err, errClosed) || errors.Is(err, sql.ErrConnDone)
}

// interpreted returns v and err through interpretError: the reads' one
// exit.
func interpreted[T any](v T, err error) (T, error) {
	return v, interpretError(err)
}

// isUniqueViolation reports a PRIMARY KEY or UNIQUE constraint failure.
func isUniqueViolation(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	return se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE
}
