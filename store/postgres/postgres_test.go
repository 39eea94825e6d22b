package postgres_test

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/postgres"
	"github.com/latch-run/latch/store/storetest"
)

// The suites run against the database named by LATCH_TEST_POSTGRES_URL, for
// example postgres://postgres@127.0.0.1:5432/test?sslmode=disable. Every test
// gets a schema of its own (created, migrated and dropped by the test), so
// all run in parallel and none touches another's tables.
const envURL = testdb.PostgresEnv

// openStores bounds how many test stores are open at once: each holds a
// small pool plus a listening connection, and the server has a connection
// limit (max_connections, 100 by default) that other clients share.
var openStores = make(chan struct{}, 12)

// testPoolSize is each test store's pool size.
const testPoolSize = 4

// databaseURL returns the test database's URL, or skips t, loudly, without
// one (fails instead when LATCH_REQUIRE_BACKENDS is set, as CI sets it).
func databaseURL(t testing.TB) string {
	t.Helper()
	return testdb.URL(t, envURL, "the PostgreSQL store suite")
}

// admin is one shared connection pool for the tests' own queries.
var admin struct {
	once sync.Once
	pool *pgxpool.Pool
	err  error
}

func adminPool(t testing.TB, dbURL string) *pgxpool.Pool {
	t.Helper()
	admin.once.Do(func() {
		cfg, err := pgxpool.ParseConfig(dbURL)
		if err != nil {
			admin.err = err
			return
		}
		cfg.MaxConns = 2
		admin.pool, admin.err = pgxpool.NewWithConfig(context.Background(), cfg)
	})
	if admin.err != nil {
		t.Fatalf("connect to %s: %v", envURL, admin.err)
	}
	return admin.pool
}

// newSchema creates an empty schema for t (testdb.Schema) and drops it when
// t ends. It returns the schema's name and the database URL with
// search_path set to it.
func newSchema(t testing.TB) (string, string) {
	t.Helper()
	adminPool(t, databaseURL(t)) // the tests' own queries use admin.pool
	return testdb.Schema(t, "latch_test_", "the PostgreSQL store suite")
}

// openSchema opens a migrated store on schema, holding one of openStores
// until t ends. The caller closes the store.
func openSchema(t testing.TB, dbURL, schema string, poolSize int32) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), dbURL, postgres.WithMigrate(),
		postgres.WithConfig(func(c *pgxpool.Config) {
			c.MaxConns = poolSize
			c.ConnConfig.RuntimeParams["search_path"] = schema
		}))
	if err != nil {
		t.Fatalf("postgres.Open: %v", err)
	}
	return s
}

// acquireSlot waits for one of openStores and gives it back when t ends.
func acquireSlot(t testing.TB) {
	openStores <- struct{}{}
	t.Cleanup(func() { <-openStores })
}

// newStore is the fresh, empty store of one test, for the conformance suite
// (TestStore) and the linearizability and property tests (lincheck_test.go):
// a migrated store with a pool of poolSize connections on a schema of its
// own, closed, then dropped, when t ends; it holds one of openStores until
// then.
func newStore(t *testing.T, poolSize int32) store.Store {
	t.Helper()
	acquireSlot(t)
	schema, _ := newSchema(t)
	s := openSchema(t, databaseURL(t), schema, poolSize)
	t.Cleanup(func() { s.Close() })
	return s
}

// TestStore runs the shared conformance suite: TestStore/postgres/<Family>/<Case>.
func TestStore(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		databaseURL(t)
		storetest.Run(t, func(t *testing.T) store.Store { return newStore(t, testPoolSize) })
	})
}

// TestStoreReopen runs the suite's durability checks (I8): a schema outlives
// the stores opened on it.
func TestStoreReopen(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		databaseURL(t)
		storetest.RunReopen(t, func(t *testing.T) storetest.Reopen {
			acquireSlot(t)
			schema, _ := newSchema(t)
			return func(t *testing.T) store.Store {
				return openSchema(t, databaseURL(t), schema, testPoolSize)
			}
		})
	})
}

