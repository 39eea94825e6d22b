package redis

import (
	"context"
	"errors"
	"fmt"

	goredis "github.com/redis/go-redis/v9"
)

// The lanes by kind (layout version 3; lua/lib.lua): each tenant's ready
// executions of one kind (ready:tk:<c>), counted in the tenant's hash
// (field laned). While the count equals the size of the tenant's ready
// index, the lanes hold exactly its ready executions, and a claim filtered
// by kind walks them only. Data written before version 3, and what a
// server of the previous release queues or takes beside this one during a
// deploy, leave them short: a claim then reads the tenant's ready index as
// before the lanes and puts what it reads in them, and every Open repairs
// the lanes of each tenant whose count differs (repairLanes), so that a
// deploy's leftovers are gone once a server of this release starts after
// the last older one stopped.

// laneTenant is a tenant and the Store of its namespace.
type laneTenant struct {
	s *Store
	t string
}

// repairLanes makes whole the lanes of every tenant of the namespace
// whose count differs from its ready index's size.
func (s *Store) repairLanes(ctx context.Context) error {
	names, err := s.rdb.SMembers(ctx, s.k.tenants()).Result()
	if err != nil {
		return fmt.Errorf("redis: lanes: %w", interpretError(err))
	}
	ts := make([]laneTenant, len(names))
	for i, t := range names {
		ts[i] = laneTenant{s, t}
	}
	return repairLanes(ctx, s.rdb, ts)
}

// repairLanes reads, in one pipeline, each tenant's lane count and ready
// index size, and repairs the lanes of those that differ: every member of
// the ready index goes into its lane, then every member of a lane of a
// kind the namespace has known (readykinds) that the ready index lacks
// leaves it, each 500 members a script run.
func repairLanes(ctx context.Context, rdb goredis.UniversalClient, ts []laneTenant) error {
	if len(ts) == 0 {
		return nil
	}
	laned := make([]*goredis.StringCmd, len(ts))
	ready := make([]*goredis.IntCmd, len(ts))
	if _, err := rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, x := range ts {
			laned[i] = p.HGet(ctx, x.s.k.tenant(x.t), "laned")
			ready[i] = p.ZCard(ctx, x.s.k.readyTenant(x.t))
		}
		return nil
	}); err != nil && !errors.Is(err, goredis.Nil) {
		return fmt.Errorf("redis: lanes: %w", interpretError(err))
	}
	for i, x := range ts {
		n, err := laned[i].Int64()
		if err != nil && !errors.Is(err, goredis.Nil) {
			return fmt.Errorf("redis: lanes: %w", interpretError(err))
		}
		if n == ready[i].Val() {
			continue
		}
		if err := x.s.relane(ctx, x.t); err != nil {
			return err
		}
	}
	return nil
}

// relane repairs tenant t's lanes (backfill.lua, 'lanes' then 'unlane').
func (s *Store) relane(ctx context.Context, t string) error {
	each := func(key string, args ...any) error {
		for after := ""; ; {
			arr, err := s.run(ctx, "backfill", scriptBackfill, []string{key},
				append([]any{s.k.ns, args[0], t, after}, args[1:]...)...)
			if err != nil {
				return err
			}
			if after = asString(at(arr, 0)); after == "" {
				return nil
			}
		}
	}
	if err := each(s.k.readyTenant(t), "lanes"); err != nil {
		return err
	}
	kinds, err := s.rdb.SMembers(ctx, s.k.readyKinds()).Result()
	if err != nil {
		return fmt.Errorf("redis: lanes: %w", interpretError(err))
	}
	for _, kind := range kinds {
		if err := each(s.k.readyTenantKind(t, kind), "unlane", kind); err != nil {
			return err
		}
	}
	return nil
}

// repairLanes is the tenant router's repairLanes, over every tenant
// namespace it knows (Open repairs the home namespace only).
func (r *Router) repairLanes(ctx context.Context) error {
	names, err := r.tenants(ctx)
	if err != nil {
		return err
	}
	ts := make([]laneTenant, len(names))
	for i, t := range names {
		ts[i] = laneTenant{r.view(t), t}
	}
	return repairLanes(ctx, r.home.rdb, ts)
}
