package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/latch-run/latch/store"
)

// Console session statements.
const (
	sqlCreateSession = `INSERT INTO latch_console_sessions (id_hash, key_hash, expires_at) VALUES ($1, $2, $3)`
	sqlGetSession    = `SELECT key_hash, expires_at FROM latch_console_sessions WHERE id_hash = $1 AND expires_at > $2`
	sqlDeleteSession = `DELETE FROM latch_console_sessions WHERE id_hash = $1`
)

// CreateSession implements store.Store.
func (s *Store) CreateSession(ctx context.Context, p *store.CreateSessionParams) error {
	err := s.write(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		_, err := c.Exec(ctx, sqlCreateSession, p.IDHash, p.KeyHash, micro(p.ExpiresAt))
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: create session: %w", interpretError(err))
	}
	return nil
}

// GetSession implements store.Store.
func (s *Store) GetSession(ctx context.Context, p *store.GetSessionParams) (*store.Session, error) {
	var ses store.Session
	err := s.pool.QueryRow(ctx, sqlGetSession, p.IDHash, micro(now(p.Now))).Scan(&ses.KeyHash, &ses.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("session: %w", store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: get session: %w", interpretError(err))
	}
	ses.ExpiresAt = ses.ExpiresAt.UTC()
	return &ses, nil
}

// DeleteSession implements store.Store.
func (s *Store) DeleteSession(ctx context.Context, p *store.DeleteSessionParams) error {
	err := s.write(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		_, err := c.Exec(ctx, sqlDeleteSession, p.IDHash)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: delete session: %w", interpretError(err))
	}
	return nil
}
