package sqlite

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/latch-run/latch/store"
)

// Wake-ups for commits made by another connection to the file: another
// process, or another Store in this one. SQLite tells no one of them, but
// PRAGMA data_version, read on a connection, changes when another
// connection has committed since that connection last read it. The poller
// reads it every pollEvery on the write connection — whose own commits
// do not move it, so the Store's own writes, already announced, cause no
// second wake-up — and, when it moved, wakes Changed's waiters and
// reports an unattributed change on the feed.
//
// It runs only while someone may be waiting: the current Changed channel
// was handed out, or the feed has a subscriber. It stops once a wake-up
// closed the channel nobody has asked for again and the feed has none, so
// an idle Store reads nothing.

// pollEvery is how often the poller reads data_version.
const pollEvery = 5 * time.Millisecond

// watch is the poller's state, guarded by Store.mu.
type watch struct {
	handed  bool // the current changed channel was handed out by Changed
	subs    int  // the feed's subscribers
	polling bool // the poller runs
	closed  bool

	version int64 // data_version last read
	polls   int64 // data_version reads, for the tests

	ctx    context.Context // ended by Close
	cancel context.CancelFunc
	done   sync.WaitGroup
}

// wanted reports whether someone may be waiting for a change. s.mu held.
func (s *Store) wanted() bool { return !s.w.closed && (s.w.handed || s.w.subs > 0) }

// startPoll starts the poller if someone waits and it does not run. s.mu
// held.
func (s *Store) startPoll() {
	if s.w.polling || !s.wanted() {
		return
	}
	s.w.polling = true
	s.w.done.Add(1)
	go s.poll()
}

// startWatch reads the first data_version (Open): a commit by another
// connection after Open wakes the first waiter even if the poller starts
// only after it.
func (s *Store) startWatch(ctx context.Context) error {
	var v int64
	if err := s.write.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v); err != nil {
		return fmt.Errorf("sqlite: data_version: %w", err)
	}
	s.mu.Lock()
	s.w.version = v
	s.w.ctx, s.w.cancel = context.WithCancel(context.Background())
	s.mu.Unlock()
	return nil
}

// stopPoll ends the poller and waits for it (Close).
func (s *Store) stopPoll() {
	s.mu.Lock()
	s.w.closed = true
	if s.w.cancel != nil {
		s.w.cancel()
	}
	s.mu.Unlock()
	s.w.done.Wait()
}

func (s *Store) poll() {
	defer s.w.done.Done()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		s.mu.Lock()
		if !s.wanted() {
			s.w.polling = false
			s.mu.Unlock()
			return
		}
		ctx, last := s.w.ctx, s.w.version
		s.mu.Unlock()

		var v int64
		err := s.write.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v)
		s.mu.Lock()
		s.w.polls++
		if err == nil {
			s.w.version = v
		}
		s.mu.Unlock()
		// The version is kept across restarts of the poller: a commit made
		// while it was stopped, after a waiter looked, still wakes it
		// (once more than needed if the waiter had seen it).
		if err == nil && v != last {
			s.notify()
			s.feed.PublishAll()
		}
		select {
		case <-ctx.Done():
			s.mu.Lock()
			s.w.polling = false
			s.mu.Unlock()
			return
		case <-tick.C:
		}
	}
}

// Changed implements store.Notifier. The channel is also closed by
// another connection's commit to the file, seen within pollEvery.
func (s *Store) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w.handed = true
	s.startPoll()
	return s.changed
}

// WatchChanges implements store.ChangeFeed. The Store's own changes are
// reported with their executions; another connection's commit to the file
// (another process's) as a change of unknown executions, within pollEvery.
func (s *Store) WatchChanges(fn func(store.Change)) (stop func()) {
	s.mu.Lock()
	s.w.subs++
	s.startPoll()
	s.mu.Unlock()
	unwatch := s.feed.WatchChanges(fn)
	var once sync.Once
	return func() {
		once.Do(func() {
			unwatch()
			s.mu.Lock()
			s.w.subs--
			s.mu.Unlock()
		})
	}
}

func (s *Store) notify() {
	s.mu.Lock()
	close(s.changed)
	s.changed = make(chan struct{})
	s.w.handed = false
	s.mu.Unlock()
}
