package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/latch-run/latch/internal/migration"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations are numbered NNNN_name.up.sql / NNNN_name.down.sql. Each runs in
// its own transaction together with the row that records it in
// latch_migrations, so a failed migration leaves the schema as it was.
// Migrators serialise on a session advisory lock per schema, so that two
// servers or operators migrating at once apply each step exactly once.
const (
	sqlMigrationsTable = `CREATE TABLE IF NOT EXISTS latch_migrations (
		version     integer PRIMARY KEY,
		name        text NOT NULL,
		applied_at  timestamptz NOT NULL DEFAULT now())`
	// The table may not exist yet: to_regclass answers NULL instead of failing.
	sqlHasMigrations   = `SELECT to_regclass('latch_migrations') IS NOT NULL`
	sqlSchemaVersion   = `SELECT coalesce(max(version), 0) FROM latch_migrations`
	sqlAppliedVersions = `SELECT version FROM latch_migrations ORDER BY version`
	sqlRecordMigration = `INSERT INTO latch_migrations (version, name) VALUES ($1, $2)`
	sqlForgetMigration = `DELETE FROM latch_migrations WHERE version = $1`
	sqlMigrateLock     = `SELECT pg_advisory_lock($1, hashtext(current_schema()))`
	sqlMigrateUnlock   = `SELECT pg_advisory_unlock($1, hashtext(current_schema()))`
)

// loadMigrations reads the embedded migrations.
func loadMigrations() ([]migration.Migration, error) {
	ms, err := migration.Load(migrationFiles, "migrations")
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return ms, nil
}

// SchemaVersion is the newest schema version this build knows.
func SchemaVersion() int {
	ms, err := loadMigrations()
	if err != nil {
		return 0
	}
	return len(ms)
}

// MigrationStatus describes a database's schema.
type MigrationStatus struct {
	Version int // the database's schema version; 0 = no latch schema
	Latest  int // the newest version this build knows
	Applied []int
	Ran     []int // what this call applied (up) or reverted (down), in order
}

func (m *MigrationStatus) String() string {
	s := fmt.Sprintf("schema version %d, this latch knows up to %d", m.Version, m.Latest)
	switch {
	case m.Version == m.Latest:
		s += " (up to date)"
	case m.Version < m.Latest:
		s += fmt.Sprintf(" (%d pending)", m.Latest-m.Version)
	default:
		s += " (newer than this latch)"
	}
	return s
}

