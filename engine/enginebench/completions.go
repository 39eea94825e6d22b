package enginebench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/latch-run/latch/store"
)

// Completions counts the Completes a Store acknowledged (through the Store
// Wrap returns) and notes when the want-th one returned: a drain is timed
// to the store's acknowledgement of its last Complete, not to the last
// handler's return.
type Completions struct {
	want int64
	n    atomic.Int64
	done chan struct{}
	at   time.Time
}

// NewCompletions counts up to want Completes.
func NewCompletions(want int) *Completions {
	return &Completions{want: int64(want), done: make(chan struct{})}
}

func (c *Completions) complete(err error) {
	if err == nil && c.n.Add(1) == c.want {
		c.at = time.Now()
		close(c.done)
	}
}

// Wait returns when want Completes were acknowledged, or an error when ctx
// ends or limit passes first.
func (c *Completions) Wait(ctx context.Context, limit time.Duration) error {
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(limit):
		return fmt.Errorf("%d of %d completed after %v", c.n.Load(), c.want, limit)
	}
}

// At is when the want-th Complete returned (zero before).
func (c *Completions) At() time.Time {
	select {
	case <-c.done:
		return c.at
	default:
		return time.Time{}
	}
}

// Wrap returns s counting its Completes into c; it keeps s's wake-ups
// (store.Notifier), which a worker finds by a type assertion.
func (c *Completions) Wrap(s store.Store) store.Store {
	if n, ok := s.(store.Notifier); ok {
		return &notifyingCountingStore{countingStore{s, c}, n}
	}
	return &countingStore{s, c}
}

// countingStore passes every call to its Store and counts Completes.
type countingStore struct {
	store.Store
	c *Completions
}

func (s *countingStore) Complete(ctx context.Context, p *store.CompleteParams) (*store.Execution, error) {
	e, err := s.Store.Complete(ctx, p)
	s.c.complete(err)
	return e, err
}

// RideClaim keeps the store's store.ClaimRider, which a worker finds by a
// type assertion: nil when it has none.
func (s *countingStore) RideClaim(p *store.ClaimParams, now func() time.Time) store.Ride {
	if r, ok := s.Store.(store.ClaimRider); ok {
		return r.RideClaim(p, now)
	}
	return nil
}

// notifyingCountingStore is a countingStore that keeps the wake-ups of a
// store.Notifier.
type notifyingCountingStore struct {
	countingStore
	notifier store.Notifier
}

func (s *notifyingCountingStore) Changed() <-chan struct{} { return s.notifier.Changed() }
