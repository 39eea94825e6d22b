package postgres

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/latch-run/latch/store"
)

// Store is the PostgreSQL implementation of store.Store.
type Store struct {
	pool    *pgxpool.Pool
	schema  string // the schema latch's tables live in (current_schema())
	channel string // the LISTEN/NOTIFY channel of that schema

	changes *changes   // store.Notifier: local wake-ups, NOTIFY and LISTEN
	feed    store.Feed // store.ChangeFeed: which executions changed
	group   *grouper   // group commit of the hot single statements
	claims  *grouper   // the same for claims, beside group (group.go)
	rides   rides      // claims parked to ride with the next group of admissions (ride.go)

	// afterClaim, for tests only (nil otherwise): called with what a Claim
	// leased once it committed, before its journals are read.
	afterClaim func(ids []string)
	// retried, for tests only (nil otherwise): called with each error
	// after which write runs its operation again (a deadlock, a
	// serialization failure).
	retried func(err error)

	closeOnce sync.Once
}

var (
	_ store.Store      = (*Store)(nil)
	_ store.Notifier   = (*Store)(nil)
	_ store.ChangeFeed = (*Store)(nil)
)

// DefaultMaxConns is the pool size when the URL sets no pool_max_conns.
const DefaultMaxConns = 20

// Option configures Open.
type Option func(*options)

type options struct {
	migrate   bool
	configure []func(*pgxpool.Config)
}

// WithMigrate makes Open apply every pending schema migration before it
// checks the schema, as `latch migrate up` would (serialised with other
// migrators by an advisory lock). Meant for tests and embedded use; servers
// are migrated by an operator, so that a new build never changes a shared
// schema by surprise.
func WithMigrate() Option {
	return func(o *options) { o.migrate = true }
}

// WithConfig lets the caller adjust the pool configuration parsed from the
// URL before the pool is created: its size, or RuntimeParams such as
// search_path. The notification listener connects with the same ConnConfig.
func WithConfig(f func(*pgxpool.Config)) Option {
	return func(o *options) { o.configure = append(o.configure, f) }
}

// Open connects to the database at url (a postgres:// or postgresql:// URL,
// or a key=value DSN, as pgx accepts them) and checks that its schema is the
// one this build knows. A database without the latch schema, or with an
// older or newer one, is refused with an error that names the command that
// fixes it; WithMigrate migrates instead.
//
// Pool parameters may be given in the URL (pool_max_conns, ...); without
// pool_max_conns the pool holds up to DefaultMaxConns connections. Unless
// the URL sets them, connections run with default_transaction_isolation =
// 'read committed' (the concurrency design relies on it), synchronous_commit
// = on (I8), plan_cache_mode = force_generic_plan and jit = off (doc.go).
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	cfg, err := poolConfig(url)
	if err != nil {
		return nil, err
	}
	for _, f := range o.configure {
		f(cfg)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	s := &Store{pool: pool}
	if err := s.open(ctx, o, cfg.ConnConfig); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) open(ctx context.Context, o options, connConfig *pgx.ConnConfig) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: connect: %w", err)
	}
	defer conn.Release()
	if o.migrate {
		if _, err := migrate(ctx, conn.Conn(), "up"); err != nil {
			return err
		}
	}
	if err := checkSchema(ctx, conn.Conn()); err != nil {
		return err
	}
	if err := conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&s.schema); err != nil {
		return fmt.Errorf("postgres: current schema: %w", err)
	}
	s.channel = channelName(s.schema)
	s.changes = startChanges(s.pool, connConfig, s.channel, &s.feed)
	s.group = startGrouper(s.pool, s.takeRides)
	s.claims = startGrouper(s.pool, nil)
	return nil
}

// poolConfig parses url and applies latch's defaults.
func poolConfig(rawURL string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w: %w", store.ErrInvalid, err)
	}
	if !strings.Contains(rawURL, "pool_max_conns") {
		cfg.MaxConns = max(DefaultMaxConns, int32(2*runtime.GOMAXPROCS(0)))
	}
	for name, value := range map[string]string{
		"default_transaction_isolation": "read committed",     // the concurrency design's level (doc.go)
		"synchronous_commit":            "on",                 // I8: acknowledged means on disk
		"plan_cache_mode":               "force_generic_plan", // fixed, indexed statements
		"jit":                           "off",                // short statements: compiling costs more than it saves
		"application_name":              "latch",
	} {
		if _, ok := cfg.ConnConfig.RuntimeParams[name]; !ok {
			cfg.ConnConfig.RuntimeParams[name] = value
		}
	}
	return cfg, nil
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("postgres: ping: %w", err)
	}
	return nil
}

