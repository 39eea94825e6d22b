package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"net/url"
	"os"

	"github.com/latch-run/latch/internal/migration"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrations reads the embedded migrations.
func migrations() ([]migration.Migration, error) {
	ms, err := migration.Load(migrationFiles, "migrations")
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	return ms, nil
}

// SchemaVersion is the newest schema version this build knows.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
}

// migrateUp applies every migration newer than the database's version, each
// in its own IMMEDIATE transaction so concurrent openers serialise.
func migrateUp(ctx context.Context, db *sql.DB) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	for _, m := range ms {
		if err := applyIfNeeded(ctx, db, m); err != nil {
			return err
		}
	}
	return nil
}

func applyIfNeeded(ctx context.Context, db *sql.DB, m migration.Migration) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP)`); err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	var cur sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&cur); err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	if cur.Valid && cur.Int64 > int64(SchemaVersion()) {
		return fmt.Errorf("sqlite: database schema version %d is newer than this latch knows (%d): upgrade latch", cur.Int64, SchemaVersion())
	}
	if cur.Valid && cur.Int64 >= int64(m.Version) {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.Up); err != nil {
		return fmt.Errorf("sqlite: migration %d: %w", m.Version, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version) VALUES (?)`, m.Version); err != nil {
		return fmt.Errorf("sqlite: migration %d: %w", m.Version, err)
	}
	return tx.Commit()
}

// Version reads the schema version of the database file at path without
// creating or changing anything: a file that does not exist is an error
// matching fs.ErrNotExist (Open would create it); a file without latch's
// schema is version 0.
func Version(ctx context.Context, path string) (int, error) {
	if _, err := os.Stat(path); err != nil {
		return 0, fmt.Errorf("sqlite: %w", err)
	}
	q := url.Values{}
	q.Add("mode", "ro") // never creates the file, never writes it
	q.Add("_pragma", "busy_timeout(10000)")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return 0, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	defer db.Close()
	var exists int
	if err := db.QueryRowContext(ctx,
		`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`).Scan(&exists); err != nil {
		return 0, fmt.Errorf("sqlite: read %s: %w", path, err)
	}
	if exists == 0 {
		return 0, nil
	}
	var cur sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&cur); err != nil {
		return 0, fmt.Errorf("sqlite: read %s: %w", path, err)
	}
	return int(cur.Int64), nil
}
