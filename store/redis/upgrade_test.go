package redis_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/redis"
)

// TestOpenUpgradesOldRecords: a key and a rate limit written by a latch
// before key ids (no key_id, no keyids:<T>, no ratelimits:<T>) get them at
// the next Open, so the key can be listed and deleted, and a delete of the
// tenant takes the rate limit.
func TestOpenUpgradesOldRecords(t *testing.T) {
	o := newOldLatch(t)
	url, prefix, ctx, base, rdb, ns := o.url, o.prefix, o.ctx, o.base, o.rdb, o.ns
	old := map[string]map[string]any{
		ns + ":apikey:hash-old":       {"tenant": "acme", "created": base.UnixMicro()},
		ns + ":ratelimit:4:acmek":     {"tenant": "acme", "key": "k", "rate": 1, "per": 1000000, "burst": 1, "iv": 1000000, "created": 1, "updated": 1},
		ns + ":apikey:hash-old-admin": {"admin": 1, "created": base.UnixMicro()},
		ns + ":schema":                nil, // an older latch wrote no version
	}
	for key, fields := range old {
		if fields == nil {
			if err := rdb.Del(ctx, key).Err(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := rdb.HSet(ctx, key, fields).Err(); err != nil {
			t.Fatal(err)
		}
	}

	s := open(t, url, prefix)
	ks, err := s.ListAPIKeys(ctx, &store.ListAPIKeysParams{Tenant: "acme"})
	if err != nil || len(ks) != 1 || !strings.HasPrefix(ks[0].KeyID, "key_") {
		t.Fatalf("keys after the upgrade: %v, %v; want the old key with an id", ks, err)
	}
	k, err := s.LookupAPIKey(ctx, &store.LookupAPIKeyParams{KeyHash: "hash-old"})
	if err != nil || k.KeyID != ks[0].KeyID {
		t.Fatalf("LookupAPIKey of the old key: %+v, %v", k, err)
	}
	redis.CheckConsistency(t, s)
	if err := s.DeleteTenant(ctx, &store.DeleteTenantParams{Name: "acme", Now: base}); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.Exists(ctx, ns+":ratelimit:4:acmek", ns+":apikey:hash-old").Result(); err != nil || n != 0 {
		t.Errorf("after the tenant's delete, %d of its old records are left (%v)", n, err)
	}
	redis.CheckConsistency(t, s)
}

// TestOldParkGoesBack: an execution an older latch parked (in the key's
// one park, ckpark:<c>, counted in the key's field ready) goes back to the
// ready indexes when its key next settles, and is claimed.
func TestOldParkGoesBack(t *testing.T) {
	url := redisURL(t)
	prefix := newPrefix(t, url)
	ctx := context.Background()
	base := time.Date(2031, time.March, 14, 9, 0, 0, 0, time.UTC)
	s := open(t, url, prefix)
	t.Cleanup(func() { redis.CheckConsistency(t, s) })
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", Now: base}); err != nil {
		t.Fatal(err)
	}
	sub := store.Submission{Kind: "echo", Payload: []byte(`{}`), ConcurrencyKey: "k", ConcurrencyLimit: 1}
	admit := func(now time.Time) *store.Execution {
		res, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: []store.Submission{sub}, Now: now})
		if err != nil || res.Items[0].Err != nil {
			t.Fatalf("Admit: %v, %+v", err, res)
		}
		return res.Items[0].Execution
	}
	claim := func(now time.Time) []store.Lease {
		res, err := s.Claim(ctx, &store.ClaimParams{WorkerID: "w", Tenant: "acme", Max: 10, LeaseDuration: time.Minute, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return res.Leases
	}
	admit(base)
	first := claim(base)
	held := admit(base.Add(time.Second))
	if ls := claim(base.Add(2 * time.Second)); len(first) != 1 || len(ls) != 0 {
		t.Fatalf("claims: %d then %d leases, want 1 then 0", len(first), len(ls))
	}

	// Park it as an older latch did.
	opt, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := goredis.NewClient(opt)
	defer rdb.Close()
	ns := "{" + prefix + "}"
	parks, err := rdb.ZRange(ctx, ns+":ckparkg:4:acmek", 0, -1).Result()
	if err != nil || len(parks) != 1 || !strings.HasSuffix(parks[0], held.ID) {
		t.Fatalf("park: %v, %v; want %s", parks, err, held.ID)
	}
	m := parks[0][len(parks[0])-32-len(held.ID):]
	if err := rdb.ZRem(ctx, ns+":ckparkg:4:acmek", parks[0]).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ZAdd(ctx, ns+":ckpark:4:acmek", goredis.Z{Member: m}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, ns+":ck:4:acmek", "ready", 0).Err(); err != nil {
		t.Fatal(err)
	}

	if _, err := s.Complete(ctx, &store.CompleteParams{ExecutionID: first[0].ExecutionID, Tenant: "acme",
		Token: first[0].Token, Now: base.Add(3 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	if ls := claim(base.Add(4 * time.Second)); len(ls) != 1 || ls[0].ExecutionID != held.ID {
		t.Fatalf("after its key's slot freed, claimed %d leases, want only %s", len(ls), held.ID)
	}
}

// oldLatch is a namespace with the tenant acme, opened by this build (s),
// and a plain client of its server (rdb) to write records under ns as an
// older latch left them.
type oldLatch struct {
	url, prefix, ns string
	ctx             context.Context
	base            time.Time
	s               *redis.Store
	rdb             *goredis.Client
}

func newOldLatch(t *testing.T) *oldLatch {
	t.Helper()
	o := &oldLatch{url: redisURL(t), ctx: context.Background(), base: time.Date(2031, time.March, 14, 9, 0, 0, 0, time.UTC)}
	o.prefix = newPrefix(t, o.url)
	o.ns = "{" + o.prefix + "}"
	o.s = open(t, o.url, o.prefix)
	if _, err := o.s.CreateTenant(o.ctx, &store.CreateTenantParams{Name: "acme", Now: o.base}); err != nil {
		t.Fatal(err)
	}
	opt, err := goredis.ParseURL(o.url)
	if err != nil {
		t.Fatal(err)
	}
	o.rdb = goredis.NewClient(opt)
	t.Cleanup(func() { o.rdb.Close() })
	return o
}

// TestOpenCountsOldStorage: executions written before the storage budget
// (no bytes field, no stored count on the tenant) are counted at the next
// Open: their payload, result and error, and the tenant the sum.
func TestOpenCountsOldStorage(t *testing.T) {
	url := redisURL(t)
	prefix := newPrefix(t, url)
	ctx := context.Background()
	base := time.Date(2031, time.March, 14, 9, 0, 0, 0, time.UTC)
	s := open(t, url, prefix)
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", Now: base}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Now: base, Items: []store.Submission{
		{Kind: "k", Payload: []byte(`{"a":"12345"}`)}, {Kind: "k", Payload: []byte(`[1,2,3]`)}}})
	if err != nil {
		t.Fatal(err)
	}
	opt, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := goredis.NewClient(opt)
	defer rdb.Close()
	ns := "{" + prefix + "}"
	for _, it := range res.Items {
		if err := rdb.HDel(ctx, ns+":exec:"+it.Execution.ID, "bytes").Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.HSet(ctx, ns+":exec:"+res.Items[1].Execution.ID, "result", `"done"`, "error", "boom").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HDel(ctx, ns+":tenant:acme", "stored", "max_bytes").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, ns+":schema", 2, 0).Err(); err != nil {
		t.Fatal(err)
	}

	s = open(t, url, prefix)
	ten, err := s.GetTenant(ctx, &store.GetTenantParams{Name: "acme"})
	if want := int64(len(`{"a":"12345"}`) + len(`[1,2,3]`) + len(`"done"`) + len("boom")); err != nil || ten.StoredBytes != want ||
		ten.MaxStoredBytes != store.DefaultMaxStoredBytes {
		t.Errorf("tenant after the upgrade: %+v, %v; want %d bytes stored, the default budget", ten, err, want)
	}
	redis.CheckConsistency(t, s)
	s = open(t, url, prefix) // a second Open counts nothing twice
	if again, err := s.GetTenant(ctx, &store.GetTenantParams{Name: "acme"}); err != nil || again.StoredBytes != ten.StoredBytes {
		t.Errorf("after a second Open: %+v, %v", again, err)
	}
}

// TestOpenBuildsKindLanes: executions queued by a latch before the lanes
// by kind (layout version 2: no ready:tk:<c>) are put in their lanes at
// the next Open, so a claim filtered by their kind finds them.
func TestOpenBuildsKindLanes(t *testing.T) {
	url := redisURL(t)
	prefix := newPrefix(t, url)
	ctx := context.Background()
	base := time.Date(2031, time.March, 14, 9, 0, 0, 0, time.UTC)
	s := open(t, url, prefix)
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", Now: base}); err != nil {
		t.Fatal(err)
	}
	var subs []store.Submission
	for i := range 1200 { // more than one backfill run's 500
		subs = append(subs, store.Submission{Kind: []string{"echo", "sleep", "http"}[i%3], Payload: []byte(`{}`)})
	}
	if _, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: subs, Now: base}); err != nil {
		t.Fatal(err)
	}
	opt, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := goredis.NewClient(opt)
	defer rdb.Close()
	ns := "{" + prefix + "}"
	lanes, err := rdb.Keys(ctx, ns+":ready:tk:*").Result()
	if err != nil || len(lanes) != 3 {
		t.Fatalf("lanes: %v, %v; want 3", lanes, err)
	}
	// As a latch of layout version 2 left them.
	if err := rdb.Del(ctx, lanes...).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HDel(ctx, ns+":tenant:acme", "laned").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, ns+":schema", 2, 0).Err(); err != nil {
		t.Fatal(err)
	}
	s = open(t, url, prefix)
	redis.CheckConsistency(t, s)
	res, err := s.Claim(ctx, &store.ClaimParams{WorkerID: "w", Kinds: []string{"sleep"}, Max: 500, Now: base})
	if err != nil || len(res.Leases) != 400 {
		t.Fatalf("claim of kind sleep after the upgrade: %v leases, %v; want 400", len(res.Leases), err)
	}
	redis.CheckConsistency(t, s)
}

