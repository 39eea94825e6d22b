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

// shardNotifier is the tenant router's store.Notifier: notifier's rules
// (notify.go) over several namespaces, the home one and every tenant's.
//
// Each namespace keeps its own version counter and channel ({ns}:changed,
// unchanged scripts), so versions of different namespaces are not
// comparable: the marks are per namespace. One pattern subscription,
// {prefix[}/]*:changed, hears the home channel and every tenant's (PUBLISH
// reaches every node of a cluster). A channel handed out carries the
// versions this process knew of, per namespace, when it was handed out;
// a message above its namespace's mark closes it.
type shardNotifier struct {
	ps   *goredis.PubSub
	lost func()
	quit chan struct{}
	done chan struct{}
	feed *store.Feed

	mu    sync.Mutex
	known map[string]uint64 // namespace -> the highest version acked or seen
	gen   uint64            // bumped at each change of known
	waits []shardWait
	mine  map[nsVersion]struct{}
	doubt map[nsVersion]struct{}
	timer *time.Timer
}

type nsVersion struct {
	ns string
	v  uint64
}

type shardWait struct {
	gen  uint64
	mark map[string]uint64 // shared by the waits of one gen; never written after
	ch   chan struct{}
}

// shardPattern is the pattern of the channels of the namespace home ns
// "{prefix}" and of its tenants' "{prefix/T}".
func shardPattern(home string) string {
	return strings.TrimSuffix(home, "}") + "[}/]*:changed"
}

func startShardNotifier(ctx context.Context, rdb goredis.UniversalClient, home string, feed *store.Feed, lost func()) (*shardNotifier, error) {
	pattern := shardPattern(home)
	ps := rdb.PSubscribe(ctx, pattern)
	if _, err := ps.ReceiveTimeout(ctx, 10*time.Second); err != nil {
		ps.Close()
		return nil, fmt.Errorf("redis: subscribe %s: %w", pattern, err)
	}
	n := &shardNotifier{ps: ps, lost: lost, quit: make(chan struct{}), done: make(chan struct{}), feed: feed,
		known: map[string]uint64{}, mine: map[nsVersion]struct{}{}, doubt: map[nsVersion]struct{}{}}
	go n.loop()
	return n, nil
}

// forNS returns the notifier a namespace's Store acks its versions to.
func (n *shardNotifier) forNS(ns string) *notifier {
	return &notifier{fwd: func(v int64) { n.ack(ns, uint64(v)) }}
}

func (n *shardNotifier) loop() {
	listen(n.ps, n.quit, n.done, listener{
		message: func(channel string, v uint64) { n.receive(strings.TrimSuffix(channel, ":changed"), v) },
		wakeAll: n.wakeAll, reset: n.reset, lost: n.lost,
	})
}

func (n *shardNotifier) stop() error {
	close(n.quit)
	err := n.ps.Close()
	<-n.done
	n.wakeAll()
	return err
}

func (n *shardNotifier) changed() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if k := len(n.waits); k > 0 && n.waits[k-1].gen == n.gen {
		return n.waits[k-1].ch
	}
	w := shardWait{gen: n.gen, mark: maps.Clone(n.known), ch: make(chan struct{})}
	n.waits = append(n.waits, w)
	return w.ch
}

func (n *shardNotifier) raise(ns string, v uint64) {
	if v > n.known[ns] {
		n.known[ns] = v
		n.gen++
	}
}

func (n *shardNotifier) ack(ns string, v uint64) {
	key := nsVersion{ns, v}
	n.mu.Lock()
	n.raise(ns, v)
	if _, ok := n.doubt[key]; ok {
		delete(n.doubt, key)
	} else {
		if len(n.mine) >= maxMine {
			clear(n.mine)
		}
		n.mine[key] = struct{}{}
	}
	n.mu.Unlock()
}

func (n *shardNotifier) settle() {
	n.mu.Lock()
	remote := len(n.doubt) > 0
	clear(n.doubt)
	n.timer = nil
	n.mu.Unlock()
	if remote {
		n.feed.PublishAll()
	}
}

func (n *shardNotifier) receive(ns string, v uint64) {
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

func (n *shardNotifier) wakeAll() {
	n.mu.Lock()
	for _, w := range n.waits {
		close(w.ch)
	}
	n.waits = nil
	n.mu.Unlock()
	n.feed.PublishAll()
}

func (n *shardNotifier) reset() {
	n.mu.Lock()
	clear(n.known)
	n.gen++
	clear(n.mine)
	n.mu.Unlock()
	n.wakeAll()
}
