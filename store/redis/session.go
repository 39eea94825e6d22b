package redis

import (
	"context"
	"fmt"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/store"
)

// A console session is the hash session:<id hash> {key, exp (µs)}, which
// Redis itself removes at its expiry (PEXPIREAT): no pruning.

// CreateSession implements store.Store: one MULTI, so the record never
// exists without its expiry.
func (s *Store) CreateSession(ctx context.Context, p *store.CreateSessionParams) error {
	key := s.k.session(p.IDHash)
	_, err := s.rdb.TxPipelined(ctx, func(pipe goredis.Pipeliner) error {
		pipe.HSet(ctx, key, "key", p.KeyHash, "exp", itoa(us(p.ExpiresAt)))
		pipe.PExpireAt(ctx, key, p.ExpiresAt)
		return nil
	})
	if err != nil {
		return fmt.Errorf("redis: create session: %w", err)
	}
	return nil
}

// GetSession implements store.Store.
func (s *Store) GetSession(ctx context.Context, p *store.GetSessionParams) (*store.Session, error) {
	m, err := s.rdb.HGetAll(ctx, s.k.session(p.IDHash)).Result()
	if err != nil {
		return nil, fmt.Errorf("redis: get session: %w", err)
	}
	exp := hashInt(m, "exp")
	if len(m) == 0 || exp <= us(now(p.Now)) {
		return nil, fmt.Errorf("session: %w", store.ErrNotFound)
	}
	return &store.Session{KeyHash: m["key"], ExpiresAt: fromUS(exp)}, nil
}

// DeleteSession implements store.Store.
func (s *Store) DeleteSession(ctx context.Context, p *store.DeleteSessionParams) error {
	if err := s.rdb.Del(ctx, s.k.session(p.IDHash)).Err(); err != nil {
		return fmt.Errorf("redis: delete session: %w", err)
	}
	return nil
}
