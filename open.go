package latch

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/postgres"
	"github.com/latch-run/latch/store/redis"
	"github.com/latch-run/latch/store/sqlite"
)

// Open opens the store named by storeURL and returns a Client that owns it
// (Close closes it):
//
//	sqlite:path, sqlite://path   the SQLite file at path (sqlite:///abs/path
//	                             for an absolute path), created and migrated
//	                             if missing
//	path.db                      the same, for a bare path ending in .db,
//	                             .sqlite or .sqlite3
//	postgres://, postgresql://   the PostgreSQL database at the URL (pgx
//	                             syntax: pool_max_conns, search_path, ...);
//	                             its schema must be migrated first
//	                             (`latch migrate up --store URL`)
//	redis://, rediss://          the Redis server at the URL (go-redis
//	                             syntax); ?prefix=NAME namespaces the keys
//	                             (default "latch")
//	redis-cluster://H:P,H:P,...  the Redis Cluster of which some nodes are
//	                             listed (rediss-cluster:// for TLS), with
//	                             go-redis's cluster options and ?prefix=;
//	                             each tenant in a slot of its own
//	                             (?layout=single: the whole namespace in
//	                             one slot, as before the tenant router)
func Open(ctx context.Context, storeURL string) (*Client, error) {
	b, target, err := parseStoreURL(storeURL)
	if err != nil {
		return nil, err
	}
	st, err := b.open(ctx, target)
	if err != nil {
		return nil, fmt.Errorf("latch: open %s: %w", redactURL(storeURL), err)
	}
	c := NewClient(st)
	c.owned = true
	return c, nil
}

// backend is what the facade knows of one kind of store: how to open it
// and how to migrate its schema (Migrate). What a store can do once open
// it says itself, through store's optional interfaces (store.Sharer,
// store.DurabilityChecker).
type backend struct {
	open    func(ctx context.Context, target string) (store.Store, error)
	migrate func(ctx context.Context, storeURL, target, op string) (*Migration, error)
	// migrateFirst: Open refuses a schema Migrate has not brought up to
	// date (NeedsMigrate).
	migrateFirst bool
}

var (
	sqliteBackend = &backend{
		open:    func(ctx context.Context, path string) (store.Store, error) { return sqlite.Open(ctx, path) },
		migrate: migrateSQLite,
	}
	postgresBackend = &backend{
		open:         func(ctx context.Context, url string) (store.Store, error) { return postgres.Open(ctx, url) },
		migrate:      migratePostgres,
		migrateFirst: true,
	}
	redisBackend = &backend{
		open:    func(ctx context.Context, url string) (store.Store, error) { return redis.OpenStore(ctx, url) },
		migrate: migrateRedis,
	}
)

// redactURL hides the password of a store URL in error messages.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable store URL)"
	}
	return u.Redacted()
}

// parseStoreURL finds a store URL's backend and what the backend opens.
func parseStoreURL(u string) (b *backend, target string, err error) {
	u = strings.TrimSpace(u)
	lower := strings.ToLower(u)
	switch {
	case strings.HasPrefix(lower, "sqlite://"):
		b, target = sqliteBackend, u[len("sqlite://"):]
	case strings.HasPrefix(lower, "sqlite:"):
		b, target = sqliteBackend, u[len("sqlite:"):]
	case strings.HasPrefix(lower, "postgres://"), strings.HasPrefix(lower, "postgresql://"):
		return postgresBackend, u, nil
	case strings.HasPrefix(lower, "redis://"), strings.HasPrefix(lower, "rediss://"),
		strings.HasPrefix(lower, "redis-cluster://"), strings.HasPrefix(lower, "rediss-cluster://"):
		return redisBackend, u, nil
	case !strings.Contains(u, "://") &&
		(strings.HasSuffix(lower, ".db") || strings.HasSuffix(lower, ".sqlite") || strings.HasSuffix(lower, ".sqlite3")):
		b, target = sqliteBackend, u
	default:
		return nil, "", fmt.Errorf("latch: %w: store URL %q: want sqlite:PATH, postgres://HOST/DB, redis://HOST or redis-cluster://HOST:PORT,HOST:PORT",
			ErrInvalid, u)
	}
	if target == "" {
		return nil, "", fmt.Errorf("latch: %w: store URL %q has no database path", ErrInvalid, u)
	}
	return b, target, nil
}

// NewClient returns a Client on an open store. The caller keeps ownership:
// the Client's Close does not close st.
func NewClient(st store.Store) *Client {
	return &Client{st: st}
}