func TestMigrateRoundTrip(t *testing.T) {
	t.Parallel()
	acquireSlot(t)
	ctx := t.Context()
	_, u := newSchema(t)
	latest := postgres.SchemaVersion()
	st, err := postgres.Migrate(ctx, u, "status")
	if err != nil || st.Version != 0 || st.Latest != latest {
		t.Fatalf("status of an empty schema: %+v, %v; want version 0 of %d", st, err, latest)
	}
	for round := range 2 {
		st, err = postgres.Migrate(ctx, u, "up")
		if err != nil || st.Version != latest || len(st.Ran) != latest {
			t.Fatalf("round %d: up: %+v, %v; want version %d, %d ran", round, st, err, latest, latest)
		}
		s, err := postgres.Open(ctx, u)
		if err != nil {
			t.Fatalf("round %d: Open after up: %v", round, err)
		}
		if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme"}); err != nil {
			t.Fatalf("round %d: CreateTenant: %v", round, err)
		}
		s.Close()
		if st, err = postgres.Migrate(ctx, u, "up"); err != nil || len(st.Ran) != 0 {
			t.Fatalf("round %d: second up: %+v, %v; want nothing to run", round, st, err)
		}
		for v := latest; v > 0; v-- {
			st, err = postgres.Migrate(ctx, u, "down")
			if err != nil || st.Version != v-1 {
				t.Fatalf("round %d: down from %d: %+v, %v", round, v, st, err)
			}
		}
		// Down leaves nothing of latch's behind but its bookkeeping table.
		var tables []string
		rows, err := admin.pool.Query(ctx, `SELECT table_name FROM information_schema.tables
			WHERE table_schema = $1 AND table_name <> 'latch_migrations' ORDER BY 1`, schemaOf(t, u))
		if err == nil {
			tables, err = pgx.CollectRows(rows, pgx.RowTo[string])
		}
		if err != nil || len(tables) != 0 {
			t.Fatalf("round %d: after down: tables %v, %v", round, tables, err)
		}
	}
}

func schemaOf(t *testing.T, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return p.Query().Get("search_path")
}

func TestOpenRefusesUnknownSchema(t *testing.T) {
	t.Parallel()
	acquireSlot(t)
	ctx := t.Context()
	schema, u := newSchema(t)
	wantRefusal := func(what, hint string) {
		t.Helper()
		s, err := postgres.Open(ctx, u)
		if err == nil {
			s.Close()
			t.Fatalf("Open accepted %s", what)
		}
		if !strings.Contains(err.Error(), hint) {
			t.Errorf("Open refused %s with %q, which does not say %q", what, err, hint)
		}
	}
	wantRefusal("a database without the latch schema", "latch migrate up --store URL")

	if _, err := postgres.Migrate(ctx, u, "up"); err != nil {
		t.Fatal(err)
	}
	s, err := postgres.Open(ctx, u)
	if err != nil {
		t.Fatalf("Open after migrate up: %v", err)
	}
	s.Close()

	newer := postgres.SchemaVersion() + 1
	if _, err := admin.pool.Exec(ctx, `INSERT INTO `+pgx.Identifier{schema, "latch_migrations"}.Sanitize()+
		` (version, name) VALUES ($1, 'from_the_future')`, newer); err != nil {
		t.Fatal(err)
	}
	wantRefusal("a schema newer than it knows", "upgrade latch")
	if _, err := postgres.Migrate(ctx, u, "up"); err == nil {
		t.Error("migrate up accepted a schema newer than it knows")
	}
	if _, err := admin.pool.Exec(ctx, `DELETE FROM `+pgx.Identifier{schema, "latch_migrations"}.Sanitize()+
		` WHERE version >= $1`, postgres.SchemaVersion()); err != nil {
		t.Fatal(err)
	}
	if postgres.SchemaVersion() > 1 {
		wantRefusal("an older schema", "latch migrate up --store URL")
	}
}

