package redis

import (
	"context"

	"github.com/latch-run/latch/store"
)

// Suspend implements store.Store with one script (suspend.lua), fenced like
// Complete: whether the execution sleeps, waits, or goes on at once (a
// step already recorded, a sleep already over, a signal already buffered)
// is decided in the same step that ends the lease; so is whether a fan-in
// wait's condition holds already, and whether a retained event matches a
// wait for an event. A child's end that makes it hold later ends the wait
// in the child's own script (lib.lua, child_end); a publish that matches
// it, in publish.lua.
func (s *Store) Suspend(ctx context.Context, p *store.SuspendParams) (*store.Execution, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	t := now(p.Now)
	nowUS := us(t)
	timeoutAt := ""
	if (p.Signal != "" || p.Children != "" || p.Event != "") && p.Timeout > 0 {
		timeoutAt = itoa(us(t.Add(p.Timeout)))
	}
	return s.feed.Execution(s.runExec(ctx, "suspend", scriptSuspend, p.ExecutionID,
		[]string{s.k.exec(p.ExecutionID), s.k.steps(p.ExecutionID), s.k.wake()},
		s.k.ns, p.ExecutionID, p.Tenant, p.Token, itoa(nowUS), timeLex(nowUS), p.Step, optUS(p.Until), p.Signal, timeoutAt,
		p.StepBound(), p.ByteBound(), len(store.TimedOut), p.Children, p.Count, p.Event, p.EventKey, optUS(p.Since)))
}

// Wake implements store.Store (wake.lua): each suspension ends in the
// script that takes it out of the wake set, so a signal and a wake never
// both end one. The change is published like a submit's, so that workers
// waiting on Changed claim the woken executions at once.
func (s *Store) Wake(ctx context.Context, p *store.WakeParams) (*store.WakeResult, error) {
	limit := store.BatchLimit(p.Limit)
	nowUS := us(now(p.Now))
	arr, err := s.run(ctx, "wake", scriptWake, []string{s.k.wake()},
		s.k.ns, itoa(nowUS), limit, timeLex(nowUS), string(store.TimedOut))
	if err != nil {
		return nil, err
	}
	s.note.ack(asInt(at(arr, 0)))
	ids := make([]string, 0, max(len(arr)-1, 0))
	for _, v := range arr[min(1, len(arr)):] {
		ids = append(ids, asString(v))
	}
	if len(ids) > 0 {
		s.feed.Publish(ids...)
	}
	return &store.WakeResult{Woken: len(ids)}, nil
}
