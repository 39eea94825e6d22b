package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/store"
)

// layoutVersion is the version of the namespace's layout this build
// writes, kept in the key schema. Version 2 added key ids (the key_id
// field, keyids:<T>) and the index of a tenant's rate limits
// (ratelimits:<T>), which DeleteTenant and ListAPIKeys read. Flows
// needed no new version: their fields and keys are absent from older
// data, and absent means none (no journal, not a resume, not suspended);
// nor did the attempt history (runs:<id>): an execution without one has
// no run recorded yet, and a lease claimed before it ends without one;
// nor did the observation data: an execution without dhits, dhit_at or
// trace has no dedup hit and no trace context, and one in flight that is
// in no queue statistics' set (qqueued, qsched, qsusp) joins them at its
// next change of status (until then QueueStats does not count it); nor
// did parks by group (ckparkg:<c>, the r:<group> counts of ck:<c>): what
// an older latch parked in ckpark:<c> goes back to the ready indexes at
// the key's next settle, and its ready executions, uncounted in their
// groups, only make a group's count low, which lets more go back than
// need to, never fewer (counts are dropped at zero, never negative).
// Version 3 added the storage budget: each execution's bytes field and its
// tenant's stored count (lib.lua, charge), which the upgrade computes for
// the executions stored before it (backfill.lua, 'bytes'); and each
// tenant's lanes by kind (ready:tk:<c>, counted in the tenant's field
// laned), which a claim filtered by kind walks instead of the tenant's
// whole ready index: repairLanes (lanes.go), run by every Open, puts
// every ready execution of older data in its lane.

const layoutVersion = 3

// upgrade brings records written by an older latch to layoutVersion: the
// Redis counterpart of the SQL stores' migrations. Each record is fixed by
// one run of backfill.lua, which changes nothing it already finds fixed,
// so servers starting together may all run it; the version is recorded
// last, and a namespace at it is not scanned again.
func (s *Store) upgrade(ctx context.Context) error {
	v, err := s.rdb.Get(ctx, s.k.schema()).Int()
	switch {
	case err == nil && v >= layoutVersion:
		return nil
	case err != nil && !errors.Is(err, goredis.Nil):
		return fmt.Errorf("redis: layout version: %w", err)
	}
	// A namespace without tenants or an admin key holds no record to fix:
	// it is new, and must not pay for a SCAN of a database other
	// namespaces may fill.
	n, err := s.rdb.Exists(ctx, s.k.tenants(), s.k.admin()).Result()
	if err != nil {
		return fmt.Errorf("redis: layout version: %w", err)
	}
	if n > 0 {
		if err := s.backfill(ctx); err != nil {
			return err
		}
	}
	if err := s.rdb.Set(ctx, s.k.schema(), layoutVersion, 0).Err(); err != nil {
		return fmt.Errorf("redis: layout version: %w", err)
	}
	return nil
}

// backfill runs backfill.lua on every API key, rate limit and execution
// of the namespace.
func (s *Store) backfill(ctx context.Context) error {
	keyPrefix := s.k.apiKey("")
	if err := s.scanEach(ctx, keyPrefix+"*", func(key string) error {
		_, err := s.run(ctx, "backfill", scriptBackfill, []string{key}, s.k.ns, "key",
			strings.TrimPrefix(key, keyPrefix), store.NewKeyID())
		return err
	}); err != nil {
		return err
	}
	if err := s.scanEach(ctx, s.k.rateLimit("")+"*", func(key string) error {
		_, err := s.run(ctx, "backfill", scriptBackfill, []string{key}, s.k.ns, "rate")
		return err
	}); err != nil {
		return err
	}
	if err := s.scanEach(ctx, s.k.exec("")+"*", func(key string) error {
		_, err := s.run(ctx, "backfill", scriptBackfill, []string{key}, s.k.ns, "bytes")
		return err
	}); err != nil {
		return err
	}
	return nil
}
