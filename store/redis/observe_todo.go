package redis

import (
	"context"
	"errors"

	"github.com/latch-run/latch/store"
)

// errTODO marks the observation reads not written yet on this backend.
var errTODO = errors.New("redis: not implemented yet")

func (s *Store) ListRateLimits(context.Context, *store.ListRateLimitsParams) ([]*store.RateLimit, error) {
	return nil, errTODO
}

func (s *Store) ConcurrencyKeys(context.Context, *store.ConcurrencyKeysParams) ([]*store.ConcurrencyKeyUse, error) {
	return nil, errTODO
}
