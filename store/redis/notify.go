package redis

import (
	"context"
	"fmt"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/store"
)

// notifier implements store.Notifier over Redis pub/sub.
//
// Every script that changes state increments the namespace's version
// counter and publishes the new version on the namespace's channel; the
// scripts also return it to their caller. Messages arrive asynchronously,
// so a message published before a Changed call may be delivered after it.
// To keep "closed at the first change after the call", each channel handed
// out carries a mark: the highest version this process knew of when it was
// handed out — the newest version returned by its own scripts (acked) or
// received (seen). Only a message above the mark closes it. A change that
// another process made just before the call may still close it: a spurious
// wake, which callers tolerate (they re-read state), never a missed one.
//
// After the subscription is (re)established, messages may have been lost,
// so every waiting channel is closed and the marks start again from zero
// (a Redis restart without persistence also resets the version counter).
//
// The change feed (store.ChangeFeed) hears this process's changes from the
// Store's methods, with their ids. A message carries only a version, so a
// received version that none of this process's scripts returned is another
// process's change, reported as unattributed. A script's reply and its
// message race, so a version received before its reply is held as in
// doubt for ackGrace: only one still unclaimed then counts as remote.
type notifier struct {
	ps   *goredis.PubSub // nil for a namespace of the tenant router (fwd)
	fwd  func(v int64)   // the router's ack for this namespace (router_notify.go); nil: none
	lost func()          // called when the subscription fails (nil: nothing to do)
	quit chan struct{}
	done chan struct{}
	feed *store.Feed

	mu    sync.Mutex
	acked uint64
	seen  uint64
	waits []wait
	mine  map[uint64]struct{} // versions our scripts returned, not yet received
	doubt map[uint64]struct{} // versions received, not (yet) known as ours
	timer *time.Timer         // settles doubt; nil when none is pending
}

// ackGrace is how long a received version may wait for the reply that
// makes it this process's own.
const ackGrace = 50 * time.Millisecond

// maxMine bounds the versions remembered as our own: messages lost in an
// outage would otherwise leave theirs behind for ever.
const maxMine = 1 << 16

type wait struct {
	mark uint64
	ch   chan struct{}
}

// startNotifier subscribes to channel and returns once the subscription is
// confirmed, so that no change after Open is missed. lost, if not nil, is
// called each time the subscription's connection fails, before go-redis
// reconnects (on a cluster: a refresh of the cluster's map, so that the
// reconnection finds the slot's new primary after a failover).
func startNotifier(ctx context.Context, rdb goredis.UniversalClient, channel string, feed *store.Feed, lost func()) (*notifier, error) {
	ps := rdb.Subscribe(ctx, channel)
	if _, err := ps.ReceiveTimeout(ctx, 10*time.Second); err != nil {
		ps.Close()
		return nil, fmt.Errorf("redis: subscribe %s: %w", channel, err)
	}
	n := &notifier{ps: ps, lost: lost, quit: make(chan struct{}), done: make(chan struct{}), feed: feed,
		mine: map[uint64]struct{}{}, doubt: map[uint64]struct{}{}}
	go n.loop()
	return n, nil
}

func (n *notifier) loop() {
	listen(n.ps, n.quit, n.done, listener{
		message: func(_ string, v uint64) { n.receive(v) },
		wakeAll: n.wakeAll, reset: n.reset, lost: n.lost,
	})
}

func (n *notifier) stop() error {
	close(n.quit)
	err := n.ps.Close()
	<-n.done
	n.wakeAll()
	return err
}

// changed returns a channel closed by the first change after the call.
func (n *notifier) changed() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	mark := max(n.acked, n.seen)
	if k := len(n.waits); k > 0 && n.waits[k-1].mark == mark {
		return n.waits[k-1].ch
	}
	w := wait{mark: mark, ch: make(chan struct{})}
	n.waits = append(n.waits, w)
	return w.ch
}

// ack records a version returned by one of this process's scripts (0: the
// script changed nothing).
func (n *notifier) ack(v int64) {
	if v <= 0 {
		return
	}
	if n.fwd != nil {
		n.fwd(v)
		return
	}
	n.mu.Lock()
	n.acked = max(n.acked, uint64(v))
	if _, ok := n.doubt[uint64(v)]; ok {
		delete(n.doubt, uint64(v))
	} else {
		if len(n.mine) >= maxMine {
			clear(n.mine) // a remote change may pass as ours: the poll covers it
		}
		n.mine[uint64(v)] = struct{}{}
	}
	n.mu.Unlock()
}

// settle reports the versions still in doubt as another process's change.
func (n *notifier) settle() {
	n.mu.Lock()
	remote := len(n.doubt) > 0
	clear(n.doubt)
	n.timer = nil
	n.mu.Unlock()
	if remote {
		n.feed.PublishAll()
	}
}

func (n *notifier) receive(v uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.mine[v]; ok {
		delete(n.mine, v)
	} else {
		n.doubt[v] = struct{}{}
		if n.timer == nil {
			n.timer = time.AfterFunc(ackGrace, n.settle)
		}
	}
	n.seen = max(n.seen, v)
	keep := n.waits[:0]
	for _, w := range n.waits {
		if v > w.mark {
			close(w.ch)
		} else {
			keep = append(keep, w)
		}
	}
	clear(n.waits[len(keep):])
	n.waits = keep
}

// wakeAll wakes every waiter: changes may have been lost.
func (n *notifier) wakeAll() {
	n.mu.Lock()
	for _, w := range n.waits {
		close(w.ch)
	}
	n.waits = nil
	n.mu.Unlock()
	n.feed.PublishAll()
}

func (n *notifier) reset() {
	n.mu.Lock()
	n.acked, n.seen = 0, 0
	clear(n.mine)
	n.mu.Unlock()
	n.wakeAll()
}
