package redis_test

import (
	"context"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/redis"
	"github.com/latch-run/latch/store/storetest"
)

// redisURL returns LATCH_TEST_REDIS_URL, or skips t loudly when it is unset
// (fails instead when LATCH_REQUIRE_BACKENDS is set, as CI sets it).
func redisURL(t testing.TB) string {
	t.Helper()
	return testdb.URL(t, testdb.RedisEnv, "the Redis store suite")
}

// newPrefix returns a key prefix no other test uses on the Redis at url
// (LATCH_TEST_REDIS_URL) and arranges for every key under it to be deleted
// when t ends (testdb.Redis: the database is shared, so it is never
// flushed).
func newPrefix(t testing.TB, url string) string {
	t.Helper()
	ns := testdb.Redis(t, "latchtest-", "the Redis store suite")
	if ns.URL != url {
		t.Fatalf("newPrefix on %s, but the test Redis is %s", url, ns.URL)
	}
	return ns.Prefix
}

func open(t testing.TB, url, prefix string) *redis.Store {
	t.Helper()
	s, err := redis.Open(context.Background(), url, redis.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newStore is the fresh, empty store of one test, for the conformance suite
// (TestStore) and the linearizability and property tests (lincheck_test.go):
// a Store on a key prefix of its own, whose keys are deleted when t ends.
func newStore(t *testing.T) store.Store {
	t.Helper()
	url := redisURL(t)
	s := open(t, url, newPrefix(t, url))
	t.Cleanup(func() { s.Close() })
	// Runs first: once the test is over, the namespace's indexes and
	// counters must agree with its executions.
	t.Cleanup(func() { redis.CheckConsistency(t, s) })
	return s
}

// TestStore runs the shared conformance suite: TestStore/redis/<Family>/<Case>,
// and on a Redis Cluster TestStore/redis-cluster/<Family>/<Case>.
func TestStore(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		redisURL(t)
		storetest.Run(t, newStore)
	})
	t.Run("redis-cluster", func(t *testing.T) {
		clusterURL(t)
		storetest.Run(t, newClusterStore)
	})
}

// TestStoreScripts runs the conformance suite with the scripts run by
// EVALSHA, as on a server without Redis functions:
// TestStoreScripts/redis/<Family>/<Case>.
func TestStoreScripts(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		url := redisURL(t)
		storetest.Run(t, func(t *testing.T) store.Store {
			s, err := redis.Open(context.Background(), url, redis.WithPrefix(newPrefix(t, url)), redis.WithScripts())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			t.Cleanup(func() { redis.CheckConsistency(t, s) })
			return s
		})
	})
}

// TestFunctionLibraryReloaded: a server that has lost the function library
// (a restart without persistence, FUNCTION FLUSH) gets it again on the next
// call, which then runs as if nothing had happened. (A lost script cache,
// for a Store that runs scripts, is go-redis's EVALSHA-then-EVAL.)
func TestFunctionLibraryReloaded(t *testing.T) {
	url := redisURL(t)
	ctx := context.Background()
	opt, _ := goredis.ParseURL(url)
	admin := goredis.NewClient(opt)
	defer admin.Close()
	s := open(t, url, newPrefix(t, url))
	defer s.Close()
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	// Only this build's library: the server is shared, and other Stores
	// of this build on it load it again too.
	if err := admin.FunctionDelete(ctx, redis.Library()).Err(); err != nil {
		t.Fatal(err)
	}
	res, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: []store.Submission{{Kind: "echo", DedupKey: "k"}}})
	if err != nil || res.Items[0].Err != nil {
		t.Fatalf("admit after the server lost the library: %v %v", err, res)
	}
	if _, err := s.Get(ctx, &store.GetParams{ID: res.Items[0].Execution.ID}); err != nil {
		t.Error(err)
	}
	redis.CheckConsistency(t, s)
}

// TestClaimMany: one claim leases more executions than one ZADD of the
// running set takes (claim.lua adds them in chunks), and completing them
// all keeps the indexes consistent.
func TestClaimMany(t *testing.T) {
	url := redisURL(t)
	ctx := context.Background()
	s := open(t, url, newPrefix(t, url))
	defer s.Close()
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", MaxInflight: 5000}); err != nil {
		t.Fatal(err)
	}
	const n = 1200
	items := make([]store.Submission, n)
	for i := range items {
		items[i] = store.Submission{Kind: "echo"}
	}
	if _, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: items}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Claim(ctx, &store.ClaimParams{WorkerID: "w", Max: n + 10, LeaseDuration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Leases) != n {
		t.Fatalf("claimed %d, want %d", len(res.Leases), n)
	}
	redis.CheckConsistency(t, s)
	for _, l := range res.Leases {
		if _, err := s.Complete(ctx, &store.CompleteParams{ExecutionID: l.ExecutionID, Token: l.Token}); err != nil {
			t.Fatal(err)
		}
	}
	redis.CheckConsistency(t, s)
	ten, err := s.GetTenant(ctx, &store.GetTenantParams{Name: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	if ten.Inflight != 0 {
		t.Errorf("inflight %d after every execution completed, want 0", ten.Inflight)
	}
}

// TestStoreReopen runs the suite's durability checks (I8): a Store is closed
// and another opened on the same key prefix (on a Redis, then on a Redis
// Cluster).
func TestStoreReopen(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		url := redisURL(t)
		storetest.RunReopen(t, func(t *testing.T) storetest.Reopen {
			prefix := newPrefix(t, url)
			return func(t *testing.T) store.Store { return open(t, url, prefix) }
		})
	})
	t.Run("redis-cluster", func(t *testing.T) {
		url := clusterURL(t)
		storetest.RunReopen(t, func(t *testing.T) storetest.Reopen {
			prefix := newClusterPrefix(t, url)
			return func(t *testing.T) store.Store { return open(t, url, prefix) }
		})
	})
}

