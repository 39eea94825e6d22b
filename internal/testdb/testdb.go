// Package testdb gives each test a database of its own on every backend:
// a SQLite file in the test's temporary directory (SQLite), a schema on the
// machine's PostgreSQL (PostgresSchema, Schema), a key prefix on its Redis
// (Redis) or on its Redis Cluster (RedisCluster), named by
// LATCH_TEST_POSTGRES_URL, LATCH_TEST_REDIS_URL and
// LATCH_TEST_REDIS_CLUSTER_URL, each removed when the test ends. Without the variable a test is skipped,
// saying which variable to set; with LATCH_REQUIRE_BACKENDS set (CI) it
// fails instead, so a backend suite can never pass by not running.
//
// It is a test harness that stays in internal/ rather than beside a user:
// the tests of every backend, of the engine, the API, the console, the
// facade, the binary and the end-to-end suites use it, so that all name
// and clean their databases one way.
package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"
)

// The environment variables this package reads.
const (
	PostgresEnv = "LATCH_TEST_POSTGRES_URL"
	RedisEnv    = "LATCH_TEST_REDIS_URL"
	// RedisClusterEnv names a Redis Cluster by a store URL,
	// redis-cluster://HOST:PORT,HOST:PORT,... (test/rediscluster/start.sh
	// starts one and prints it).
	RedisClusterEnv = "LATCH_TEST_REDIS_CLUSTER_URL"
	RequireEnv      = "LATCH_REQUIRE_BACKENDS"
)

// URL returns the value of env, or skips t (fails it under
// LATCH_REQUIRE_BACKENDS) when it is unset; what names the test's purpose
// in the message ("the soak", "multi-server PostgreSQL test").
func URL(t testing.TB, env, what string) string {
	t.Helper()
	u := os.Getenv(env)
	if u == "" && os.Getenv(RequireEnv) != "" {
		t.Fatalf("%s is set but %s is not: %s must run on this backend here", RequireEnv, env, what)
	}
	if u == "" {
		t.Skipf("SKIP: %s not run on this backend: set %s", what, env)
	}
	return u
}

// Name is prefix followed by 12 random hex digits: a schema or key prefix
// no other test uses.
func Name(prefix string) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return prefix + hex.EncodeToString(b[:])
}

// SQLite returns the path of a SQLite database file no other test uses, in
// t's temporary directory (removed when t ends). The file does not exist yet.
func SQLite(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "latch.db")
}

// PostgresSchema creates an empty schema named prefix+random in the
// database of LATCH_TEST_POSTGRES_URL, drops it (CASCADE) when t ends, and
// returns the database URL with search_path set to it and
// pool_max_conns=10. The schema is not migrated.
func PostgresSchema(t testing.TB, prefix, what string) string {
	t.Helper()
	_, u := Schema(t, prefix, what)
	return WithParams(t, u, map[string]string{"pool_max_conns": "10"})
}

