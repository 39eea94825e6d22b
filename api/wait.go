package api

import (
	"context"
	"time"
)

// waitUntil calls check until it reports done, or until wait has passed
// (then check runs once more), or ctx ends. Between calls it sleeps until
// the store signals a change (store.Notifier) or PollInterval passes, so a
// waiter notices a change at once on a notifying store and within the poll
// interval on any store. With wait <= 0 check runs once. Server.Close ends
// the wait like the deadline does.
func (s *Server) waitUntil(ctx context.Context, wait time.Duration, check func(context.Context) (bool, error)) error {
	var deadline <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		deadline = t.C
	}
	poll := time.NewTicker(s.cfg.PollInterval)
	defer poll.Stop()
	for {
		changed := s.changed() // taken before the check, so no change is missed
		done, err := check(ctx)
		if err != nil || done || wait <= 0 {
			return err
		}
		select {
		case <-changed:
		case <-poll.C:
		case <-deadline:
			_, err := check(ctx)
			return err
		case <-s.done:
			_, err := check(ctx)
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