func TestOpenPrefix(t *testing.T) {
	url := redisURL(t)
	ctx := context.Background()
	prefix := newPrefix(t, url)
	s, err := redis.Open(ctx, url+"?prefix="+prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	// The same namespace through the option, and another one beside it.
	same := open(t, url, prefix)
	defer same.Close()
	if _, err := same.GetTenant(ctx, &store.GetTenantParams{Name: "acme"}); err != nil {
		t.Errorf("a Store on the same prefix does not see the tenant: %v", err)
	}
	other := open(t, url, newPrefix(t, url))
	defer other.Close()
	if _, err := other.GetTenant(ctx, &store.GetTenantParams{Name: "acme"}); err == nil {
		t.Error("a Store on another prefix sees the tenant")
	}
	for _, bad := range []string{url + "?prefix={x}", url + "?prefix=a*", url + "?nonsense=1"} {
		if s, err := redis.Open(ctx, bad); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", bad)
		}
	}
}

// TestChangedAcrossStores: a change made through one Store wakes the
// waiters of another Store on the same namespace (another server), and
// only those.
func TestChangedAcrossStores(t *testing.T) {
	url := redisURL(t)
	ctx := context.Background()
	prefix := newPrefix(t, url)
	a, b := open(t, url, prefix), open(t, url, prefix)
	defer a.Close()
	defer b.Close()
	other := open(t, url, newPrefix(t, url))
	defer other.Close()
	if _, err := other.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	ch, otherCh := b.Changed(), other.Changed()
	if _, err := other.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: []store.Submission{{Kind: "echo"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: []store.Submission{{Kind: "echo"}}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("Store b was not woken by a submit through Store a")
	}
	select {
	case <-otherCh: // its own submit
	case <-time.After(10 * time.Second):
		t.Fatal("Store other was not woken by its own submit")
	}
	// The Admit through a is not a change in other's namespace.
	otherCh = other.Changed()
	select {
	case <-otherCh:
		t.Error("a change in one namespace woke a Store on another")
	case <-time.After(100 * time.Millisecond):
	}
}

// TestAdmitRepeatedDuplicates: duplicates within one script run share one
// copy of the execution in the script's answer ('d' items); each caller
// still gets the whole execution, its own copy.
func TestAdmitRepeatedDuplicates(t *testing.T) {
	url := redisURL(t)
	ctx := context.Background()
	s := open(t, url, newPrefix(t, url))
	defer s.Close()
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	sub := store.Submission{Kind: "echo", DedupKey: "k", Payload: []byte(`{"a":1}`)}
	first, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: []store.Submission{sub}})
	if err != nil || first.Items[0].Err != nil {
		t.Fatal(err, first.Items[0].Err)
	}
	res, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: []store.Submission{sub, sub, sub}})
	if err != nil {
		t.Fatal(err)
	}
	want := first.Items[0].Execution
	for i, it := range res.Items {
		if it.Err != nil || !it.Deduplicated || it.Execution == nil || it.Execution.ID != want.ID ||
			it.Execution.Kind != "echo" || string(it.Execution.Payload) != `{"a":1}` || !it.Execution.CreatedAt.Equal(want.CreatedAt) {
			t.Errorf("item %d: %+v, want a whole copy of %s", i, it, want.ID)
		}
	}
	if res.Items[1].Execution == res.Items[2].Execution {
		t.Error("two items share one *Execution")
	}
	redis.CheckConsistency(t, s)
}

// TestChangedSurvivesLostSubscription kills the Store's pub/sub connection
// (by id: the server is shared): waiters are woken, since changes may have
// been missed, and once go-redis has resubscribed changes wake them again.
func TestChangedSurvivesLostSubscription(t *testing.T) {
	url := redisURL(t)
	ctx := context.Background()
	prefix := newPrefix(t, url)
	s := open(t, url, prefix)
	defer s.Close()
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	opt, _ := goredis.ParseURL(url)
	admin := goredis.NewClient(opt)
	defer admin.Close()
	list, err := admin.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	var id string
	for _, line := range strings.Split(list, "\n") {
		if strings.Contains(line, " name=latch:"+prefix+" ") && strings.Contains(line, " sub=1 ") {
			for _, f := range strings.Fields(line) {
				if v, ok := strings.CutPrefix(f, "id="); ok {
					id = v
				}
			}
		}
	}
	if id == "" {
		t.Fatalf("no subscriber connection named latch:%s in CLIENT LIST", prefix)
	}
	ch := s.Changed()
	if err := admin.Do(ctx, "CLIENT", "KILL", "ID", id).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("waiters were not woken when the subscription was lost")
	}
	// Resubscribed: a change made by another Store wakes this one again.
	other := open(t, url, prefix)
	defer other.Close()
	deadline := time.After(20 * time.Second)
	for {
		ch := s.Changed()
		if _, err := other.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: []store.Submission{{Kind: "echo"}}}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ch:
			return
		case <-time.After(200 * time.Millisecond): // not resubscribed yet
		case <-deadline:
			t.Fatal("changes no longer wake the Store after its subscription was lost")
		}
	}
}
