package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/latch-run/latch/store"
)

// API key statements.
const (
	sqlTenantExists = `SELECT true FROM latch_tenants WHERE name = $1`

	sqlListAPIKeys = `SELECT key_id, created_at, last_used_at FROM latch_api_keys
WHERE tenant = $1 ORDER BY created_at, key_id`

	// The key and the console sessions opened with it, in one statement.
	sqlDeleteAPIKey = `
WITH k AS (
    DELETE FROM latch_api_keys WHERE tenant = $1 AND key_id = $2 RETURNING hash
), s AS (
    DELETE FROM latch_console_sessions WHERE key_hash IN (SELECT hash FROM k)
)
SELECT count(*) FROM k`

	// Writes only when last_used_at is $3 old: a burst of touches from any
	// number of servers updates the row once.
	sqlTouchAPIKey = `UPDATE latch_api_keys SET last_used_at = $2::timestamptz
WHERE hash = $1 AND (last_used_at IS NULL OR last_used_at <= $2::timestamptz - $3::bigint * interval '1 microsecond')`
)

// ListAPIKeys implements store.Store.
func (s *Store) ListAPIKeys(ctx context.Context, p *store.ListAPIKeysParams) ([]*store.APIKeyInfo, error) {
	var ok bool
	if err := s.pool.QueryRow(ctx, sqlTenantExists, p.Tenant).Scan(&ok); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("tenant %q: %w", p.Tenant, store.ErrNotFound)
		}
		return nil, fmt.Errorf("postgres: list api keys: %w", interpretError(err))
	}
	rows, err := s.pool.Query(ctx, sqlListAPIKeys, p.Tenant)
	if err != nil {
		return nil, fmt.Errorf("postgres: list api keys: %w", interpretError(err))
	}
	defer rows.Close()
	var out []*store.APIKeyInfo
	for rows.Next() {
		var k store.APIKeyInfo
		var used *time.Time
		if err := rows.Scan(&k.KeyID, &k.CreatedAt, &used); err != nil {
			return nil, fmt.Errorf("postgres: list api keys: %w", interpretError(err))
		}
		k.CreatedAt = k.CreatedAt.UTC()
		if used != nil {
			k.LastUsedAt = used.UTC()
		}
		out = append(out, &k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list api keys: %w", interpretError(err))
	}
	return out, nil
}

// DeleteAPIKey implements store.Store: one statement.
func (s *Store) DeleteAPIKey(ctx context.Context, p *store.DeleteAPIKeyParams) error {
	var n int
	err := s.write(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		return c.QueryRow(ctx, sqlDeleteAPIKey, p.Tenant, p.KeyID).Scan(&n)
	})
	if err != nil {
		return fmt.Errorf("postgres: delete api key: %w", interpretError(err))
	}
	if n == 0 {
		return fmt.Errorf("tenant %q key %q: %w", p.Tenant, p.KeyID, store.ErrNotFound)
	}
	return nil
}

// TouchAPIKey implements store.Store: one statement.
func (s *Store) TouchAPIKey(ctx context.Context, p *store.TouchAPIKeyParams) error {
	err := s.write(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		_, err := c.Exec(ctx, sqlTouchAPIKey, p.KeyHash, micro(now(p.Now)), p.Every.Microseconds())
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: touch api key: %w", interpretError(err))
	}
	return nil
}
