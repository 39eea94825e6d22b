package api

import (
	"context"
	"time"

	"github.com/latch-run/latch/internal/watch"
	"github.com/latch-run/latch/store"
)

// Waiting requests (GET with wait_seconds, event streams, claims with
// wait_seconds) wait through the server's watch.Hub: a change wakes only
// the waiters of the executions it changed, which share one read of each,
// and a few waiting claims, not every one. The hub reads every watched
// execution each PollInterval as well, and a waiting claim tries again
// each PollInterval, so a waiter notices a change at once on a notifying
// store and within the poll interval on any store.

// watchExecution registers a waiter on execution id as seen by scope ("" =
// any tenant) and returns the execution as it is now. The caller closes
// the Watch.
func (s *Server) watchExecution(ctx context.Context, scope, id string) (*watch.Watch, *store.Execution, error) {
	w, err := s.hub.Watch(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	snap, _ := w.Current()
	e, err := scoped(snap, scope)
	if err != nil {
		w.Close()
		return nil, nil, err
	}
	return w, e, nil
}

// scoped is the execution of snap as scope may see it: another tenant's is
// not found, like a missing one.
func scoped(snap watch.Snapshot, scope string) (*store.Execution, error) {
	switch {
	case snap.Err != nil:
		return nil, snap.Err
	case scope != "" && snap.Execution.Tenant != scope:
		return nil, store.ErrNotFound
	}
	return snap.Execution, nil
}

// awaitTerminal reads an execution, waiting up to wait for it to be
// terminal. It returns the last state read. When the wait ends (its time
// is up, or Server.Close) the execution is read once more.
func (s *Server) awaitTerminal(ctx context.Context, scope, id string, wait time.Duration) (*store.Execution, error) {
	get := func() (*store.Execution, error) {
		return s.cfg.Store.Get(ctx, &store.GetParams{Tenant: scope, ID: id})
	}
	if wait <= 0 {
		return get()
	}
	w, _, err := s.watchExecution(ctx, scope, id)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	var e *store.Execution
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		// The snapshot and the channel of its next change come together,
		// so that no change falls between them.
		snap, changed := w.Current()
		if e, err = scoped(snap, scope); err != nil || e.Status.Terminal() {
			return e, err
		}
		select {
		case <-changed:
		case <-t.C:
			return get()
		case <-s.done:
			return get()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// claimWait runs try until it gets work, or until wait has passed (then
// try runs once more), or ctx ends; with wait <= 0 try runs once. Between
// tries it waits to be woken by the hub or for PollInterval. Server.Close
// ends the wait like the deadline does.
func (s *Server) claimWait(ctx context.Context, wait time.Duration, try func(context.Context) (bool, error)) error {
	if wait <= 0 {
		_, err := try(ctx)
		return err
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	poll := time.NewTicker(s.cfg.PollInterval)
	defer poll.Stop()
	waited := false
	for {
		wake, done := s.hub.ClaimWait() // registered before the try, so no change is missed
		got, err := try(ctx)
		if err != nil || got {
			done()
			if got && waited {
				s.hub.ClaimGot() // there may be more work: wake the next claim
			}
			return err
		}
		last := false
		select {
		case <-wake:
		case <-poll.C:
		case <-deadline.C:
			last = true
		case <-s.done:
			last = true
		case <-ctx.Done():
			done()
			return ctx.Err()
		}
		done()
		if last {
			_, err := try(ctx)
			return err
		}
		waited = true
	}
}
