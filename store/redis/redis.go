package redis

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/store"
)

// Store is the Redis implementation of store.Store.
type Store struct {
	rdb     goredis.UniversalClient
	cluster *goredis.ClusterClient // rdb, on a Redis Cluster (cluster.go); else nil
	k       keys
	// route holds the tenant router's switches (router.go) for a Store it
	// made; nil for a Store of Open's.
	route *routing

	// functions: the scripts run as the function library (FCALL), not as
	// scripts (EVALSHA); see scripts.go.
	functions bool

	note nsNotifier // its namespace's handle on the notifier (notify.go)
	feed store.Feed // store.ChangeFeed: which executions changed

	// claimExamined counts the ready-index members this Store's claims
	// have read (claim.lua's count): their work besides what they lease.
	claimExamined atomic.Int64

	// Group commit (group.go) for the hot operations.
	admitG, completeG *grouper

	bg     context.Context // for work that is no single caller's; ends at Close
	stopBG context.CancelFunc

	closeOnce sync.Once
	closeErr  error
}

// errClosed is returned by operations on a closed Store.
var errClosed = errors.New("redis: store is closed")

var (
	_ store.Store      = (*Store)(nil)
	_ store.Notifier   = (*Store)(nil)
	_ store.ChangeFeed = (*Store)(nil)
)

// Option changes how Open sets up a Store.
type Option func(*config)

type config struct {
	prefix  string
	scripts bool // run the scripts with EVALSHA even if the server has functions (tests)
	// route is set by the tenant router (router.go) alone, for its home
	// Store; nil for any other Open.
	route *routing
}

// routing gathers what only the tenant router (router.go) sets on the
// Stores it makes: through config for its home namespace's Store, and
// directly on each tenant's view (Router.view). A Store with one:
//   - has no subscription of its own: the router's notifier hears its
//     namespace, and the router sets note (and stops the notifier);
//   - sends every command to its slot's primary, whatever the URL's
//     read_only, route_by_latency and route_randomly say (cluster.go).
type routing struct {
	// tenant is the tenant of a view's namespace; "" for the home one.
	tenant string
	// unavailable, if set, is called when a call could not reach its
	// cluster node (clusterHook): the router repairs its hints.
	unavailable func()
}

// WithPrefix sets the key prefix (default "latch", or the URL's prefix
// parameter). Stores with different prefixes share nothing.
func WithPrefix(p string) Option { return func(c *config) { c.prefix = p } }

// Open connects to the Redis server named by rawURL (redis://, rediss://,
// or unix://, as go-redis's ParseURL reads them, with its query options),
// or to the Redis Cluster named by a redis-cluster:// or rediss-cluster://
// URL (cluster.go), and returns a Store on the namespace named by the
// URL's prefix query parameter ("latch" when absent), or by WithPrefix.
// Open loads the Lua scripts and subscribes to the namespace's change
// channel before it returns.
func Open(ctx context.Context, rawURL string, opts ...Option) (*Store, error) {
	cfg := config{prefix: DefaultPrefix}
	var (
		ropt *goredis.Options
		copt *goredis.ClusterOptions
	)
	if isClusterURL(rawURL) {
		var (
			p   string
			has bool
			err error
		)
		if copt, p, has, err = parseClusterURL(rawURL); err != nil {
			return nil, fmt.Errorf("redis: store URL: %w", err)
		}
		if has {
			cfg.prefix = p
		}
	} else {
		u, err := url.Parse(rawURL)
		if err != nil {
			return nil, fmt.Errorf("redis: store URL: %w", err)
		}
		q := u.Query()
		if p, ok := q["prefix"]; ok {
			cfg.prefix = p[len(p)-1]
			q.Del("prefix")
			u.RawQuery = q.Encode()
		}
		if ropt, err = goredis.ParseURL(u.String()); err != nil {
			return nil, fmt.Errorf("redis: store URL: %w", err)
		}
	}
	for _, o := range opts {
		o(&cfg)
	}
	k, err := newKeys(cfg.prefix)
	if err != nil {
		return nil, err
	}
	s := &Store{k: k}
	var addr string
	if copt != nil {
		if cfg.route != nil { // the router's: primaries only
			copt.ReadOnly, copt.RouteByLatency, copt.RouteRandomly = false, false, false
		}
		if copt.ClientName == "" {
			copt.ClientName = "latch:" + cfg.prefix // shows in CLIENT LIST
		}
		s.cluster = goredis.NewClusterClient(copt)
		var unavailable func()
		if cfg.route != nil {
			unavailable = cfg.route.unavailable
		}
		s.cluster.AddHook(clusterHook{cc: s.cluster, unavailable: unavailable})
		s.rdb, addr = s.cluster, strings.Join(copt.Addrs, ",")
	} else {
		if ropt.ClientName == "" {
			ropt.ClientName = "latch:" + cfg.prefix // shows in CLIENT LIST
		}
		s.rdb, addr = goredis.NewClient(ropt), ropt.Addr
	}
	rdb := s.rdb
	if err := s.ping(ctx); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("redis: connect to %s: %w", addr, err)
	}
	if s.functions, err = s.loadScripts(ctx, !cfg.scripts); err != nil {
		rdb.Close()
		return nil, err
	}
	if copt != nil && cfg.route == nil {
		// A namespace the tenant router made is not one namespace.
		if l, err := s.rdb.Get(ctx, k.layout()).Result(); err == nil && l == layoutTenant {
			rdb.Close()
			return nil, fmt.Errorf("redis: namespace %s holds a tenant per slot (the tenant router): open it without layout=single", k.ns)
		}
	}
	if err := s.upgrade(ctx); err != nil {
		rdb.Close()
		return nil, err
	}
	if err := s.repairLanes(ctx); err != nil {
		rdb.Close()
		return nil, err
	}
	// Executions queued by a latch from before claims took turns wait in
	// ready indexes that turns does not name yet.
	if _, err := s.run(ctx, "seed turns", scriptSeedTurns, []string{k.tenants(), k.turns()}, k.ns); err != nil {
		rdb.Close()
		return nil, err
	}
	var lost func()
	if s.cluster != nil {
		lost = func() { s.cluster.ReloadState(context.Background()) }
	}
	if cfg.route != nil {
		s.route = cfg.route // the router sets note
	} else {
		n, err := startNotifier(ctx, rdb, k.channel(), false, &s.feed, lost)
		if err != nil {
			rdb.Close()
			return nil, err
		}
		s.note = n.forNS(k.ns)
	}
	s.bg, s.stopBG = context.WithCancel(context.Background())
	s.admitG = s.newGrouper("admit", scriptAdmit, k.dedupExp(), k.list(), k.sched(), k.readyKinds())
	s.completeG = s.newGrouper("complete", scriptComplete, k.running())
	return s, nil
}

