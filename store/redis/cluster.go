package redis

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"

	goredis "github.com/redis/go-redis/v9"
)

// Redis Cluster.
//
// A store URL redis-cluster://HOST:PORT,HOST:PORT,... (rediss-cluster://
// for TLS) names a Redis Cluster by some of its nodes (the client learns
// the others), with go-redis's cluster options as query parameters, and
// prefix as for redis://. OpenStore opens it as the tenant router
// (router.go): the home namespace {prefix} and a namespace {prefix/T} per
// tenant, each a hash tag, so each tenant's keys live in one slot and
// every script's keys are on one shard while tenants spread over the
// primaries; ?layout=single opens the whole namespace in one slot instead
// (Open), as before the router. Either way the scripts run unchanged,
// each atomic on its slot's primary.
//
// What is not addressed by a key is sent where it belongs: the function
// library (or the scripts) is loaded on every primary, and loaded again on
// every primary when a node answers that it lacks it (a new primary after
// a resharding; a promoted replica has it by replication); SCAN and CONFIG
// GET visit every primary; PING goes to the home namespace's primary; the
// change channel is subscribed on one node (notify.go; the router has
// one pattern subscription). The change messages are plain
// PUBLISH, which a cluster broadcasts to every node: the scripts need no
// change.
//
// The tenant router sends every command to its slot's primary: it sets
// go-redis's ReadOnly, RouteByLatency and RouteRandomly to false whatever
// the URL says (read_only, route_by_latency, route_randomly), since a read
// from a replica may miss the last writes, and a hint refresh that read
// one could drop a live hint (router_hints.go). A ?layout=single Store
// takes the URL's options as they are.
//
// go-redis refreshes its map of the cluster on a MOVED reply, and
// otherwise once a minute: a primary that dies answers nothing, so the
// Store asks for a refresh at every failure to reach a node (clusterHook),
// and its calls find the promoted replica as soon as the cluster has
// promoted it.

// isClusterURL reports whether rawURL names a Redis Cluster.
func isClusterURL(rawURL string) bool {
	scheme, _, ok := strings.Cut(rawURL, "://")
	scheme = strings.ToLower(scheme)
	return ok && (scheme == "redis-cluster" || scheme == "rediss-cluster")
}

// parseClusterURL reads a redis-cluster:// or rediss-cluster:// URL: the
// cluster's options, and its prefix parameter (ok false when absent).
func parseClusterURL(rawURL string) (opt *goredis.ClusterOptions, prefix string, ok bool, err error) {
	scheme, rest, _ := strings.Cut(rawURL, "://")
	rest, rawQuery, _ := strings.Cut(rest, "?")
	hosts, path, _ := strings.Cut(rest, "/")
	if path != "" && path != "0" {
		return nil, "", false, fmt.Errorf("a Redis Cluster has database 0 only, not /%s", path)
	}
	var userinfo string
	if i := strings.LastIndexByte(hosts, '@'); i >= 0 {
		userinfo, hosts = hosts[:i+1], hosts[i+1:]
	}
	addrs := strings.Split(hosts, ",")
	if slices.Contains(addrs, "") {
		return nil, "", false, errors.New("an empty address: want redis-cluster://HOST:PORT,HOST:PORT")
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, "", false, err
	}
	if p, has := q["prefix"]; has {
		prefix, ok = p[len(p)-1], true
		q.Del("prefix")
	}
	q.Del("layout") // clusterLayout's

	for _, a := range addrs[1:] {
		q.Add("addr", a)
	}
	base := "redis"
	if strings.EqualFold(scheme, "rediss-cluster") {
		base = "rediss"
	}
	opt, err = goredis.ParseClusterURL(base + "://" + userinfo + addrs[0] + "?" + q.Encode())
	if err != nil {
		return nil, "", false, err
	}
	return opt, prefix, ok, nil
}

// The layouts of a namespace on a Redis Cluster: a hash tag per tenant
// (the tenant router, router.go: the default), or the whole namespace in
// one slot (?layout=single: the layout of latch before the router, which
// a namespace created by it keeps).
const (
	layoutTenant = "tenant"
	layoutSingle = "single"
)

