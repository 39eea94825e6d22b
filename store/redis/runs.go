package redis

import (
	"context"
	"errors"

	"github.com/latch-run/latch/store"
)

// Runs is a placeholder until the attempt history lands in this backend.
func (s *Store) Runs(context.Context, *store.RunsParams) ([]*store.Run, error) {
	return nil, errors.New("redis: the attempt history is not built yet")
}
