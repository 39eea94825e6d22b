package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/latch-run/latch/store"
)

// CreateSession implements store.Store.
func (s *Store) CreateSession(ctx context.Context, p *store.CreateSessionParams) error {
	return s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		_, err := tx.ExecContext(ctx, `INSERT INTO console_sessions (id_hash, key_hash, expires_at) VALUES (?, ?, ?)`,
			p.IDHash, p.KeyHash, ns(p.ExpiresAt))
		if err != nil {
			return false, fmt.Errorf("sqlite: create session: %w", err)
		}
		return false, nil
	})
}

// GetSession implements store.Store.
func (s *Store) GetSession(ctx context.Context, p *store.GetSessionParams) (*store.Session, error) {
	var ses store.Session
	var exp int64
	err := s.read.QueryRowContext(ctx, `SELECT key_hash, expires_at FROM console_sessions
		WHERE id_hash = ? AND expires_at > ?`, p.IDHash, ns(now(p.Now))).Scan(&ses.KeyHash, &exp)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("session: %w", store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: get session: %w", err)
	}
	ses.ExpiresAt = fromNS(exp)
	return &ses, nil
}

// DeleteSession implements store.Store.
func (s *Store) DeleteSession(ctx context.Context, p *store.DeleteSessionParams) error {
	return s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		if _, err := tx.ExecContext(ctx, `DELETE FROM console_sessions WHERE id_hash = ?`, p.IDHash); err != nil {
			return false, fmt.Errorf("sqlite: delete session: %w", err)
		}
		return false, nil
	})
}
