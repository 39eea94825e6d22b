package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
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
type notifier struct {
	ps   *goredis.PubSub
	quit chan struct{}
	done chan struct{}

	mu    sync.Mutex
	acked uint64
	seen  uint64
	waits []wait
}

type wait struct {
	mark uint64
	ch   chan struct{}
}

// startNotifier subscribes to channel and returns once the subscription is
// confirmed, so that no change after Open is missed.
func startNotifier(ctx context.Context, rdb *goredis.Client, channel string) (*notifier, error) {
	ps := rdb.Subscribe(ctx, channel)
	if _, err := ps.ReceiveTimeout(ctx, 10*time.Second); err != nil {
		ps.Close()
		return nil, fmt.Errorf("redis: subscribe %s: %w", channel, err)
	}
	n := &notifier{ps: ps, quit: make(chan struct{}), done: make(chan struct{})}
	go n.loop()
	return n, nil
}

// healthEvery is how long the subscriber waits in silence before it pings,
// so that a dead connection is noticed and replaced.
const healthEvery = 15 * time.Second

func (n *notifier) loop() {
	defer close(n.done)
	ctx := context.Background()
	backoff := 10 * time.Millisecond
	for {
		msg, err := n.ps.ReceiveTimeout(ctx, healthEvery)
		select {
		case <-n.quit:
			return
		default:
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				_ = n.ps.Ping(ctx)
				continue
			}
			// The connection failed; go-redis reconnects and resubscribes
			// on the next receive. Changes may be lost meanwhile.
			n.wakeAll()
			select {
			case <-n.quit:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 10 * time.Millisecond
		switch m := msg.(type) {
		case *goredis.Message:
			if v, err := strconv.ParseUint(m.Payload, 10, 64); err == nil {
				n.receive(v)
			} else {
				n.wakeAll()
			}
		case *goredis.Subscription:
			n.reset()
		}
	}
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
	n.mu.Lock()
	n.acked = max(n.acked, uint64(v))
	n.mu.Unlock()
}

func (n *notifier) receive(v uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
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

func (n *notifier) wakeAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, w := range n.waits {
		close(w.ch)
	}
	n.waits = nil
}

func (n *notifier) reset() {
	n.mu.Lock()
	n.acked, n.seen = 0, 0
	n.mu.Unlock()
	n.wakeAll()
}