// Close stops the notification listener and closes the pool. Operations
// after Close fail.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if s.group != nil {
			s.group.close()
			s.claims.close()
		}
		if s.changes != nil {
			s.changes.stop()
		}
		s.pool.Close()
	})
	return nil
}

// Changed implements store.Notifier: the channel is closed at the next
// change made through this Store, or announced by another process sharing
// the schema (LISTEN/NOTIFY), or when the listener reconnects after an
// outage in which announcements may have been lost.
func (s *Store) Changed() <-chan struct{} {
	return s.changes.current()
}

// WatchChanges implements store.ChangeFeed. A change made through this
// Store is reported with its ids; one announced by another process (the
// NOTIFY carries no ids), or a listener reconnect, is reported as
// unattributed.
func (s *Store) WatchChanges(fn func(store.Change)) (stop func()) { return s.feed.WatchChanges(fn) }

// maxAttempts bounds how often an operation is run again after a deadlock
// or a serialization failure (both are rare by design; see doc.go).
const maxAttempts = 8

// opTimeout bounds an operation once it has started (see detach).
const opTimeout = time.Minute

// detach returns the context an operation runs with once it has a
// connection: ctx's values, not its cancellation. A caller that gives up
// while waiting for a connection changes nothing; once a statement is on its
// way, the operation runs to its end (commit or rollback) before the caller
// gets an answer, as with the SQLite store. Cancelling a statement midway
// would not undo it: the server may still commit after the client has gone,
// and a caller that retried or read at once would race its own ghost.
func detach(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
}

// write runs a single-statement write operation on one connection, again
// after a deadlock or serialization failure (the statement was rolled back).
func (s *Store) write(ctx context.Context, fn func(ctx context.Context, c *pgxpool.Conn) error) error {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	wctx, cancel := detach(ctx)
	defer cancel()
	for attempt := 1; ; attempt++ {
		err := fn(wctx, c)
		if err != nil && attempt < maxAttempts && retryable(err) {
			if s.retried != nil {
				s.retried(err)
			}
			backoff(wctx, attempt)
			continue
		}
		return err
	}
}

// inTx runs fn in one READ COMMITTED transaction and commits it. A deadlock
// or serialization failure rolls back and runs fn again from the start; any
// other error rolls back and is returned. changed reports whether fn changed
// executions, which wakes waiters (store.Notifier) after the commit. fn runs
// with a detached context (see detach).
func (s *Store) inTx(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx) (changed bool, err error)) error {
	var changed bool
	err := s.write(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		var err error
		changed, err = tryTx(ctx, c, fn)
		return err
	})
	if err != nil {
		return interpretError(err)
	}
	if changed {
		s.changes.announce()
	}
	return nil
}

func tryTx(ctx context.Context, c *pgxpool.Conn, fn func(ctx context.Context, tx pgx.Tx) (bool, error)) (changed bool, err error) {
	tx, err := c.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return false, err
	}
	defer func() {
		if err != nil {
			// A rollback error means the connection is gone, and with it the
			// transaction: nothing to add to err.
			_ = tx.Rollback(ctx)
		}
	}()
	changed, err = fn(ctx, tx)
	if err != nil {
		return false, err
	}
	return changed, tx.Commit(ctx)
}

// backoff waits a little before attempt+1, so that the transactions that
// collided do not collide again at once.
func backoff(ctx context.Context, attempt int) {
	t := time.NewTimer(time.Duration(attempt*attempt) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// now returns the operation's time (store.Now) truncated to the
// microsecond PostgreSQL stores, so that what an operation answers equals
// what a later read returns.
func now(t time.Time) time.Time { return micro(store.Now(t)) }

// micro truncates a derived time (now plus a duration) like now.
func micro(t time.Time) time.Time { return t.Truncate(time.Microsecond).UTC() }
