package redis

import (
	"context"
	"errors"
	"net"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// healthEvery is how long the subscriber waits in silence before it pings,
// so that a dead connection is noticed and replaced.
const healthEvery = 15 * time.Second

// listener is what a subscriber loop (listen) reports to: a change
// counter's value published on a channel, a message it cannot read or a
// failed connection (every waiter must wake: changes may have been
// missed), and a (re)subscription (what was known before may be stale).
type listener struct {
	message func(channel string, version uint64)
	wakeAll func()
	reset   func()
	lost    func() // nil: nothing more to do when the connection fails
}

// listen receives ps's messages until quit is closed, then closes done.
// When the connection fails, go-redis reconnects and resubscribes on the
// next receive; listen wakes every waiter and backs off meanwhile.
func listen(ps *goredis.PubSub, quit <-chan struct{}, done chan<- struct{}, l listener) {
	defer close(done)
	ctx := context.Background()
	backoff := 10 * time.Millisecond
	for {
		msg, err := ps.ReceiveTimeout(ctx, healthEvery)
		select {
		case <-quit:
			return
		default:
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				_ = ps.Ping(ctx)
				continue
			}
			l.wakeAll()
			if l.lost != nil {
				l.lost()
			}
			select {
			case <-quit:
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
				l.message(m.Channel, v)
			} else {
				l.wakeAll()
			}
		case *goredis.Subscription:
			l.reset()
		}
	}
}