// Migrate changes or reports the schema of the database at url:
//
//	"up"      apply every pending migration
//	"down"    revert the newest applied migration (one step)
//	"status"  report the version without changing anything
//
// Concurrent migrators of one schema (the schema search_path selects) wait
// for each other on an advisory lock, and each step runs in a transaction,
// so running `latch migrate up` on every server at once is safe.
func Migrate(ctx context.Context, url, op string) (*MigrationStatus, error) {
	cfg, err := poolConfig(url)
	if err != nil {
		return nil, err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return migrate(ctx, conn, op)
}

// lockSpace is the first key of every advisory lock latch takes; the second
// says what is locked.
const (
	lockSpaceMigrate     = 0x6c61_0001 // "la" 1: schema migrations, per schema
	lockSpaceConcurrency = 0x6c61_0002 // "la" 2: claims of one tenant's concurrency key
	lockSpaceSchedule    = 0x6c61_0003 // "la" 3: the executions of one tenant's schedule
	lockSpaceScheduleSet = 0x6c61_0004 // "la" 4: the creation of a tenant's schedules, under a bound
	lockSpaceEvent       = 0x6c61_0005 // "la" 5: a tenant's event name: its publishes and the waits for it
	lockSpaceSubSet      = 0x6c61_0006 // "la" 6: the creation of a tenant's subscriptions, under a bound
)

func migrate(ctx context.Context, conn *pgx.Conn, op string) (st *MigrationStatus, err error) {
	ms, err := loadMigrations()
	if err != nil {
		return nil, err
	}
	if op == "status" {
		return status(ctx, conn, len(ms))
	}
	if op != "up" && op != "down" {
		return nil, fmt.Errorf("postgres: migrate %q: want up, down or status", op)
	}
	if _, err := conn.Exec(ctx, sqlMigrateLock, lockSpaceMigrate); err != nil {
		return nil, fmt.Errorf("postgres: migrate: lock: %w", err)
	}
	defer func() {
		if _, uerr := conn.Exec(context.WithoutCancel(ctx), sqlMigrateUnlock, lockSpaceMigrate); uerr != nil && err == nil {
			err = fmt.Errorf("postgres: migrate: unlock: %w", uerr)
		}
	}()
	if _, err := conn.Exec(ctx, sqlMigrationsTable); err != nil {
		return nil, fmt.Errorf("postgres: migrate: %w", err)
	}
	// Read the version only now, under the lock: another migrator may have
	// just finished.
	st, err = status(ctx, conn, len(ms))
	if err != nil {
		return nil, err
	}
	if st.Version > st.Latest {
		return st, fmt.Errorf("postgres: schema version %d is newer than this latch knows (%d): use the newer latch to migrate it", st.Version, st.Latest)
	}
	switch op {
	case "up":
		for _, m := range ms[st.Version:] {
			if err := runMigration(ctx, conn, m.Up, sqlRecordMigration, m.Version, m.Name); err != nil {
				return st, fmt.Errorf("postgres: migration %d (%s) up: %w", m.Version, m.Name, err)
			}
			st.Ran = append(st.Ran, m.Version)
		}
	case "down":
		if st.Version == 0 {
			return st, nil
		}
		m := ms[st.Version-1]
		if err := runMigration(ctx, conn, m.Down, sqlForgetMigration, m.Version); err != nil {
			return st, fmt.Errorf("postgres: migration %d (%s) down: %w", m.Version, m.Name, err)
		}
		st.Ran = append(st.Ran, m.Version)
	}
	ran := st.Ran
	st, err = status(ctx, conn, len(ms))
	if st != nil {
		st.Ran = ran
	}
	return st, err
}

func runMigration(ctx context.Context, conn *pgx.Conn, body, record string, args ...any) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		// The simple protocol runs a file of several statements in one call.
		if _, err := tx.Exec(ctx, body, pgx.QueryExecModeSimpleProtocol); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, record, args...)
		return err
	})
}

func status(ctx context.Context, conn *pgx.Conn, latest int) (*MigrationStatus, error) {
	st := &MigrationStatus{Latest: latest}
	var exists bool
	if err := conn.QueryRow(ctx, sqlHasMigrations).Scan(&exists); err != nil {
		return nil, fmt.Errorf("postgres: schema version: %w", err)
	}
	if !exists {
		return st, nil
	}
	if err := conn.QueryRow(ctx, sqlSchemaVersion).Scan(&st.Version); err != nil {
		return nil, fmt.Errorf("postgres: schema version: %w", err)
	}
	if st.Version == 0 {
		return st, nil
	}
	rows, err := conn.Query(ctx, sqlAppliedVersions)
	if err != nil {
		return nil, fmt.Errorf("postgres: schema version: %w", err)
	}
	st.Applied, err = pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return nil, fmt.Errorf("postgres: schema version: %w", err)
	}
	return st, nil
}

// ErrSchema is wrapped by Open's error when the database's schema is not the
// one this build knows; the message names the command that fixes it.
var ErrSchema = errors.New("postgres: schema version mismatch")

// checkSchema refuses a database whose schema version is not this build's.
func checkSchema(ctx context.Context, conn *pgx.Conn) error {
	st, err := status(ctx, conn, SchemaVersion())
	if err != nil {
		return err
	}
	switch {
	case st.Version == st.Latest:
		return nil
	case st.Version == 0:
		return fmt.Errorf("%w: the database has no latch schema (this latch needs version %d): run `latch migrate up --store URL`",
			ErrSchema, st.Latest)
	case st.Version < st.Latest:
		return fmt.Errorf("%w: the database schema is version %d, this latch needs %d: run `latch migrate up --store URL`",
			ErrSchema, st.Version, st.Latest)
	default:
		return fmt.Errorf("%w: the database schema is version %d, newer than this latch knows (%d): upgrade latch, "+
			"or revert the schema with the newer latch's `latch migrate down --store URL`", ErrSchema, st.Version, st.Latest)
	}
}
