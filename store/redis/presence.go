package redis

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/latch-run/latch/store"
)

// Presence and activity: servers (a sorted set of server ids by last seen,
// and a hash of each one's report, server:<id>), workers (one sorted set of
// every worker by last seen, each member workerMember(server, tenant, id))
// and activity (a sorted set of the minutes with counts, and per minute a
// hash activity:<minute_us> of fields s:<tenant> and f:<tenant>, the starts
// and failures). Prune forgets what is older than store.PresenceKept and
// store.ActivityKept; DeleteTenant takes a tenant's workers and counts.

// workerMember names a worker in the workers set; lib.lua's worker_member
// is the same function.
func workerMember(server, tenant, id string) string {
	return strconv.Itoa(len(server)) + ":" + server + strconv.Itoa(len(tenant)) + ":" + tenant + id
}

// parseWorkerMember reads a workerMember back.
func parseWorkerMember(m string) (server, tenant, id string, ok bool) {
	cut := func(s string) (string, string, bool) {
		n, rest, found := strings.Cut(s, ":")
		l, err := strconv.Atoi(n)
		if !found || err != nil || l < 0 || l > len(rest) {
			return "", "", false
		}
		return rest[:l], rest[l:], true
	}
	server, rest, ok := cut(m)
	if !ok {
		return "", "", "", false
	}
	tenant, id, ok = cut(rest)
	return server, tenant, id, ok
}

// ReportServer implements store.Store with one script (report_server.lua).
func (s *Store) ReportServer(ctx context.Context, p *store.ServerReport) error {
	if p.ID == "" {
		return fmt.Errorf("%w: a server report needs the server's id", store.ErrInvalid)
	}
	nowUS := us(now(p.Now))
	args := []any{s.k.ns, p.ID, p.Host, p.Version, itoa(us(p.StartedAt)), itoa(nowUS), len(p.Workers)}
	for _, w := range p.Workers {
		if w.ID == "" {
			return fmt.Errorf("%w: a worker of server %q without an id", store.ErrInvalid, p.ID)
		}
		seen := nowUS
		if !w.LastSeenAt.IsZero() {
			seen = us(w.LastSeenAt)
		}
		args = append(args, workerMember(p.ID, w.Tenant, w.ID), itoa(seen), w.Tenant, claimFilters(w.Queues, w.Kinds))
	}
	args = append(args, len(p.Activity))
	for _, a := range p.Activity {
		if a.Starts < 0 || a.Failures < 0 {
			return fmt.Errorf("%w: activity of tenant %q counts %d starts and %d failures", store.ErrInvalid,
				a.Tenant, a.Starts, a.Failures)
		}
		args = append(args, itoa(us(store.MinuteOf(a.Minute))), a.Tenant, a.Starts, a.Failures)
	}
	_, err := s.run(ctx, "report server", scriptReportServer,
		[]string{s.k.servers(), s.k.server(p.ID), s.k.workers(), s.k.activity()}, args...)
	return err
}

// claimFilters is a worker's claim filters as workerclaims keeps them: ""
// for none (every queue, every kind), else a JSON array [queues, kinds].
func claimFilters(queues, kinds []string) string {
	if len(queues) == 0 && len(kinds) == 0 {
		return ""
	}
	b, _ := json.Marshal([2][]string{queues, kinds}) // strings always marshal
	return string(b)
}

// parseClaimFilters reads claimFilters back; what it cannot read claims
// every queue and kind.
func parseClaimFilters(s string) (queues, kinds []string) {
	var f [2][]string
	if s == "" || json.Unmarshal([]byte(s), &f) != nil {
		return nil, nil
	}
	if len(f[0]) > 0 {
		queues = f[0]
	}
	if len(f[1]) > 0 {
		kinds = f[1]
	}
	return queues, kinds
}

// Presence implements store.Store with one read script (presence.lua).
func (s *Store) Presence(ctx context.Context, p *store.PresenceParams) (*store.Presence, error) {
	return s.presence(ctx, p, false)
}

// presence is Presence; with anyTenant, a tenant's read has the workers of
// every tenant ("") too, and no server.
func (s *Store) presence(ctx context.Context, p *store.PresenceParams, anyTenant bool) (*store.Presence, error) {
	flag := ""
	if anyTenant {
		flag = "1"
	}
	arr, err := s.run(ctx, "presence", scriptPresence, []string{s.k.servers(), s.k.workers()},
		s.k.ns, p.Tenant, itoa(us(p.Since)), flag)
	if err != nil {
		return nil, err
	}
	servers, _ := at(arr, 0).([]any)
	workers, _ := at(arr, 1).([]any)
	res := &store.Presence{} // for a tenant, the script read no server
	for i := 0; i+4 < len(servers); i += 5 {
		res.Servers = append(res.Servers, &store.Server{
			ID:         asString(servers[i]),
			Host:       asString(servers[i+1]),
			Version:    asString(servers[i+2]),
			StartedAt:  fromUS(asInt(servers[i+3])),
			LastSeenAt: fromUS(asInt(servers[i+4])),
		})
	}
	for i := 0; i+2 < len(workers); i += 3 {
		server, tenant, id, ok := parseWorkerMember(asString(workers[i]))
		if !ok {
			continue // not written by this store
		}
		w := &store.WorkerSeen{
			ID: id, Tenant: tenant, ServerID: server, LastSeenAt: fromUS(scoreUS(asString(workers[i+1]))),
		}
		w.Queues, w.Kinds = parseClaimFilters(asString(workers[i+2]))
		res.Workers = append(res.Workers, w)
	}
	slices.SortFunc(res.Servers, func(a, b *store.Server) int { return cmp.Compare(a.ID, b.ID) })
	slices.SortFunc(res.Workers, func(a, b *store.WorkerSeen) int {
		return cmp.Or(cmp.Compare(a.ServerID, b.ServerID), cmp.Compare(a.ID, b.ID), cmp.Compare(a.Tenant, b.Tenant))
	})
	return res, nil
}

// Activity implements store.Store with one read script (activity.lua).
func (s *Store) Activity(ctx context.Context, p *store.ActivityParams) ([]*store.ActivityMinute, error) {
	arr, err := s.run(ctx, "activity", scriptActivity, []string{s.k.activity()},
		s.k.ns, p.Tenant, itoa(us(p.Since)))
	if err != nil {
		return nil, err
	}
	var out []*store.ActivityMinute
	for i := 0; i+2 < len(arr); i += 3 {
		out = append(out, &store.ActivityMinute{
			Minute:   fromUS(asInt(arr[i])),
			Starts:   int(asInt(arr[i+1])),
			Failures: int(asInt(arr[i+2])),
		})
	}
	return out, nil
}

// presenceBounds are Prune's bounds of presence and activity at now: what
// was last seen, or counted in a minute, before them goes.
func presenceBounds(now time.Time) (seen, minute int64) {
	return us(now.Add(-store.PresenceKept)), us(now.Add(-store.ActivityKept))
}
