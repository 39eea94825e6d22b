package redis

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"
)

// WithScripts makes a Store run its scripts with EVALSHA, as on a server
// without Redis functions.
func WithScripts() Option { return func(c *config) { c.scripts = true } }

// ClusterOptions returns what Open reads of a redis-cluster:// URL: the
// addresses, the user, the dial timeout and the prefix.
func ClusterOptions(rawURL string) (addrs []string, user string, dial time.Duration, prefix string, err error) {
	opt, prefix, _, err := parseClusterURL(rawURL)
	if err != nil {
		return nil, "", 0, "", err
	}
	return opt.Addrs, opt.Username, opt.DialTimeout, prefix, nil
}

// Library returns the name of the function library this build loads.
func Library() string { return libName }

// CheckConsistency fails t with every disagreement between the namespace's
// indexes, counters and dedup mappings and its execution hashes.
func CheckConsistency(t testing.TB, s *Store) {
	t.Helper()
	bad, err := s.checkConsistency(context.Background())
	if err != nil {
		t.Errorf("consistency check: %v", err)
	}
	for _, b := range bad {
		t.Errorf("redis consistency: %s", b)
	}
}

// ScheduleLive returns the members of the live set of tenant's schedule
// name: the ids of its executions admitted in flight that no fire has yet
// seen end.
func ScheduleLive(t testing.TB, s *Store, tenant, name string) []string {
	t.Helper()
	ids, err := s.rdb.SMembers(context.Background(), s.k.scheduleLive(scoped(tenant, name))).Result()
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// ExecFields returns the fields of execution id's hash as stored.
func ExecFields(t testing.TB, s *Store, id string) map[string]string {
	t.Helper()
	m, err := s.rdb.HGetAll(context.Background(), s.k.exec(id)).Result()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// seedScript writes terminal executions of one tenant, as admit.lua and
// complete.lua would leave them: the hash, its list entries and its
// retention entry. ARGV: NS, tenant, finished_us, ra, qp, number of
// queues, the queues, then the ids (the i-th in the i-th queue, round).
var seedScript = goredis.NewScript(luaFile("lib") + `
local t, fin, ra, qp, nq = ARGV[2], ARGV[3], ARGV[4], ARGV[5], tonumber(ARGV[6])
local list, done = {}, {}
for i = 7 + nq, #ARGV do
  local id = ARGV[i]
  redis.call('HSET', k_exec(id), 'id', id, 'tenant', t, 'kind', 'seed', 'queue', ARGV[7 + (i % nq)],
    'prio', 0, 'status', 'succeeded', 'payload', '{}', 'attempt', 1, 'maxatt', 3, 'timeout', 60,
    'created', fin, 'run_at', fin, 'qp', qp, 'ra', ra, 'cancel', 0, 'started', fin, 'finished', fin,
    'result', 'null')
  list[#list + 1] = 0
  list[#list + 1] = id
  done[#done + 1] = fin
  done[#done + 1] = id
end
zadd_pairs(k_list(), list)
zadd_pairs(k_list_t(t), list)
zadd_pairs(k_done(t), done)
return #list / 2`)

// SeedTerminal writes n succeeded executions straight into the namespace
// (seedScript, a few thousand a call), spread evenly over tenants and
// queues, finished at finished; and removes them when tb ends.
func SeedTerminal(tb testing.TB, s *Store, tenants, queues []string, n int, finished time.Time) {
	tb.Helper()
	ctx := context.Background()
	const chunk = 5000
	var all []string
	per := n / len(tenants)
	for ti, t := range tenants {
		m := per
		if ti < n%len(tenants) {
			m++
		}
		for m > 0 {
			k := min(chunk, m)
			args := []any{s.k.ns, t, itoa(us(finished)), timeLex(us(finished)), prioLex(0), len(queues)}
			for _, q := range queues {
				args = append(args, q)
			}
			for range k {
				id := uuid.Must(uuid.NewV7()).String()
				all = append(all, id)
				args = append(args, id)
			}
			if err := seedScript.Run(ctx, s.rdb, []string{s.k.list()}, args...).Err(); err != nil {
				tb.Fatal(err)
			}
			m -= k
		}
	}
	tb.Cleanup(func() {
		for len(all) > 0 {
			k := min(1000, len(all))
			keys := make([]string, k)
			for i, id := range all[:k] {
				keys[i] = s.k.exec(id)
			}
			if err := s.rdb.Unlink(ctx, keys...).Err(); err != nil {
				tb.Error(err)
				return
			}
			all = all[k:]
		}
		keys := []string{s.k.list()}
		for _, t := range tenants {
			keys = append(keys, s.k.listTenant(t), s.k.done(t))
		}
		if err := s.rdb.Unlink(ctx, keys...).Err(); err != nil {
			tb.Error(err)
		}
	})
}

// CheckRouterConsistency is CheckConsistency on the home namespace and on
// every tenant namespace of a tenant router.
func CheckRouterConsistency(t testing.TB, r *Router) {
	t.Helper()
	ctx := context.Background()
	names, err := r.tenants(ctx)
	if err != nil {
		t.Errorf("consistency check: %v", err)
		return
	}
	CheckConsistency(t, r.home)
	for _, n := range names {
		CheckConsistency(t, r.view(n))
	}
}

// TenantNamespace is the namespace (hash tag included) of tenant t.
func (r *Router) TenantNamespace(t string) string { return r.home.k.tenantNS(t) }

// RawClient is the router's cluster client.
func (r *Router) RawClient() goredis.UniversalClient { return r.home.rdb }

// HintKey is the key of the router's hint set of a kind of work (claim,
// promote, rescue, wake, fire).
func (r *Router) HintKey(what string) string { return r.home.k.hint(what) }

// NeedsRepair reports whether the router has a hint repair pending.
func (r *Router) NeedsRepair() bool { return r.needRepair.Load() }

// HoldRepair takes the repair lock, as a running repair holds it, until
// the returned func is called.
func (r *Router) HoldRepair() (release func()) {
	r.repairMu.Lock()
	return r.repairMu.Unlock
}

// AskRepair asks for a repair as a node out of reach does.
func (r *Router) AskRepair() { r.wantRepair() }

// RaiseKnown makes the router's notifier know version v of namespace ns,
// as if it had seen it.
func (r *Router) RaiseKnown(ns string, v uint64) {
	r.note.mu.Lock()
	r.note.raise(ns, v)
	r.note.mu.Unlock()
}

// Unavailable is what the cluster hook calls when a node is out of reach.
func (r *Router) Unavailable() { r.unavailable() }

// ClientOptions are the router's cluster client's options.
func (r *Router) ClientOptions() *goredis.ClusterOptions { return r.home.cluster.Options() }

// HomeCluster is the router's cluster client (its hooks see every call).
func (r *Router) HomeCluster() *goredis.ClusterClient { return r.home.cluster }

// ClaimExamined is the ready-index members the Store's claims have read
// (storetest.ClaimExaminer).
func (s *Store) ClaimExamined() int64 { return s.claimExamined.Load() }

// ClaimExamined is the ready-index members the tenant namespaces' claims
// have read (storetest.ClaimExaminer).
func (r *Router) ClaimExamined() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int64
	for _, v := range r.views {
		n += v.claimExamined.Load()
	}
	return n
}

// HintRefreshes counts the router's re-derives of hints (refresh).
func (r *Router) HintRefreshes() int64 { return r.refreshes.Load() }

// HoldHint, ReleaseHint and RefreshHint are the router's hold, release and
// refresh of a tenant's hint of kind what.
func (r *Router) HoldHint(ctx context.Context, t string, at int64, what string) string {
	return r.hold(ctx, t, at, what)
}
func (r *Router) ReleaseHint(ctx context.Context, t, what, token string) {
	r.release(ctx, t, what, token)
}
func (r *Router) RefreshHint(ctx context.Context, t, what string) error {
	return r.refresh(ctx, t, what)
}

// HintHoldKey is the key of tenant t's holds of its hint of kind what.
func (r *Router) HintHoldKey(what, t string) string { return r.home.k.hintHold(what, t) }
