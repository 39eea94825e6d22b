// Package watch lets many requests wait on the store without each of them
// re-reading it at every change.
//
// A Hub is shared by a process's waiters. Those waiting on an execution
// (event streams, GET with wait_seconds) register it; the hub reads each
// watched execution once per change that concerns it — one read shared by
// all its waiters — and wakes only the waiters of an execution whose status,
// attempt or existence changed. A store that is a store.ChangeFeed says
// which executions a change concerned; a change it cannot attribute, or a
// change notification of a plain store.Notifier, has every watched
// execution read again, once. Notifications that come while a round of
// reads runs are merged into the next round, so a burst costs a round, not
// a round per notification. Every PollInterval each watched execution is
// read anyway, so a lost notification delays a wake-up and loses nothing.
//
// Waiting claims are woken a few at a time (see ClaimWait), not all at
// every change.
package watch

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/latch-run/latch/store"
)

// Config configures a Hub.
type Config struct {
	Store store.Store
	// PollInterval is how often every watched execution is read even
	// without a notification.
	PollInterval time.Duration
	// ReadTimeout bounds each read the hub makes.
	ReadTimeout time.Duration
}

// Hub is the per-process registry of waiters. Its one goroutine runs only
// while someone waits.
type Hub struct {
	cfg      Config
	feed     store.ChangeFeed // nil: every notification has everything read
	notifier store.Notifier   // nil: poll only

	mu       sync.Mutex
	entries  map[string]*entry // watched executions by id
	dirty    map[string]bool   // watched ids to read in the next round
	all      bool              // read every watched id in the next round
	claims   claimQueue
	running  bool          // the loop runs
	stopFeed func()        // ends the feed subscription the loop holds
	kick     chan struct{} // capacity 1: a round is owed, or the loop should look whether to stop
}

// New returns a Hub over cfg.Store.
func New(cfg Config) *Hub {
	h := &Hub{cfg: cfg, entries: map[string]*entry{}, dirty: map[string]bool{}, kick: make(chan struct{}, 1)}
	h.feed, _ = cfg.Store.(store.ChangeFeed)
	h.notifier, _ = cfg.Store.(store.Notifier)
	return h
}

// entry is one watched execution.
type entry struct {
	refs int
	// read serialises the reads of this execution, so each snapshot is at
	// least as new as the one before: a waiter never sees a state go back.
	read   sync.Mutex
	seeded bool // a first read succeeded (guarded by read)

	// Guarded by Hub.mu.
	snap    Snapshot
	changed chan struct{} // closed when snap's status, attempt or existence changes
}

// Snapshot is an execution as the hub last read it: Execution, or Err
// (wrapping store.ErrNotFound once it is gone).
type Snapshot struct {
	Execution *store.Execution
	Err       error
}

// differs reports whether a waiter must be told of b after a: a change of
// status or attempt, or the execution coming or going.
func (a Snapshot) differs(b Snapshot) bool {
	if (a.Err == nil) != (b.Err == nil) {
		return true
	}
	if a.Err != nil {
		return false
	}
	return a.Execution.Status != b.Execution.Status || a.Execution.Attempt != b.Execution.Attempt
}

// Watch is one waiter's registration on an execution. Close it when done.
type Watch struct {
	h     *Hub
	id    string
	e     *entry
	close sync.Once
}

// Watch registers a waiter on execution id (of any tenant: the caller
// checks the tenant) and returns it with the execution as it is now. The
// first waiter of an execution reads it; later ones share the hub's
// snapshot, which every change after it will refresh. An error of that
// first read (other than ErrNotFound, which is a snapshot) is returned
// with no Watch.
func (h *Hub) Watch(ctx context.Context, id string) (*Watch, error) {
	h.mu.Lock()
	e := h.entries[id]
	if e == nil {
		e = &entry{changed: make(chan struct{})}
		h.entries[id] = e
	}
	e.refs++
	h.startLocked()
	h.mu.Unlock()
	w := &Watch{h: h, id: id, e: e}

	// Registered before the read: a change from now on is read again
	// after it, so none is missed.
	e.read.Lock()
	defer e.read.Unlock()
	if !e.seeded {
		snap := h.get(ctx, id)
		if snap.Err != nil && !errors.Is(snap.Err, store.ErrNotFound) {
			w.Close()
			return nil, snap.Err
		}
		h.publish(e, snap)
		e.seeded = true
	}
	return w, nil
}

// Current returns the latest snapshot and a channel closed when the next
// one differs from it.
func (w *Watch) Current() (Snapshot, <-chan struct{}) {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	return w.e.snap, w.e.changed
}

