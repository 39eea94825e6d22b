package redis

import (
	"context"

	"github.com/latch-run/latch/store"
)

// lostLease is the error recorded on an attempt whose lease Rescue ended.
const lostLease = "lease expired: the worker stopped heartbeating"

// Rescue implements store.Store (rescue.lua).
func (s *Store) Rescue(ctx context.Context, p *store.RescueParams) (*store.RescueResult, error) {
	limit := store.BatchLimit(p.Limit)
	nowUS := us(now(p.Now))
	arr, err := s.run(ctx, "rescue", scriptRescue, []string{s.k.running()},
		s.k.ns, itoa(nowUS), limit, timeLex(nowUS), lostLease)
	if err != nil {
		return nil, err
	}
	s.note.ack(asInt(at(arr, 0)))
	return s.feed.Rescued(&store.RescueResult{
		Requeued:  int(asInt(at(arr, 1))),
		Failed:    int(asInt(at(arr, 2))),
		Cancelled: int(asInt(at(arr, 3))),
	}, nil)
}

// Promote implements store.Store (promote.lua).
func (s *Store) Promote(ctx context.Context, p *store.PromoteParams) (*store.PromoteResult, error) {
	limit := store.BatchLimit(p.Limit)
	arr, err := s.run(ctx, "promote", scriptPromote, []string{s.k.sched(), s.k.due()}, s.k.ns, itoa(us(now(p.Now))), limit)
	if err != nil {
		return nil, err
	}
	s.note.ack(asInt(at(arr, 0)))
	return s.feed.Promoted(&store.PromoteResult{Promoted: int(asInt(at(arr, 1)))}, nil)
}

// Prune implements store.Store (prune.lua).
func (s *Store) Prune(ctx context.Context, p *store.PruneParams) (*store.PruneResult, error) {
	limit := store.BatchLimit(p.Limit)
	t := now(p.Now)
	seen, minute := presenceBounds(t)
	arr, err := s.run(ctx, "prune", scriptPrune, []string{s.k.tenants(), s.k.dedupExp()},
		s.k.ns, itoa(us(t)), limit, itoa(seen), itoa(minute))
	if err != nil {
		return nil, err
	}
	s.note.ack(asInt(at(arr, 0)))
	return &store.PruneResult{Executions: int(asInt(at(arr, 1))), DedupKeys: int(asInt(at(arr, 2)))}, nil
}
