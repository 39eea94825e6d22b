package redis

import (
	"context"
	"fmt"

	"github.com/latch-run/latch/store"
)

// Signal implements store.Store with one script (signal.lua): the
// idempotency key's lookup, the status check and the delivery or buffering
// are one step, so a signal and a wait's timeout (wake.lua) or its start
// (suspend.lua) are ordered once (I11).
func (s *Store) Signal(ctx context.Context, p *store.SignalParams) (*store.SignalResult, error) {
	if err := store.CheckSignalName(p.Name); err != nil {
		return nil, err
	}
	nowUS := us(now(p.Now))
	arr, err := s.run(ctx, "signal", scriptSignal, []string{s.k.exec(p.ExecutionID), s.k.sigKeys(p.ExecutionID)},
		s.k.ns, p.ExecutionID, p.Tenant, p.Name, jsonOrNull(p.Data), p.IdempotencyKey, itoa(nowUS), timeLex(nowUS),
		p.BufferBound(), p.ByteBound())
	if err != nil {
		return nil, err
	}
	if err := status(arr, "execution "+p.ExecutionID); err != nil {
		return nil, err
	}
	if len(arr) != 3 {
		return nil, fmt.Errorf("redis: signal: unexpected reply %v", arr)
	}
	if v := asInt(arr[1]); v != 0 {
		s.note.ack(v)
		s.feed.Publish(p.ExecutionID)
	}
	return &store.SignalResult{Delivered: asInt(arr[2]) == 1}, nil
}
