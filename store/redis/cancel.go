package redis

import (
	"context"

	"github.com/latch-run/latch/store"
)

// Cancel implements store.Store (cancel.lua). Cancel of a running execution
// is a durable flag on its hash, not a message: the worker reads it from
// every heartbeat, and Complete, Fail, Release or Rescue turn it into the
// cancelled status.
func (s *Store) Cancel(ctx context.Context, p *store.CancelParams) (*store.Execution, error) {
	return s.feed.Execution(s.afterLease(ctx, "cancel", scriptCancel, p.ID, s.k.ns, p.ID, p.Tenant, itoa(us(now(p.Now)))))
}

// Delete implements store.Store (delete.lua): the hash, its indexes, its
// dedup key (compare-and-delete: only a key that still names this
// execution) and, for an execution still in flight, its quota slot all go
// in one script.
func (s *Store) Delete(ctx context.Context, p *store.DeleteParams) error {
	arr, err := s.run(ctx, "delete", scriptDelete, []string{s.k.exec(p.ID)}, s.k.ns, p.ID, p.Tenant, flag(p.Force),
		itoa(us(now(p.Now))))
	if err != nil {
		return err
	}
	if err := status(arr, "execution "+p.ID); err != nil {
		return err
	}
	s.note.ack(asInt(at(arr, 1)))
	s.publishFamily(at(arr, 2))
	return s.feed.Deleted(p.ID, nil)
}