// TestOpenRouterBuildsKindLanes: the tenant router builds the lanes by
// kind in the namespaces of the tenants it knows that lack them (an older
// router's).
func TestOpenRouterBuildsKindLanes(t *testing.T) {
	url := clusterURL(t)
	prefix := newClusterPrefix(t, url)
	ctx := context.Background()
	base := time.Date(2031, time.March, 14, 9, 0, 0, 0, time.UTC)
	r := openRouter(t, url, prefix)
	for _, tn := range []string{"acme", "globex"} {
		if _, err := r.CreateTenant(ctx, &store.CreateTenantParams{Name: tn, Now: base}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Admit(ctx, &store.AdmitParams{Tenant: tn, Items: []store.Submission{
			{Kind: "echo", Payload: []byte(`{}`)}, {Kind: "sleep", Payload: []byte(`{}`)}}, Now: base}); err != nil {
			t.Fatal(err)
		}
	}
	r.Close()
	cc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: clusterAddrs(t, url)})
	defer cc.Close()
	// As an older router left them: no lanes, no count.
	for _, tn := range []string{"acme", "globex"} {
		ns := "{" + prefix + "/" + tn + "}"
		if n, err := cc.Del(ctx, ns+":ready:tk:"+fmt.Sprint(len(tn))+":"+tn+"echo",
			ns+":ready:tk:"+fmt.Sprint(len(tn))+":"+tn+"sleep").Result(); err != nil || n != 2 {
			t.Fatalf("delete %s's lanes: %d, %v", tn, n, err)
		}
		if err := cc.HDel(ctx, ns+":tenant:"+tn, "laned").Err(); err != nil {
			t.Fatal(err)
		}
	}
	r = openRouter(t, url, prefix)
	defer r.Close()
	redis.CheckRouterConsistency(t, r)
	res, err := r.Claim(ctx, &store.ClaimParams{WorkerID: "w", Kinds: []string{"sleep"}, Max: 10, Now: base})
	if err != nil || len(res.Leases) != 2 {
		t.Fatalf("claim of kind sleep after the upgrade: %d leases, %v; want acme's and globex's", len(res.Leases), err)
	}
	redis.CheckRouterConsistency(t, r)
}