// clusterLayout reads the layout parameter of a cluster URL.
func clusterLayout(rawURL string) (string, error) {
	_, rest, _ := strings.Cut(rawURL, "://")
	_, rawQuery, _ := strings.Cut(rest, "?")
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return "", err
	}
	l := q.Get("layout")
	switch l {
	case "", layoutTenant:
		return layoutTenant, nil
	case layoutSingle:
		return l, nil
	}
	return "", fmt.Errorf("layout %q: want %s or %s", l, layoutTenant, layoutSingle)
}

// clusterHook asks the cluster client for a new map of the cluster when a
// call could not reach its node or the node answered CLUSTERDOWN: the node
// may have died and its replica been promoted, which go-redis would
// otherwise learn only at its next periodic refresh. Refreshes are
// asynchronous and coalesced (ReloadState).
type clusterHook struct {
	cc          *goredis.ClusterClient
	unavailable func() // nil: nothing more to do
}

func (h clusterHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h clusterHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		err := next(ctx, cmd)
		h.check(ctx, err)
		return err
	}
}

func (h clusterHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		err := next(ctx, cmds)
		h.check(ctx, err)
		return err
	}
}

func (h clusterHook) check(ctx context.Context, err error) {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, goredis.ErrClosed) || errors.Is(err, errClosed) {
		return // the caller's or the Store's end, not the node's
	}
	if unavailable(err) {
		h.cc.ReloadState(ctx)
		if h.unavailable != nil {
			h.unavailable()
		}
	}
}

// eachPrimary calls fn with a client of the server, or of every primary of
// a cluster (concurrently), and returns the first error, naming its node.
func (s *Store) eachPrimary(ctx context.Context, fn func(ctx context.Context, c *goredis.Client) error) error {
	if s.cluster == nil {
		return fn(ctx, s.rdb.(*goredis.Client))
	}
	return s.cluster.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error {
		if err := fn(ctx, c); err != nil {
			return fmt.Errorf("primary %s: %w", c.Options().Addr, err)
		}
		return nil
	})
}

// primary returns a client of the server, or of the primary that holds the
// namespace's slot on a cluster.
func (s *Store) primary(ctx context.Context) (goredis.Cmdable, error) {
	if s.cluster == nil {
		return s.rdb, nil
	}
	return s.cluster.MasterForKey(ctx, s.k.ns)
}

// loadScripts makes the scripts ready on the server, or on every primary of
// a cluster (see the package-level loadScripts); it reports whether they
// run as functions: on a cluster, only if every primary took the library.
func (s *Store) loadScripts(ctx context.Context, useFunctions bool) (bool, error) {
	var mu sync.Mutex
	all := true
	err := s.eachPrimary(ctx, func(ctx context.Context, c *goredis.Client) error {
		f, err := loadScripts(ctx, c, useFunctions)
		mu.Lock()
		all = all && f
		mu.Unlock()
		return err
	})
	return all, err
}

// loadLibrary loads the function library again on the server, or on every
// primary of a cluster.
func (s *Store) loadLibrary(ctx context.Context) error {
	return s.eachPrimary(ctx, func(ctx context.Context, c *goredis.Client) error { return loadLibrary(ctx, c) })
}

// scanEach calls fn for every key matching pattern, on the server or on
// every primary of a cluster (one at a time: fn need not be safe for
// concurrent use).
func (s *Store) scanEach(ctx context.Context, pattern string, fn func(key string) error) error {
	var mu sync.Mutex
	var keys []string
	err := s.eachPrimary(ctx, func(ctx context.Context, c *goredis.Client) error {
		iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			mu.Lock()
			keys = append(keys, iter.Val())
			mu.Unlock()
		}
		return iter.Err()
	})
	if err != nil {
		return fmt.Errorf("redis: scan: %w", err)
	}
	for _, k := range keys {
		if err := fn(k); err != nil {
			return err
		}
	}
	return nil
}
