package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version  int
	up, down string
}

func migrations() ([]migration, error) {
	entries, err := migrationFiles.ReadDir("migrations")
	if err != nil {
		return nil, err
	}
	byVersion := map[int]*migration{}
	for _, e := range entries {
		name := e.Name()
		num, rest, ok := strings.Cut(name, "_")
		if !ok {
			return nil, fmt.Errorf("sqlite: bad migration file name %q", name)
		}
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("sqlite: bad migration file name %q", name)
		}
		body, err := migrationFiles.ReadFile("migrations/" + name)
		if err != nil {
			return nil, err
		}
		m := byVersion[v]
		if m == nil {
			m = &migration{version: v}
			byVersion[v] = m
		}
		switch {
		case strings.HasSuffix(rest, ".up.sql"):
			m.up = string(body)
		case strings.HasSuffix(rest, ".down.sql"):
			m.down = string(body)
		}
	}
	var out []migration
	for _, m := range byVersion {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// SchemaVersion is the newest schema version this build knows.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
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

func applyIfNeeded(ctx context.Context, db *sql.DB, m migration) error {
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
	if cur.Valid && cur.Int64 >= int64(m.version) {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.up); err != nil {
		return fmt.Errorf("sqlite: migration %d: %w", m.version, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version) VALUES (?)`, m.version); err != nil {
		return fmt.Errorf("sqlite: migration %d: %w", m.version, err)
	}
	return tx.Commit()
}