// TestMigrateConcurrently starts several migrators on one empty schema at
// once, as servers started together would: each migration runs once.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	acquireSlot(t)
	ctx := t.Context()
	schema, u := newSchema(t)
	const n = 4
	errs := make([]error, n)
	ran := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			st, err := postgres.Migrate(ctx, u, "up")
			errs[i] = err
			if st != nil {
				ran[i] = len(st.Ran)
			}
		})
	}
	wg.Wait()
	total := 0
	for i := range n {
		if errs[i] != nil {
			t.Errorf("migrator %d: %v", i, errs[i])
		}
		total += ran[i]
	}
	if total != postgres.SchemaVersion() {
		t.Errorf("the migrators ran %d migrations between them, want %d", total, postgres.SchemaVersion())
	}
	var rows int
	if err := admin.pool.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema, "latch_migrations"}.Sanitize()).Scan(&rows); err != nil || rows != postgres.SchemaVersion() {
		t.Errorf("latch_migrations has %d rows (%v), want %d", rows, err, postgres.SchemaVersion())
	}
}

// TestNotifyAcrossStores checks the wake-ups between processes: a change
// made through one Store wakes the waiters of another on the same schema
// (LISTEN/NOTIFY), and the listener comes back by itself after its
// connection is killed, waking its waiters since it may have missed news.
func TestNotifyAcrossStores(t *testing.T) {
	t.Parallel()
	acquireSlot(t)
	ctx := t.Context()
	schema, _ := newSchema(t)
	a := openSchema(t, databaseURL(t), schema, 2)
	defer a.Close()
	b := openSchema(t, databaseURL(t), schema, 2)
	defer b.Close()
	if _, err := a.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	wake := func(what string, ch <-chan struct{}) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("no wake-up within 10s of %s", what)
		}
	}
	submit := func() {
		t.Helper()
		if _, err := a.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: []store.Submission{{Kind: "echo"}}}); err != nil {
			t.Fatal(err)
		}
	}
	ch := b.Changed()
	submit()
	wake("a submit through the other store", ch)

	// Kill b's listening connection: b reconnects, and says so.
	ch = b.Changed()
	tag, err := admin.pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE query LIKE 'LISTEN %' AND query LIKE '%' || $1 || '%'`, schema)
	if err != nil || tag.RowsAffected() < 2 {
		t.Fatalf("terminating the listeners: %v (%d)", err, tag.RowsAffected())
	}
	wake("the listener's connection was killed", ch)
	// Once listening again, b hears a's changes again. The reconnect takes
	// a moment: submit until b wakes.
	deadline := time.Now().Add(10 * time.Second)
	for {
		ch = b.Changed()
		submit()
		select {
		case <-ch:
			return
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("b no longer hears a's changes after its listener was killed")
		}
	}
}

// TestOpenSessionDefaults checks the settings Open gives every connection
// unless the URL sets them (postgres.go, doc.go), and that a URL's own value
// wins.
func TestOpenSessionDefaults(t *testing.T) {
	t.Parallel()
	acquireSlot(t)
	ctx := t.Context()
	_, u := newSchema(t)
	show := func(s *postgres.Store, name string) string {
		t.Helper()
		var v string
		if err := postgres.PoolOf(s).QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v); err != nil {
			t.Fatalf("current_setting(%s): %v", name, err)
		}
		return v
	}
	s, err := postgres.Open(ctx, u, postgres.WithMigrate())
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"default_transaction_isolation": "read committed",
		"synchronous_commit":            "on",
		"plan_cache_mode":               "force_generic_plan",
		"jit":                           "off",
	} {
		if got := show(s, name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	s.Close()

	s, err = postgres.Open(ctx, u+"&jit=on")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := show(s, "jit"); got != "on" {
		t.Errorf("with jit=on in the URL, jit = %q", got)
	}
}

// openMigrated migrates the schema of u up and opens a store on it: the
// start of a test of a migration down (and its end, up again). The caller
// closes the store, before it migrates the schema down.
func openMigrated(t testing.TB, u string) *postgres.Store {
	t.Helper()
	if _, err := postgres.Migrate(t.Context(), u, "up"); err != nil {
		t.Fatal(err)
	}
	s, err := postgres.Open(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
