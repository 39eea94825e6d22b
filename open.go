package latch

import (
	"context"
	"fmt"
	"strings"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/sqlite"
)

// Open opens the store named by storeURL and returns a Client that owns it
// (Close closes it):
//
//	sqlite:path, sqlite://path   the SQLite file at path (sqlite:///abs/path
//	                             for an absolute path), created if missing
//	path.db                      the same, for a bare path ending in .db,
//	                             .sqlite or .sqlite3
//	postgres://, postgresql://,  recognised, not supported by this version:
//	redis://, rediss://          ErrUnsupportedStore
func Open(ctx context.Context, storeURL string) (*Client, error) {
	backend, target, err := parseStoreURL(storeURL)
	if err != nil {
		return nil, err
	}
	switch backend {
	case "sqlite":
		st, err := sqlite.Open(ctx, target)
		if err != nil {
			return nil, fmt.Errorf("latch: open %s: %w", storeURL, err)
		}
		c := NewClient(st)
		c.owned = true
		return c, nil
	default:
		return nil, fmt.Errorf("latch: %s: %w", backend, ErrUnsupportedStore)
	}
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
