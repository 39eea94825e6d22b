package redis

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/store"
)

// notifier implements store.Notifier over Redis pub/sub, for one
// namespace (a Store of Open's) or for several (the tenant router's home
// namespace and every tenant's, router.go).
//
// Every script that changes state increments its namespace's version
// counter and publishes the new version on the namespace's channel,
// {ns}:changed; the scripts also return it to their caller. Versions of
// different namespaces are not comparable, so what the notifier knows is
// per namespace: the highest version this process knew of, the newest
// returned by its own scripts (acked) or received (seen). Messages arrive
// asynchronously, so a message published before a Changed call may be
// delivered after it. To keep "closed at the first change after the
// call", each channel handed out carries a mark: the versions known, per
// namespace, when it was handed out. Only a message above its namespace's
// mark closes it. A change that another process made just before the
// call may still close it: a spurious wake, which callers tolerate (they
// re-read state), never a missed one.
//
// One namespace's Store subscribes to its channel; the router subscribes
// to one pattern, {prefix[}/]*:changed, that hears the home channel and
// every tenant's (PUBLISH reaches every node of a cluster).
//
// After the subscription is (re)established, messages may have been lost,
// so every waiting channel is closed and the marks start again from zero
// (a Redis restart without persistence also resets the version counters).
//
// The change feed (store.ChangeFeed) hears this process's changes from the
// Store's methods, with their ids. A message carries only a version, so a
// received version that none of this process's scripts returned is another
// process's change, reported as unattributed. A script's reply and its
// message race, so a version received before its reply is held as in
// doubt for ackGrace: only one still unclaimed then counts as remote.
type notifier struct {
	ps   *goredis.PubSub
	lost func() // called when the subscription fails (nil: nothing to do)
	quit chan struct{}
	done chan struct{}
	feed *store.Feed

	mu    sync.Mutex
	known map[string]uint64 // namespace -> the highest version acked or seen
	gen   uint64            // bumped at each change of known
	waits []wait
	mine  map[nsVersion]struct{} // versions our scripts returned, not yet received
	doubt map[nsVersion]struct{} // versions received, not (yet) known as ours
	timer *time.Timer            // settles doubt; nil when none is pending
}

type nsVersion struct {
	ns string
	v  uint64
}

type wait struct {
	gen  uint64
	mark map[string]uint64 // shared by the waits of one gen; never written after
	ch   chan struct{}
}

// ackGrace is how long a received version may wait for the reply that
// makes it this process's own.
const ackGrace = 50 * time.Millisecond

// maxMine bounds the versions remembered as our own: messages lost in an
// outage would otherwise leave theirs behind for ever.
const maxMine = 1 << 16

// routerPattern is the pattern of the channels of the namespace home ns
// "{prefix}" and of its tenants' "{prefix/T}".
func routerPattern(home string) string {
	return strings.TrimSuffix(home, "}") + "[}/]*:changed"
}

// startNotifier subscribes to channel (to the channels it matches, if
// pattern) and returns once the subscription is confirmed, so that no
// change after Open is missed. lost, if not nil, is called each time the
// subscription's connection fails, before go-redis reconnects (on a
// cluster: a refresh of the cluster's map, so that the reconnection finds
// the slot's new primary after a failover).
func startNotifier(ctx context.Context, rdb goredis.UniversalClient, channel string, pattern bool, feed *store.Feed, lost func()) (*notifier, error) {
	var ps *goredis.PubSub
	if pattern {
		ps = rdb.PSubscribe(ctx, channel)
	} else {
		ps = rdb.Subscribe(ctx, channel)
	}
	if _, err := ps.ReceiveTimeout(ctx, 10*time.Second); err != nil {
		ps.Close()
		return nil, fmt.Errorf("redis: subscribe %s: %w", channel, err)
	}
	n := &notifier{ps: ps, lost: lost, quit: make(chan struct{}), done: make(chan struct{}), feed: feed,
		known: map[string]uint64{}, mine: map[nsVersion]struct{}{}, doubt: map[nsVersion]struct{}{}}
	go n.loop()
	return n, nil
}

// forNS returns the handle a namespace's Store acks its versions to.
func (n *notifier) forNS(ns string) nsNotifier { return nsNotifier{n: n, ns: ns} }

// nsNotifier is one namespace's handle on the notifier that hears it.
type nsNotifier struct {
	n  *notifier
	ns string
}

// ack records a version returned by one of this process's scripts on the
// namespace (0: the script changed nothing).
func (h nsNotifier) ack(v int64) {
	if v > 0 {
		h.n.ack(h.ns, uint64(v))
	}
}

// changed returns a channel closed by the first change, in any namespace
// the notifier hears, after the call.
func (h nsNotifier) changed() <-chan struct{} { return h.n.changed() }

func (n *notifier) loop() {
	listen(n.ps, n.quit, n.done, listener{
		message: func(channel string, v uint64) { n.receive(strings.TrimSuffix(channel, ":changed"), v) },
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
	if k := len(n.waits); k > 0 && n.waits[k-1].gen == n.gen {
		return n.waits[k-1].ch
	}
	w := wait{gen: n.gen, mark: maps.Clone(n.known), ch: make(chan struct{})}
	n.waits = append(n.waits, w)
	return w.ch
}

// raise records version v of namespace ns as known. n.mu is held.
func (n *notifier) raise(ns string, v uint64) {
	if v > n.known[ns] {
		n.known[ns] = v
		n.gen++
	}
}

// ack records version v of namespace ns, returned by one of this
// process's scripts.
func (n *notifier) ack(ns string, v uint64) {
	key := nsVersion{ns, v}
	n.mu.Lock()
	n.raise(ns, v)
	if _, ok := n.doubt[key]; ok {
		delete(n.doubt, key)
	} else {
		if len(n.mine) >= maxMine {
			clear(n.mine) // a remote change may pass as ours: the poll covers it
		}
		n.mine[key] = struct{}{}
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

func (n *notifier) receive(ns string, v uint64) {
	key := nsVersion{ns, v}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.mine[key]; ok {
		delete(n.mine, key)
	} else {
		n.doubt[key] = struct{}{}
		if n.timer == nil {
			n.timer = time.AfterFunc(ackGrace, n.settle)
		}
	}
	n.raise(ns, v)
	keep := n.waits[:0]
	for _, w := range n.waits {
		if v > w.mark[ns] {
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

// reset forgets the versions known and wakes every waiter.
func (n *notifier) reset() {
	n.mu.Lock()
	clear(n.known)
	n.gen++
	clear(n.mine)
	n.mu.Unlock()
	n.wakeAll()
}
