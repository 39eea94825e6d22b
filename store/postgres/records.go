package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/latch-run/latch/store"
)

// A tenant's records besides its executions — schedules, rate limits — are
// rows keyed by (tenant, name), written and read one statement at a time.
// what names the record in messages ("schedule", "rate limit").

// putRecord runs sql, an upsert of one of tenant's records that returns its
// row, and scans the row with scan. The record's foreign key refuses an
// unknown tenant: ErrNotFound.
func (s *Store) putRecord(ctx context.Context, what, tenant string, scan func(pgx.Row) error, sql string, args ...any) error {
	err := s.write(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		return scan(c.QueryRow(ctx, sql, args...))
	})
	if pgCode(err) == codeForeignKeyViolation {
		return fmt.Errorf("tenant %q: %w", tenant, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("postgres: put %s: %w", what, interpretError(err))
	}
	return nil
}

// getRecord reads the record named name with sql and scan; ErrNotFound if
// there is none.
func getRecord[T any](ctx context.Context, q querier, scan func(pgx.Row) (*T, error), what, name, sql string, args ...any) (*T, error) {
	r, err := scan(q.QueryRow(ctx, sql, args...))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%s %q: %w", what, name, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: get %s: %w", what, interpretError(err))
	}
	return r, nil
}

// deleteRecord deletes the record named name with sql, one statement;
// ErrNotFound if there was none.
func (s *Store) deleteRecord(ctx context.Context, what, name, sql string, args ...any) error {
	var n int64
	err := s.write(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		tag, err := c.Exec(ctx, sql, args...)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: delete %s: %w", what, interpretError(err))
	}
	if n == 0 {
		return fmt.Errorf("%s %q: %w", what, name, store.ErrNotFound)
	}
	return nil
}
