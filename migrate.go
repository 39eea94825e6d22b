package latch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/latch-run/latch/store/postgres"
	"github.com/latch-run/latch/store/sqlite"
)

// Migration is what Migrate did to a store's schema.
type Migration struct {
	// Ran lists the schema versions applied (up) or reverted (down), in
	// order; empty when there was nothing to do.
	Ran []int
	// Report says, for an operator, what was done and the state of the
	// schema after it: one line each (what `latch migrate` prints).
	Report []string
}

// Migrate changes or reports the schema of the store at storeURL (the URLs
// of Open). op is one of:
//
//	up      apply every pending migration
//	down    revert the newest one
//	status  report the schema's version
//
// PostgreSQL migrates only here: Open refuses a schema it does not know.
// Concurrent migrators of one schema wait for each other. SQLite migrates
// itself when opened: up opens the file (creating it); status reads it
// without creating or changing it (a missing file is an error matching
// fs.ErrNotExist); down is not supported (an error matching
// errors.ErrUnsupported). Redis has no schema: every op reports so and
// changes nothing.
func Migrate(ctx context.Context, storeURL, op string) (*Migration, error) {
	if op != "up" && op != "down" && op != "status" {
		return nil, fmt.Errorf("latch: %w: unknown migrate operation %q (up, down, status)", ErrInvalid, op)
	}
	b, target, err := parseStoreURL(storeURL)
	if err != nil {
		return nil, err
	}
	return b.migrate(ctx, storeURL, target, op)
}

// NeedsMigrate reports whether the store at storeURL must be migrated
// (Migrate up) before Open takes it: a PostgreSQL database. False for a
// store that migrates itself or has no schema, and for a URL Open refuses.
func NeedsMigrate(storeURL string) bool {
	b, _, err := parseStoreURL(storeURL)
	return err == nil && b.migrateFirst
}

// The backends' migrate functions (backend.migrate): storeURL is the
// caller's, for messages; target is what the backend opens.

func migratePostgres(ctx context.Context, _, url, op string) (*Migration, error) {
	st, err := postgres.Migrate(ctx, url, op)
	if err != nil {
		return nil, err
	}
	m := &Migration{Ran: st.Ran}
	switch {
	case op == "up" && len(st.Ran) == 0:
		m.Report = append(m.Report, "nothing to migrate")
	case op == "up":
		m.Report = append(m.Report, fmt.Sprintf("applied migrations %v", st.Ran))
	case op == "down" && len(st.Ran) == 0:
		m.Report = append(m.Report, "nothing to revert")
	case op == "down":
		m.Report = append(m.Report, fmt.Sprintf("reverted migration %v", st.Ran))
	}
	m.Report = append(m.Report, st.String())
	return m, nil
}

func migrateSQLite(ctx context.Context, storeURL, path, op string) (*Migration, error) {
	if op == "down" {
		return nil, unsupportedError("latch: migrate down is for PostgreSQL stores; a SQLite store migrates itself when opened")
	}
	if op == "status" {
		return statusSQLite(ctx, storeURL, path)
	}
	st, err := sqlite.Open(ctx, path) // opening migrates
	if err != nil {
		return nil, fmt.Errorf("latch: open %s: %w", redactURL(storeURL), err)
	}
	if err := st.Close(); err != nil {
		return nil, err
	}
	return &Migration{Report: []string{
		fmt.Sprintf("schema version %d (up to date: SQLite migrates itself when opened)", sqlite.SchemaVersion())}}, nil
}

// statusSQLite reports the version of the file at path, creating nothing.
func statusSQLite(ctx context.Context, storeURL, path string) (*Migration, error) {
	v, err := sqlite.Version(ctx, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("latch: no SQLite store at %s (%w; latch serve or latch migrate up creates it)",
			redactURL(storeURL), fs.ErrNotExist)
	}
	if err != nil {
		return nil, err
	}
	latest := sqlite.SchemaVersion()
	state := "up to date"
	switch {
	case v > latest:
		state = "newer than this latch: upgrade latch"
	case v < latest:
		state = fmt.Sprintf("%d pending, applied when it is next opened", latest-v)
	}
	return &Migration{Report: []string{fmt.Sprintf("schema version %d, this latch knows up to %d (%s)", v, latest, state)}}, nil
}

func migrateRedis(context.Context, string, string, string) (*Migration, error) {
	return &Migration{Report: []string{"a Redis store has no schema: nothing to migrate"}}, nil
}

// unsupportedError is an operation a backend has no use for: it matches
// errors.ErrUnsupported.
type unsupportedError string

func (e unsupportedError) Error() string        { return string(e) }
func (e unsupportedError) Is(target error) bool { return target == errors.ErrUnsupported }
