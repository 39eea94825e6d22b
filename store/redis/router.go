package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/latch-run/latch/store"
)

// Router is the Store of a Redis Cluster that spreads tenants over the
// cluster: one hash tag, so one slot, per tenant (OpenRouter).
//
// A tenant namespace "{prefix/T}" is a complete namespace of the usual
// layout (keys.go) holding one tenant: its hash (quota, inflight,
// disabled), executions, dedup keys, indexes, concurrency keys, rate
// limits, schedules and flows. Every operation on one tenant is the
// usual script, run unchanged on the tenant's namespace: one script, one
// slot, one node. The home namespace "{prefix}" keeps what is
// namespace-wide: the tenants set (the registry) and each tenant's
// creation record, API keys, the admin key, console sessions, the schema,
// servers, workers and activity, and the router's hints (router_hints.go).
//
// The Router only routes and merges: it holds no rule of admission,
// claim, quota or dedup, which stay in the scripts. A tenant's '/' cannot
// occur in a prefix (checkPrefix), so no namespace of another prefix is a
// tenant namespace of this one.
type Router struct {
	home *Store    // the home namespace; its client, functions and context serve every view
	note *notifier // over the home namespace and every tenant's
	feed store.Feed

	mu    sync.Mutex
	views map[string]*Store // tenant -> its namespace's Store (shared client, no goroutine)

	// needRepair: a node was out of reach (a failover may have lost hint
	// writes its tenants' primaries kept) or a hint write failed; the
	// repair goroutine (router_repair.go) repairs at once, kicked by
	// repairKick.
	needRepair atomic.Bool
	repairKick chan struct{}
	repairDone chan struct{}
	stopRepair context.CancelFunc
	repairMu   sync.Mutex // held by a repair: one at a time

	refreshes atomic.Int64 // hint re-derives (refresh), for tests

	noteUp     atomic.Pointer[notifier] // note, once started (for unavailable)
	resetSoon  atomic.Bool              // a notifier reset is scheduled
	resetTimer atomic.Pointer[time.Timer]
}

// resetDelay coalesces the notifier resets of a burst of failed calls (a
// node out of reach fails every call to it): one reset at most this long
// after each failure, never one per failure.
const resetDelay = 100 * time.Millisecond

// unavailable is what the cluster hook calls when a call could not reach
// its node or the node answered CLUSTERDOWN (clusterHook). The node may be
// failing over: its promoted replica may lack the last writes, the hints'
// among them (a repair now), and a tenant namespace's version counter may
// go back, while the pattern subscription, on another node, is not
// dropped; so the notifier forgets the versions it knew and wakes every
// waiter, as a resubscription does (notify.go): within resetDelay
// of the failure, once for a burst of failures, so that waiters woken
// into calls that fail again are not woken again at once, and always
// after the burst's last failure.
func (r *Router) unavailable() {
	r.wantRepair()
	if r.noteUp.Load() == nil || !r.resetSoon.CompareAndSwap(false, true) {
		return // not started yet, or a reset is already on its way
	}
	r.resetTimer.Store(time.AfterFunc(resetDelay, func() {
		r.resetSoon.Store(false) // a failure from now on schedules another
		r.noteUp.Load().reset()
	}))
}

var (
	_ store.Store             = (*Router)(nil)
	_ store.Notifier          = (*Router)(nil)
	_ store.ChangeFeed        = (*Router)(nil)
	_ store.DurabilityChecker = (*Router)(nil)
	_ store.Sharer            = (*Router)(nil)
)