// Ping checks that the server answers.
// On a cluster it is the primary that holds the namespace's slot.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.ping(ctx); err != nil {
		return fmt.Errorf("redis: ping: %w", err)
	}
	return nil
}

func (s *Store) ping(ctx context.Context) error {
	c, err := s.primary(ctx)
	if err != nil {
		return err
	}
	return c.Ping(ctx).Err()
}

// Close stops the change subscriber and closes the connections. Operations
// after Close fail.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.stopBG() // a group in flight ends at once, its callers told so
		s.admitG.close()
		s.completeG.close()
		var stopErr error
		if s.route == nil && s.note.n != nil { // the router stops its own
			stopErr = s.note.n.stop()
		}
		s.closeErr = errors.Join(stopErr, s.rdb.Close())
	})
	return s.closeErr
}

// Changed implements store.Notifier: the channel is closed at the first
// change to the namespace, by any Store on it in any process, after the
// call.
func (s *Store) Changed() <-chan struct{} { return s.note.changed() }

// WatchChanges implements store.ChangeFeed. A change made through this
// Store is reported with its ids; a change announced by another process
// (the message carries a version, not ids), or a resubscription, is
// reported as unattributed.
func (s *Store) WatchChanges(fn func(store.Change)) (stop func()) { return s.feed.WatchChanges(fn) }

// run runs a script and returns its reply as an array.
func (s *Store) run(ctx context.Context, op string, sc *luaScript, keys []string, args ...any) ([]any, error) {
	res, err := runScript(ctx, s.rdb, s.functions, s.loadLibrary, sc, keys, args...)
	if err != nil {
		return nil, fmt.Errorf("redis: %s: %w", op, interpretError(err))
	}
	arr, ok := res.([]any)
	if !ok {
		return nil, fmt.Errorf("redis: %s: unexpected reply %T", op, res)
	}
	return arr, nil
}

func at(arr []any, i int) any {
	if i < len(arr) {
		return arr[i]
	}
	return nil
}

// The reply helpers tolerate a missing or mistyped element by returning
// the zero value: replies come from this package's own scripts.

func asInt(v any) int64 {
	switch v := v.(type) {
	case int64:
		return v
	case string:
		n, _ := strconv.ParseInt(v, 10, 64)
		return n
	}
	return 0
}

func asString(v any) string {
	s, _ := v.(string)
	return s
}

// asMap turns an HGETALL reply made inside a script (a flat array) into a map.
func asMap(v any) map[string]string {
	arr, _ := v.([]any)
	m := make(map[string]string, len(arr)/2)
	for i := 0; i+1 < len(arr); i += 2 {
		m[asString(arr[i])] = asString(arr[i+1])
	}
	return m
}

// hashInt reads an integer field of a hash (HGETALL); 0 when absent.
func hashInt(m map[string]string, field string) int64 {
	n, _ := strconv.ParseInt(m[field], 10, 64)
	return n
}

// Times are kept as integer microseconds since the Unix epoch.

// now returns the operation's time: store.Now.
func now(t time.Time) time.Time { return store.Now(t) }

func us(t time.Time) int64 { return t.UnixMicro() }

func fromUS(v int64) time.Time { return time.UnixMicro(v).UTC() }

func durUS(d time.Duration) int64 { return d.Microseconds() }

func fromDurUS(v int64) time.Duration { return time.Duration(v) * time.Microsecond }

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// scoreUS reads a sorted-set score that holds microseconds (exact: every
// time this store keeps is below 2^53 µs).
func scoreUS(v string) int64 {
	f, _ := strconv.ParseFloat(v, 64)
	return int64(math.Round(f))
}
