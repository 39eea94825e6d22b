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
func Open(ctx context.Context, storeURL string) (*Client, error) {
	backend, target, err := parseStoreURL(storeURL)
	if err != nil {
		return nil, err
	}
	var st store.Store
	switch backend {
	case "sqlite":
		st, err = sqlite.Open(ctx, target)
	case "postgres":
		st, err = postgres.Open(ctx, target)
	case "redis":
		st, err = redis.Open(ctx, target)
	}
	if err != nil {
		return nil, fmt.Errorf("latch: open %s: %w", redactURL(storeURL), err)
	}
	c := NewClient(st)
	c.owned = true
	return c, nil
}

// redactURL hides the password of a store URL in error messages.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable store URL)"
	}
	return u.Redacted()
}

// parseStoreURL splits a store URL into its backend and what the backend
// opens.
func parseStoreURL(u string) (backend, target string, err error) {
	u = strings.TrimSpace(u)
	lower := strings.ToLower(u)
	switch {
	case strings.HasPrefix(lower, "sqlite://"):
		backend, target = "sqlite", u[len("sqlite://"):]
	case strings.HasPrefix(lower, "sqlite:"):
		backend, target = "sqlite", u[len("sqlite:"):]
	case strings.HasPrefix(lower, "postgres://"), strings.HasPrefix(lower, "postgresql://"):
		return "postgres", u, nil
	case strings.HasPrefix(lower, "redis://"), strings.HasPrefix(lower, "rediss://"):
		return "redis", u, nil
	case !strings.Contains(u, "://") &&
		(strings.HasSuffix(lower, ".db") || strings.HasSuffix(lower, ".sqlite") || strings.HasSuffix(lower, ".sqlite3")):
		backend, target = "sqlite", u
	default:
		return "", "", fmt.Errorf("latch: %w: store URL %q: want sqlite:PATH, postgres://HOST/DB or redis://HOST",
			ErrInvalid, u)
	}
	if target == "" {
		return "", "", fmt.Errorf("latch: %w: store URL %q has no database path", ErrInvalid, u)
	}
	return backend, target, nil
}

// NewClient returns a Client on an open store. The caller keeps ownership:
// the Client's Close does not close st.
func NewClient(st store.Store) *Client {
	return &Client{st: st}
}