// Close ends the registration; the last one of an execution stops its
// reads.
func (w *Watch) Close() {
	w.close.Do(func() {
		h := w.h
		h.mu.Lock()
		defer h.mu.Unlock()
		w.e.refs--
		if w.e.refs == 0 && h.entries[w.id] == w.e {
			delete(h.entries, w.id)
			delete(h.dirty, w.id)
			h.kickLocked() // the loop may stop
		}
	})
}

// get reads one execution, bounded by ReadTimeout.
func (h *Hub) get(ctx context.Context, id string) Snapshot {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.ReadTimeout)
	defer cancel()
	e, err := h.cfg.Store.Get(ctx, &store.GetParams{ID: id})
	return Snapshot{Execution: e, Err: err}
}

// publish records a snapshot of e; waiters wake if it differs. The caller
// holds e.read.
func (h *Hub) publish(e *entry, snap Snapshot) {
	h.mu.Lock()
	defer h.mu.Unlock()
	prev := e.snap
	e.snap = snap
	if !e.seeded || prev.differs(snap) {
		close(e.changed)
		e.changed = make(chan struct{})
	}
}

// changes is the feed's callback.
func (h *Hub) changes(c store.Change) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c.IDs == nil {
		h.all = true
		h.claims.wake(1)
	} else {
		for _, id := range c.IDs {
			if h.entries[id] != nil {
				h.dirty[id] = true
			}
		}
		if !c.Claim { // a claim made no work claimable (ClaimGot passes it on)
			h.claims.wake(len(c.IDs))
		}
	}
	h.kickLocked()
}

func (h *Hub) kickLocked() {
	select {
	case h.kick <- struct{}{}:
	default: // one is owed already; it covers this too
	}
}

// startLocked starts the loop if it is not running. The subscription to
// the store's changes is taken here, before the caller's first read, so
// that no change after it is missed.
func (h *Hub) startLocked() {
	if h.running {
		return
	}
	h.running = true
	var changed <-chan struct{}
	switch {
	case h.feed != nil:
		h.stopFeed = h.feed.WatchChanges(h.changes)
	case h.notifier != nil:
		changed = h.notifier.Changed()
	}
	go h.loop(changed)
}

// idle reports whether nobody waits; the loop then stops.
func (h *Hub) idleLocked() bool { return len(h.entries) == 0 && h.claims.len() == 0 }

// loop runs rounds of reads while anyone waits: at each notification, and
// every PollInterval. changed is the plain Notifier's channel (nil with a
// feed), taken by startLocked.
func (h *Hub) loop(changed <-chan struct{}) {
	poll := time.NewTicker(h.cfg.PollInterval)
	defer poll.Stop()
	for {
		h.mu.Lock()
		if h.idleLocked() {
			h.running = false
			if h.stopFeed != nil {
				h.stopFeed()
				h.stopFeed = nil
			}
			h.mu.Unlock()
			return
		}
		h.mu.Unlock()
		h.round()

		select {
		case <-h.kick:
		case <-changed:
			changed = h.notifier.Changed() // before the round it causes: no change is missed
			h.changes(store.Change{})
		case <-poll.C:
			h.mu.Lock()
			h.all = true
			h.mu.Unlock()
		}
	}
}

// roundWorkers bounds the reads of one round that run at once.
const roundWorkers = 4

// round reads the executions owed a read, each once.
func (h *Hub) round() {
	h.mu.Lock()
	var ids []string
	if h.all {
		for id := range h.entries {
			ids = append(ids, id)
		}
	} else {
		for id := range h.dirty {
			ids = append(ids, id)
		}
	}
	h.all = false
	clear(h.dirty)
	h.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	work := make(chan string)
	var wg sync.WaitGroup
	for range min(roundWorkers, len(ids)) {
		wg.Go(func() {
			for id := range work {
				h.refresh(id)
			}
		})
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
}

// refresh reads one watched execution and publishes what it read. A failed
// read (other than not found) publishes nothing: the next round tries
// again, and the waiters keep what they have.
func (h *Hub) refresh(id string) {
	h.mu.Lock()
	e := h.entries[id]
	h.mu.Unlock()
	if e == nil {
		return // nobody waits on it any more
	}
	e.read.Lock()
	defer e.read.Unlock()
	snap := h.get(context.Background(), id)
	if snap.Err != nil && !errors.Is(snap.Err, store.ErrNotFound) {
		return
	}
	h.publish(e, snap)
	e.seeded = true
}
