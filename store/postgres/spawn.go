package postgres

import (
	"context"
	"fmt"

	"github.com/latch-run/latch/store"
)

// Spawn implements store.Store.
func (s *Store) Spawn(ctx context.Context, p *store.SpawnParams) (*store.SpawnResult, error) {
	return nil, fmt.Errorf("postgres: spawn: %w", store.ErrUnsupported)
}
