package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/latch-run/latch/store"
)

// Wake-ups (store.Notifier).
//
// A change made through this Store closes the Changed channel at once, in
// process, and is announced to every other process on the schema's channel
// with NOTIFY. The NOTIFY is not sent by the transaction that made the
// change: PostgreSQL serialises the commits of notifying transactions on one
// database-wide lock, which would cap submits at one commit at a time.
// Instead one goroutine sends it right after, coalescing: while a NOTIFY is
// on its way, any number of further changes cost one more. A dedicated
// connection LISTENs, and reconnects by itself after a failure; since
// announcements sent while it was away are lost, a reconnect counts as a
// change. Waiters poll as well (store.Notifier), so a lost NOTIFY delays a
// wake-up, never loses work.
const (
	sqlNotify = `SELECT pg_notify($1, $2)`

	// listenRetry bounds the wait between reconnection attempts.
	listenRetryMin = 50 * time.Millisecond
	listenRetryMax = 5 * time.Second
)

// channelName is the NOTIFY channel of a schema: processes on other schemas
// of the same database do not wake each other.
func channelName(schema string) string {
	name := "latch:" + schema
	if len(name) > 63 { // NAMEDATALEN - 1
		sum := sha256.Sum256([]byte(schema))
		name = "latch:" + hex.EncodeToString(sum[:16])
	}
	return name
}

type changes struct {
	pool    *pgxpool.Pool
	channel string
	self    string // payload of our own NOTIFYs, which we need not hear again
	feed    *store.Feed

	mu      sync.Mutex
	changed chan struct{}

	pending chan struct{} // a NOTIFY is owed (capacity 1: coalesces)
	cancel  context.CancelFunc
	done    sync.WaitGroup
}

func startChanges(pool *pgxpool.Pool, connConfig *pgx.ConnConfig, channel string, feed *store.Feed) *changes {
	ctx, cancel := context.WithCancel(context.Background())
	c := &changes{
		pool:    pool,
		channel: channel,
		self:    uuid.NewString(),
		feed:    feed,
		changed: make(chan struct{}),
		pending: make(chan struct{}, 1),
		cancel:  cancel,
	}
	c.done.Go(func() { c.notifyLoop(ctx) })
	first := make(chan struct{})
	c.done.Go(func() { c.listenLoop(ctx, connConfig.Copy(), first) })
	// Changed promises the next change after the call: start listening
	// before the Store is handed out (a failure here is retried in the
	// background; waiters poll meanwhile).
	<-first
	return c
}

func (c *changes) stop() {
	c.cancel()
	c.done.Wait()
}

func (c *changes) current() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// wake closes the current channel; the next Changed call gets a new one.
func (c *changes) wake() {
	c.mu.Lock()
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// remote reports a change of another process, or a possibly lost one:
// nobody here knows which executions it concerned.
func (c *changes) remote() {
	c.wake()
	c.feed.PublishAll()
}

// announce reports a committed change: local waiters wake now, other
// processes when the NOTIFY arrives.
func (c *changes) announce() {
	c.wake()
	select {
	case c.pending <- struct{}{}:
	default: // one is owed already; it will carry this change too
	}
}

func (c *changes) notifyLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.pending:
		}
		// A failure here (the database is down) is not retried: the
		// listeners reconnect, which wakes them, and everyone polls.
		nctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, _ = c.pool.Exec(nctx, sqlNotify, c.channel, c.self)
		cancel()
	}
}

func (c *changes) listenLoop(ctx context.Context, cfg *pgx.ConnConfig, first chan struct{}) {
	wait := listenRetryMin
	for attempt := 0; ctx.Err() == nil; attempt++ {
		connected := c.listen(ctx, cfg, attempt > 0, first)
		if attempt == 0 {
			select {
			case <-first:
			default:
				close(first) // the first attempt failed
			}
		}
		if ctx.Err() != nil {
			return
		}
		if connected {
			wait = listenRetryMin
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, listenRetryMax)
	}
}

// listen connects, LISTENs and wakes waiters on every notification from
// another process until the connection fails or ctx ends. It reports
// whether it got as far as listening. listening is closed once it is, the
// first time.
func (c *changes) listen(ctx context.Context, cfg *pgx.ConnConfig, again bool, listening chan struct{}) bool {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return false
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{c.channel}.Sanitize()); err != nil {
		return false
	}
	if again {
		// Whatever was announced while no one listened is lost: wake
		// everyone to look.
		c.remote()
	} else {
		close(listening)
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			c.remote()
			return true
		}
		if n.Payload != c.self {
			c.remote()
		}
	}
}