// TestOlderServerWritesStillClaimed: a server of the previous release,
// running beside this one during a deploy, queues executions without
// putting them in the lanes by kind, and takes them without taking them
// out. A claim filtered by kind still finds every ready execution of its
// kinds: while a tenant's lanes are not whole (their count, field laned,
// differs from its ready index's) it reads the tenant's ready index, and
// puts what it reads in the lanes.
func TestOlderServerWritesStillClaimed(t *testing.T) {
	url := redisURL(t)
	prefix := newPrefix(t, url)
	ctx := context.Background()
	base := time.Date(2031, time.March, 14, 9, 0, 0, 0, time.UTC)
	s := open(t, url, prefix)
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", Now: base}); err != nil {
		t.Fatal(err)
	}
	subs := []store.Submission{{Kind: "echo"}, {Kind: "echo"}, {Kind: "echo"}, {Kind: "nobody"}, {Kind: "nobody"}}
	if _, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: subs, Now: base}); err != nil {
		t.Fatal(err)
	}
	opt, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := goredis.NewClient(opt)
	defer rdb.Close()
	ns := "{" + prefix + "}"
	lane, tenant := ns+":ready:tk:4:acmeecho", ns+":tenant:acme"
	ms, err := rdb.ZRange(ctx, lane, 0, -1).Result()
	if err != nil || len(ms) != 3 {
		t.Fatalf("acme's echo lane: %v, %v", ms, err)
	}
	// As an older server queued it: in ready:t, not in its lane, not counted.
	if err := rdb.ZRem(ctx, lane, ms[0]).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HIncrBy(ctx, tenant, "laned", -1).Err(); err != nil {
		t.Fatal(err)
	}
	res, err := s.Claim(ctx, &store.ClaimParams{WorkerID: "w", Kinds: []string{"echo"}, Max: 10, Now: base})
	if err != nil || len(res.Leases) != 3 {
		t.Fatalf("claim of kind echo beside an older server's write: %d leases, %v; want 3", len(res.Leases), err)
	}
	redis.CheckConsistency(t, s) // the lanes are whole again

	// As an older server took a queued one: out of ready:t, still in its lane.
	if _, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: subs[:2], Now: base}); err != nil {
		t.Fatal(err)
	}
	ms, err = rdb.ZRange(ctx, lane, 0, -1).Result()
	if err != nil || len(ms) != 2 {
		t.Fatalf("acme's echo lane: %v, %v", ms, err)
	}
	if err := rdb.ZRem(ctx, ns+":ready:t:acme", ms[0]).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ZRem(ctx, ns+":ready:k:echo", ms[0]).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ZRem(ctx, ns+":ready:q:default", ms[0]).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, ns+":exec:"+ms[0][32:], "status", "running").Err(); err != nil {
		t.Fatal(err)
	}
	res, err = s.Claim(ctx, &store.ClaimParams{WorkerID: "w", Kinds: []string{"echo"}, Max: 10, Now: base})
	if err != nil || len(res.Leases) != 1 || res.Leases[0].ExecutionID != ms[1][32:] {
		t.Fatalf("claim of kind echo beside an older server's take: %+v, %v; want only %s", res, err, ms[1][32:])
	}
	if n, err := rdb.ZCard(ctx, lane).Result(); err != nil || n != 0 {
		t.Errorf("acme's echo lane after the claim: %d members, %v; want none", n, err)
	}

	// As an older server took one of a kind no claim takes: it stays in
	// its lane until the next Open repairs the tenant's lanes.
	nobody := ns + ":ready:tk:4:acmenobody"
	ms, err = rdb.ZRange(ctx, nobody, 0, -1).Result()
	if err != nil || len(ms) != 2 {
		t.Fatalf("acme's nobody lane: %v, %v", ms, err)
	}
	if err := rdb.ZRem(ctx, ns+":ready:t:acme", ms[0]).Err(); err != nil {
		t.Fatal(err)
	}
	open(t, url, prefix)
	got, err := rdb.ZRange(ctx, nobody, 0, -1).Result()
	if err != nil || len(got) != 1 || got[0] != ms[1] {
		t.Errorf("acme's nobody lane after Open: %v, %v; want only %s", got, err, ms[1][32:])
	}
	laned, err := rdb.HGet(ctx, tenant, "laned").Int64()
	ready, err2 := rdb.ZCard(ctx, ns+":ready:t:acme").Result()
	if err != nil || err2 != nil || laned != ready {
		t.Errorf("after Open acme counts %d in its lanes and %d ready (%v, %v)", laned, ready, err, err2)
	}
}
