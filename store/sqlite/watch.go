package sqlite

import (
	"context"
	"fmt"
	"os"
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
// A PRAGMA costs a trip through SQLite on the write connection, and a
// running server always has a worker waiting, so the poller first looks at
// the write-ahead log file: every commit, by any connection, writes it, so
// while its size and modification time stay the same no one committed,
// and the PRAGMA is skipped. Every readEvery-th poll reads the PRAGMA
// anyway, bounding what a change the file's metadata could hide (a log
// reset by a checkpoint and written back to the same size within one tick
// of the file clock) can delay a wake-up.
//
// It runs only while someone may be waiting: the current Changed channel
// was handed out, or the feed has a subscriber. It stops once a wake-up
// closed the channel nobody has asked for again and the feed has none, so
// an idle Store reads nothing.

// pollEvery is how often the poller looks for a commit; readEvery polls,
// it reads data_version even if the log file looks unchanged.
const (
	pollEvery = 5 * time.Millisecond
	readEvery = 20
)

// watch is the poller's state, guarded by Store.mu.
type watch struct {
	handed  bool // the current changed channel was handed out by Changed
	subs    int  // the feed's subscribers
	polling bool // the poller runs
	closed  bool

	version int64 // data_version last read
	polls   int64 // data_version reads, for the tests
	looks   int64 // polls, reads or not
	walSize int64 // the log file's size and modification time at the last look
	walTime time.Time

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
		read := s.walChanged()
		s.mu.Unlock()

		var v int64
		var err error
		if read {
			err = s.write.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v)
			s.mu.Lock()
			s.w.polls++
			if err == nil {
				s.w.version = v
			}
			s.mu.Unlock()
		} else {
			v = last
		}
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

// walChanged reports whether the poller should read data_version now: the
// log file's size or time moved since the last look (or cannot be read),
// or this is a readEvery-th look. s.mu held.
func (s *Store) walChanged() bool {
	s.w.looks++
	fi, err := os.Stat(s.wal)
	if err != nil {
		return true
	}
	moved := fi.Size() != s.w.walSize || !fi.ModTime().Equal(s.w.walTime)
	s.w.walSize, s.w.walTime = fi.Size(), fi.ModTime()
	return moved || s.w.looks%readEvery == 0
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