// OpenRouter opens the tenant router on the Redis Cluster named by a
// redis-cluster:// or rediss-cluster:// URL, with the URL's prefix (or
// WithPrefix) naming the home namespace.
func OpenRouter(ctx context.Context, rawURL string, opts ...Option) (*Router, error) {
	if !isClusterURL(rawURL) {
		return nil, errors.New("redis: the tenant router needs a redis-cluster:// URL")
	}
	r := &Router{views: map[string]*Store{}, repairKick: make(chan struct{}, 1), repairDone: make(chan struct{})}
	opts = append(opts, func(c *config) { c.route = &routing{unavailable: r.unavailable} })
	home, err := Open(ctx, rawURL, opts...)
	if err != nil {
		return nil, err
	}
	r.home = home
	if err := home.markLayout(ctx); err != nil {
		home.Close()
		return nil, err
	}
	lost := func() { home.cluster.ReloadState(context.Background()) }
	if r.note, err = startNotifier(ctx, home.rdb, routerPattern(home.k.ns), true, &r.feed, lost); err != nil {
		home.Close()
		return nil, err
	}
	home.note = r.note.forNS(home.k.ns)
	r.noteUp.Store(r.note)
	rctx, stop := context.WithCancel(context.Background())
	r.stopRepair = stop
	go r.repairLoop(rctx)
	if err := r.repairLanes(ctx); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// view returns the Store of tenant t's namespace. Views share the home
// Store's client, functions and background context; their groupers start
// no goroutine until used.
func (r *Router) view(t string) *Store {
	r.mu.Lock()
	defer r.mu.Unlock()
	if v := r.views[t]; v != nil {
		return v
	}
	h := r.home
	v := &Store{
		rdb: h.rdb, cluster: h.cluster, k: keys{ns: h.k.tenantNS(t)}, functions: h.functions,
		route: &routing{tenant: t, unavailable: h.route.unavailable},
		bg:    h.bg, stopBG: func() {},
	}
	v.note = r.note.forNS(v.k.ns)
	v.feed.WatchChanges(func(c store.Change) {
		if len(c.IDs) > 0 {
			r.feed.Publish(c.IDs...)
		} else {
			r.feed.PublishAll()
		}
	})
	v.admitG = v.newGrouper("admit", scriptAdmit, v.k.dedupExp(), v.k.list(), v.k.sched(), v.k.readyKinds())
	v.completeG = v.newGrouper("complete", scriptComplete, v.k.running())
	r.views[t] = v
	return v
}

// OpenStore opens the store a URL names: the tenant router on a Redis
// Cluster (a redis-cluster:// or rediss-cluster:// URL), unless the URL
// says layout=single; else Open's Store.
func OpenStore(ctx context.Context, rawURL string, opts ...Option) (store.Store, error) {
	if isClusterURL(rawURL) {
		l, err := clusterLayout(rawURL)
		if err != nil {
			return nil, fmt.Errorf("redis: store URL: %w", err)
		}
		if l == layoutTenant {
			return OpenRouter(ctx, rawURL, opts...)
		}
	}
	return Open(ctx, rawURL, opts...)
}

// markLayout marks the home namespace as the router's, refusing one that
// holds the single-slot layout (tenants or an admin key and no mark): its
// executions would not be seen.
func (s *Store) markLayout(ctx context.Context) error {
	l, err := s.rdb.Get(ctx, s.k.layout()).Result()
	switch {
	case err == nil && l == layoutTenant:
		return nil
	case err != nil && !errors.Is(err, goredis.Nil):
		return fmt.Errorf("redis: layout: %w", interpretError(err))
	}
	n, err := s.rdb.Exists(ctx, s.k.tenants(), s.k.admin()).Result()
	if err != nil {
		return fmt.Errorf("redis: layout: %w", interpretError(err))
	}
	if n > 0 {
		return fmt.Errorf("redis: namespace %s holds the single-slot layout of an earlier latch: "+
			"open it with ?layout=single, or use another prefix for a tenant per slot", s.k.ns)
	}
	if err := s.rdb.SetNX(ctx, s.k.layout(), layoutTenant, 0).Err(); err != nil {
		return fmt.Errorf("redis: layout: %w", interpretError(err))
	}
	return nil
}

// tenants reads the registry, in name order.
func (r *Router) tenants(ctx context.Context) ([]string, error) {
	names, err := r.home.rdb.SMembers(ctx, r.home.k.tenants()).Result()
	if err != nil {
		return nil, fmt.Errorf("redis: tenants: %w", interpretError(err))
	}
	slices.Sort(names)
	return names, nil
}

// find returns the Store of the namespace holding execution id, for a call
// that names no tenant: the first tenant, in name order, whose namespace
// holds it (one pipelined EXISTS over the tenants; ids are unique per
// tenant, and UUIDv7s the store makes are unique everywhere). When none
// does it returns the home Store, which holds no execution, so that the
// call answers as for a missing one.
func (r *Router) find(ctx context.Context, tenant, id string) (*Store, error) {
	if tenant != "" {
		return r.view(tenant), nil
	}
	names, err := r.tenants(ctx)
	if err != nil {
		return nil, err
	}
	cmds := make([]*goredis.IntCmd, len(names))
	if _, err := r.home.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, t := range names {
			cmds[i] = p.Exists(ctx, r.home.k.tenantNS(t)+":exec:"+id)
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("redis: find execution: %w", interpretError(err))
	}
	for i, c := range cmds {
		if c.Val() > 0 {
			return r.view(names[i]), nil
		}
	}
	return r.home, nil
}

// each calls fn for every registered tenant concurrently (at most 16 at a
// time). A tenant's failure does not stop the others: each runs, and the
// errors come back joined, each naming its tenant.
func (r *Router) each(ctx context.Context, names []string, fn func(ctx context.Context, i int, v *Store) error) error {
	var g errgroup.Group
	g.SetLimit(16)
	errs := make([]error, len(names))
	for i, t := range names {
		v := r.view(t)
		g.Go(func() error {
			if err := fn(ctx, i, v); err != nil {
				errs[i] = fmt.Errorf("tenant %s: %w", t, err)
			}
			return nil
		})
	}
	_ = g.Wait()
	return errors.Join(errs...)
}

// Ping checks that the home namespace's primary answers.
func (r *Router) Ping(ctx context.Context) error { return r.home.Ping(ctx) }

// Close stops the subscription and closes the connections.
func (r *Router) Close() error {
	var err error
	r.home.closeOnce.Do(func() {
		r.stopRepair()
		<-r.repairDone
		if t := r.resetTimer.Load(); t != nil {
			t.Stop()
		}
		r.home.stopBG()
		r.mu.Lock()
		for _, v := range r.views {
			v.admitG.close()
			v.completeG.close()
		}
		r.mu.Unlock()
		r.home.admitG.close()
		r.home.completeG.close()
		r.home.closeErr = errors.Join(r.note.stop(), r.home.rdb.Close())
	})
	err = r.home.closeErr
	return err
}

// Changed implements store.Notifier over every namespace of the router.
func (r *Router) Changed() <-chan struct{} { return r.note.changed() }

// WatchChanges implements store.ChangeFeed.
func (r *Router) WatchChanges(fn func(store.Change)) (stop func()) { return r.feed.WatchChanges(fn) }

// SharedAcrossProcesses implements store.Sharer.
func (r *Router) SharedAcrossProcesses() bool { return true }

// CheckDurability implements store.DurabilityChecker (every primary).
func (r *Router) CheckDurability(ctx context.Context) (string, error) {
	return r.home.CheckDurability(ctx)
}
