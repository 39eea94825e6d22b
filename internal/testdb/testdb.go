// Package testdb gives tests a database of their own on the machine's
// PostgreSQL or Redis, named by LATCH_TEST_POSTGRES_URL and
// LATCH_TEST_REDIS_URL. Without the variable a test is skipped, saying
// which variable to set; with LATCH_REQUIRE_BACKENDS set (CI) it fails
// instead, so a backend suite can never pass by not running.
package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// The environment variables this package reads.
const (
	PostgresEnv = "LATCH_TEST_POSTGRES_URL"
	RedisEnv    = "LATCH_TEST_REDIS_URL"
	RequireEnv  = "LATCH_REQUIRE_BACKENDS"
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

// PostgresSchema creates an empty schema named prefix+random in the
// database of LATCH_TEST_POSTGRES_URL, drops it (CASCADE) when t ends, and
// returns the database URL with search_path set to it and
// pool_max_conns=10. The schema is not migrated.
func PostgresSchema(t testing.TB, prefix, what string) string {
	t.Helper()
	base := URL(t, PostgresEnv, what)
	ctx := context.Background()
	schema := Name(prefix)
	exec := func(sql string) error {
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := exec("CREATE SCHEMA " + pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatalf("create schema %s in %s: %v", schema, PostgresEnv, err)
	}
	t.Cleanup(func() {
		if err := exec("DROP SCHEMA " + pgx.Identifier{schema}.Sanitize() + " CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return WithParams(t, base, map[string]string{"search_path": schema, "pool_max_conns": "10"})
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