// Schema creates an empty schema named prefix+random in the database of
// LATCH_TEST_POSTGRES_URL and drops it (CASCADE) when t ends. It returns
// the schema's name and the database URL with search_path set to it. The
// schema is not migrated.
func Schema(t testing.TB, prefix, what string) (name, dbURL string) {
	t.Helper()
	base := URL(t, PostgresEnv, what)
	pool := adminPool(t, base)
	schema := Name(prefix)
	ident := pgx.Identifier{schema}.Sanitize()
	if _, err := pool.Exec(context.Background(), "CREATE SCHEMA "+ident); err != nil {
		releasePool(base)
		t.Fatalf("create schema %s in %s: %v", schema, PostgresEnv, err)
	}
	t.Cleanup(func() {
		defer releasePool(base)
		if _, err := pool.Exec(context.Background(), "DROP SCHEMA "+ident+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema, WithParams(t, base, map[string]string{"search_path": schema})
}

// admin holds, per database URL, the small pool that creates and drops the
// tests' schemas (a test binary creates hundreds, and the server's
// connections are shared with every other test binary), and how many
// schemas still need it: the pool is closed when none does, so that it
// leaves no goroutine behind for a leak check.
var admin struct {
	mu    sync.Mutex
	pools map[string]*adminEntry
}

type adminEntry struct {
	pool  *pgxpool.Pool
	users int
}

// adminPool returns the pool of base, counting one more user; releasePool
// gives the use back.
func adminPool(t testing.TB, base string) *pgxpool.Pool {
	t.Helper()
	admin.mu.Lock()
	defer admin.mu.Unlock()
	if e := admin.pools[base]; e != nil {
		e.users++
		return e.pool
	}
	cfg, err := pgxpool.ParseConfig(base)
	if err != nil {
		t.Fatalf("%s: %v", PostgresEnv, err)
	}
	cfg.MaxConns = 2
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("connect to %s: %v", PostgresEnv, err)
	}
	if admin.pools == nil {
		admin.pools = map[string]*adminEntry{}
	}
	admin.pools[base] = &adminEntry{pool: p, users: 1}
	return p
}

func releasePool(base string) {
	admin.mu.Lock()
	defer admin.mu.Unlock()
	if e := admin.pools[base]; e != nil {
		if e.users--; e.users == 0 {
			e.pool.Close()
			delete(admin.pools, base)
		}
	}
}

// RedisNamespace is a key prefix of a test's own on the Redis of
// LATCH_TEST_REDIS_URL or the Redis Cluster of LATCH_TEST_REDIS_CLUSTER_URL.
type RedisNamespace struct {
	// URL is LATCH_TEST_REDIS_URL or LATCH_TEST_REDIS_CLUSTER_URL.
	URL string
	// Prefix is the namespace's key prefix.
	Prefix string
}

// Redis returns a key prefix named prefix+random on the Redis of
// LATCH_TEST_REDIS_URL, checked to answer, and removes every key holding
// the prefix when t ends (SCAN and UNLINK of those keys only: the database
// is shared, so it is never flushed).
func Redis(t testing.TB, prefix, what string) *RedisNamespace {
	t.Helper()
	return redisNamespace(t, RedisEnv, prefix, what)
}

// RedisCluster is Redis on the Redis Cluster of LATCH_TEST_REDIS_CLUSTER_URL:
// the prefix's keys are found and removed on every primary; the cluster is
// never flushed either.
func RedisCluster(t testing.TB, prefix, what string) *RedisNamespace {
	t.Helper()
	return redisNamespace(t, RedisClusterEnv, prefix, what)
}

func redisNamespace(t testing.TB, env, prefix, what string) *RedisNamespace {
	t.Helper()
	ns := &RedisNamespace{URL: URL(t, env, what), Prefix: Name(prefix)}
	rdb := redisClient(t, ns.URL)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("connect to %s: %v", env, err)
	}
	t.Cleanup(func() {
		if _, err := ns.each(t, true); err != nil {
			t.Errorf("remove the keys of prefix %s: %v", ns.Prefix, err)
		}
	})
	return ns
}

// StoreURL is the store URL of the namespace: URL with ?prefix=Prefix.
func (ns *RedisNamespace) StoreURL(t testing.TB) string {
	t.Helper()
	return WithParams(t, ns.URL, map[string]string{"prefix": ns.Prefix})
}

// Keys counts the keys holding the namespace's prefix.
func (ns *RedisNamespace) Keys(t testing.TB) (int, error) {
	t.Helper()
	return ns.each(t, false)
}

// each counts the namespace's keys, removing them when unlink is set.
func (ns *RedisNamespace) each(t testing.TB, unlink bool) (int, error) {
	rdb := redisClient(t, ns.URL)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cc, ok := rdb.(*goredis.ClusterClient)
	if !ok {
		return scanUnlink(ctx, rdb.(*goredis.Client), "*"+ns.Prefix+"*", unlink)
	}
	var mu sync.Mutex
	n := 0
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error {
		k, err := scanUnlink(ctx, c, "*"+ns.Prefix+"*", unlink)
		mu.Lock()
		n += k
		mu.Unlock()
		return err
	})
	return n, err
}

// scanUnlink counts the keys of one server that match pattern, removing
// them when unlink is set: one UNLINK per key, so that keys of different
// slots on a cluster's node never meet in one command.
func scanUnlink(ctx context.Context, rdb *goredis.Client, pattern string, unlink bool) (int, error) {
	n := 0
	var cursor uint64
	for {
		keys, next, err := rdb.Scan(ctx, cursor, pattern, 1000).Result()
		if err != nil {
			return n, err
		}
		if len(keys) > 0 && unlink {
			if _, err := rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
				for _, k := range keys {
					p.Unlink(ctx, k)
				}
				return nil
			}); err != nil {
				return n, err
			}
		}
		n += len(keys)
		if cursor = next; cursor == 0 {
			return n, nil
		}
	}
}

// redisClient is a client of the Redis (redis://) or the Redis Cluster
// (redis-cluster://HOST:PORT,...) of rawURL; only the addresses and the
// credentials of a cluster URL are read.
func redisClient(t testing.TB, rawURL string) goredis.UniversalClient {
	t.Helper()
	if rest, ok := strings.CutPrefix(rawURL, "redis-cluster://"); ok {
		rest, _, _ = strings.Cut(rest, "?")
		rest, _, _ = strings.Cut(rest, "/")
		opt := &goredis.ClusterOptions{}
		if i := strings.LastIndexByte(rest, '@'); i >= 0 {
			u, err := url.Parse("redis://" + rest[:i+1] + "x")
			if err != nil {
				t.Fatalf("%s: %v", RedisClusterEnv, err)
			}
			opt.Username = u.User.Username()
			opt.Password, _ = u.User.Password()
			rest = rest[i+1:]
		}
		opt.Addrs = strings.Split(rest, ",")
		return goredis.NewClusterClient(opt)
	}
	opt, err := goredis.ParseURL(rawURL)
	if err != nil {
		t.Fatalf("%s: %v", RedisEnv, err)
	}
	return goredis.NewClient(opt)
}

// WithParams returns rawURL with the query parameters params set (replacing
// any of the same name).
func WithParams(t testing.TB, rawURL string, params map[string]string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("parse %q: %v", rawURL, err)
	}
	q := u.Query()
	for k, v := range params {
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	return u.String()
}
