package redis

import (
	"context"
	"fmt"

	"github.com/latch-run/latch/store"
)

// Spawn implements store.Store.
func (s *Store) Spawn(ctx context.Context, p *store.SpawnParams) (*store.SpawnResult, error) {
	return nil, fmt.Errorf("redis: spawn: %w", store.ErrUnsupported)
}

// Spawn implements store.Store on the tenant's node.
func (r *Router) Spawn(ctx context.Context, p *store.SpawnParams) (*store.SpawnResult, error) {
	return nil, fmt.Errorf("redis router: spawn: %w", store.ErrUnsupported)
}
