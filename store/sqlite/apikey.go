package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/latch-run/latch/store"
)

// ListAPIKeys implements store.Store.
func (s *Store) ListAPIKeys(ctx context.Context, p *store.ListAPIKeysParams) ([]*store.APIKeyInfo, error) {
	if _, err := getTenant(ctx, s.read, p.Tenant); err != nil {
		return nil, err
	}
	rows, err := s.read.QueryContext(ctx, `SELECT key_id, created_at, last_used_at FROM api_keys
		WHERE tenant = ? ORDER BY created_at, key_id`, p.Tenant)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list api keys: %w", err)
	}
	defer rows.Close()
	var out []*store.APIKeyInfo
	for rows.Next() {
		var k store.APIKeyInfo
		var created int64
		var used sql.NullInt64
		if err := rows.Scan(&k.KeyID, &created, &used); err != nil {
			return nil, fmt.Errorf("sqlite: list api keys: %w", err)
		}
		k.CreatedAt = fromNS(created)
		if used.Valid {
			k.LastUsedAt = fromNS(used.Int64)
		}
		out = append(out, &k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list api keys: %w", err)
	}
	return out, nil
}

// DeleteAPIKey implements store.Store: the key and the console sessions
// opened with it, in one transaction.
func (s *Store) DeleteAPIKey(ctx context.Context, p *store.DeleteAPIKeyParams) error {
	return s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		if _, err := tx.ExecContext(ctx, `DELETE FROM console_sessions WHERE key_hash IN
			(SELECT hash FROM api_keys WHERE tenant = ? AND key_id = ?)`, p.Tenant, p.KeyID); err != nil {
			return false, fmt.Errorf("sqlite: delete api key: %w", err)
		}
		r, err := tx.ExecContext(ctx, `DELETE FROM api_keys WHERE tenant = ? AND key_id = ?`, p.Tenant, p.KeyID)
		if err != nil {
			return false, fmt.Errorf("sqlite: delete api key: %w", err)
		}
		if n, _ := r.RowsAffected(); n == 0 {
			return false, fmt.Errorf("tenant %q key %q: %w", p.Tenant, p.KeyID, store.ErrNotFound)
		}
		return false, nil
	})
}

// TouchAPIKey implements store.Store: one statement that writes only when
// last_used_at is Every old.
func (s *Store) TouchAPIKey(ctx context.Context, p *store.TouchAPIKeyParams) error {
	t := ns(now(p.Now))
	return s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		_, err := tx.ExecContext(ctx, `UPDATE api_keys SET last_used_at = ?
			WHERE hash = ? AND (last_used_at IS NULL OR last_used_at <= ?)`, t, p.KeyHash, t-int64(p.Every))
		if err != nil {
			return false, fmt.Errorf("sqlite: touch api key: %w", err)
		}
		return false, nil
	})
}
