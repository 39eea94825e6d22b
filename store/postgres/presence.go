package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/latch-run/latch/store"
)

// Server reports, presence and activity (store/observe.go): the tables
// latch_servers, latch_workers and latch_activity (migration 8). None is on
// a hot path: each server writes one report every store.ReportEvery.
const (
	// A report in one statement: the server's row, its workers' last seen
	// times (never moved back), the activity deltas added to their minutes.
	// A report older than the server's row leaves the row as it is. The
	// workers and minutes come sorted and once each (ReportServer), so that
	// two reports that touch the same rows lock them in one order. Workers
	// and activity of a tenant that does not exist (deleted meanwhile) are
	// left out.
	sqlReportServer = `
WITH s AS (
    INSERT INTO latch_servers AS s (id, host, version, started_at, last_seen_at)
    VALUES ($1, $2, $3, $4, $5)
    ON CONFLICT (id) DO UPDATE SET host = excluded.host, version = excluded.version,
        started_at = excluded.started_at, last_seen_at = excluded.last_seen_at
    WHERE s.last_seen_at <= excluded.last_seen_at
), w AS (
    INSERT INTO latch_workers AS w (server_id, tenant, worker_id, last_seen_at, queues, kinds)
    SELECT $1, u.tenant, u.id, u.seen, u.queues, u.kinds
    FROM unnest($6::text[], $7::text[], $8::timestamptz[], $13::text[], $14::text[]) AS u(tenant, id, seen, queues, kinds)
    WHERE u.tenant = '' OR EXISTS (SELECT 1 FROM latch_tenants t WHERE t.name = u.tenant AND t.created_at <= u.seen)
    ORDER BY u.tenant, u.id
    ON CONFLICT (server_id, tenant, worker_id) DO UPDATE
        SET last_seen_at = greatest(w.last_seen_at, excluded.last_seen_at),
            queues = CASE WHEN excluded.last_seen_at >= w.last_seen_at THEN excluded.queues ELSE w.queues END,
            kinds = CASE WHEN excluded.last_seen_at >= w.last_seen_at THEN excluded.kinds ELSE w.kinds END
)
INSERT INTO latch_activity AS a (tenant, minute, starts, failures)
SELECT u.tenant, u.minute, u.starts, u.failures
FROM unnest($9::text[], $10::timestamptz[], $11::bigint[], $12::bigint[]) AS u(tenant, minute, starts, failures)
WHERE EXISTS (SELECT 1 FROM latch_tenants t WHERE t.name = u.tenant)
ORDER BY u.tenant, u.minute
ON CONFLICT (tenant, minute) DO UPDATE
    SET starts = a.starts + excluded.starts, failures = a.failures + excluded.failures`

	sqlPresenceServers = `SELECT id, host, version, started_at, last_seen_at FROM latch_servers WHERE last_seen_at >= $1`
	sqlPresenceWorkers = `SELECT server_id, tenant, worker_id, last_seen_at, queues, kinds FROM latch_workers WHERE last_seen_at >= $1{tenant}`

	sqlActivityAll = `
SELECT minute, sum(starts)::bigint, sum(failures)::bigint FROM latch_activity
WHERE minute >= $1 GROUP BY minute ORDER BY minute`
	sqlActivityTenant = `
SELECT minute, starts, failures FROM latch_activity
WHERE minute >= $1 AND tenant = $2 ORDER BY minute`

	// Prune's (maintenance.go): $1 the oldest last seen time kept, $2 the
	// oldest minute kept.
	sqlPrunePresence = `
WITH s AS (DELETE FROM latch_servers WHERE last_seen_at < $1),
w AS (DELETE FROM latch_workers WHERE last_seen_at < $1)
DELETE FROM latch_activity WHERE minute < $2`
)

// ReportServer implements store.Store: one statement. The report's workers
// are taken once each (the latest time of a worker named twice), its
// activity once per tenant and minute (summed; minutes given as any time
// within them), counts of zero left out.
func (s *Store) ReportServer(ctx context.Context, p *store.ServerReport) error {
	if p.ID == "" {
		return fmt.Errorf("%w: server report: id must not be empty", store.ErrInvalid)
	}
	t := now(p.Now)
	type wkey struct{ tenant, id string }
	seen := map[wkey]time.Time{}
	filters := map[wkey][2]*string{} // of the latest report of the worker
	for _, w := range p.Workers {
		if w.ID == "" {
			return fmt.Errorf("%w: server report %s: a worker without an id", store.ErrInvalid, p.ID)
		}
		at := t
		if !w.LastSeenAt.IsZero() {
			at = micro(w.LastSeenAt)
		}
		k := wkey{w.Tenant, w.ID}
		if prev, ok := seen[k]; !ok || !at.Before(prev) {
			seen[k] = at
			filters[k] = [2]*string{filterJSON(w.Queues), filterJSON(w.Kinds)}
		}
	}
	type akey struct {
		tenant string
		minute time.Time
	}
	sums := map[akey][2]int64{}
	for _, a := range p.Activity {
		if a.Tenant == "" || a.Starts < 0 || a.Failures < 0 {
			return fmt.Errorf("%w: server report %s: activity needs a tenant and counts not below 0", store.ErrInvalid, p.ID)
		}
		if a.Starts == 0 && a.Failures == 0 {
			continue
		}
		k := akey{a.Tenant, store.MinuteOf(a.Minute)}
		v := sums[k]
		sums[k] = [2]int64{v[0] + int64(a.Starts), v[1] + int64(a.Failures)}
	}
	var wTenants, wIDs []string
	var wSeen []time.Time
	var wQueues, wKinds []*string
	for _, k := range slices.SortedFunc(maps.Keys(seen), func(a, b wkey) int {
		return cmp.Or(strings.Compare(a.tenant, b.tenant), strings.Compare(a.id, b.id))
	}) {
		wTenants, wIDs, wSeen = append(wTenants, k.tenant), append(wIDs, k.id), append(wSeen, seen[k])
		wQueues, wKinds = append(wQueues, filters[k][0]), append(wKinds, filters[k][1])
	}
	var aTenants []string
	var aMinutes []time.Time
	var aStarts, aFailures []int64
	for _, k := range slices.SortedFunc(maps.Keys(sums), func(a, b akey) int {
		return cmp.Or(strings.Compare(a.tenant, b.tenant), a.minute.Compare(b.minute))
	}) {
		aTenants, aMinutes = append(aTenants, k.tenant), append(aMinutes, k.minute)
		aStarts, aFailures = append(aStarts, sums[k][0]), append(aFailures, sums[k][1])
	}
	err := s.write(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		_, err := c.Exec(ctx, sqlReportServer, p.ID, p.Host, p.Version, micro(p.StartedAt.UTC()), t,
			wTenants, wIDs, wSeen, aTenants, aMinutes, aStarts, aFailures, wQueues, wKinds)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: report server: %w", interpretError(err))
	}
	return nil
}

// Presence implements store.Store: the servers (none for a tenant), then
// the workers, each one statement.
func (s *Store) Presence(ctx context.Context, p *store.PresenceParams) (*store.Presence, error) {
	since := p.Since.UTC()
	out := &store.Presence{}
	if p.Tenant == "" {
		rows, err := s.pool.Query(ctx, sqlPresenceServers, since)
		if err != nil {
			return nil, fmt.Errorf("postgres: presence: %w", interpretError(err))
		}
		for rows.Next() {
			var sv store.Server
			if err := rows.Scan(&sv.ID, &sv.Host, &sv.Version, &sv.StartedAt, &sv.LastSeenAt); err != nil {
				rows.Close()
				return nil, fmt.Errorf("postgres: presence: %w", interpretError(err))
			}
			sv.StartedAt, sv.LastSeenAt = sv.StartedAt.UTC(), sv.LastSeenAt.UTC()
			out.Servers = append(out.Servers, &sv)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("postgres: presence: %w", interpretError(err))
		}
		if out.Servers == nil {
			out.Servers = []*store.Server{}
		}
		slices.SortFunc(out.Servers, func(a, b *store.Server) int { return strings.Compare(a.ID, b.ID) })
	}
	sql, args := withTenant(sqlPresenceWorkers, p.Tenant, []any{since})
	workers, err := readWorkers(ctx, s.pool, sql, args)
	if err != nil {
		return nil, err
	}
	out.Workers = workers
	return out, nil
}

// readWorkers reads the workers sql (sqlPresenceWorkers) selects, ordered
// by server, id and tenant.
func readWorkers(ctx context.Context, q interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}, sql string, args []any) ([]*store.WorkerSeen, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: presence: %w", interpretError(err))
	}
	defer rows.Close()
	var out []*store.WorkerSeen
	for rows.Next() {
		var w store.WorkerSeen
		var queues, kinds *string
		if err := rows.Scan(&w.ServerID, &w.Tenant, &w.ID, &w.LastSeenAt, &queues, &kinds); err != nil {
			return nil, fmt.Errorf("postgres: presence: %w", interpretError(err))
		}
		w.LastSeenAt = w.LastSeenAt.UTC()
		if w.Queues, err = parseFilter(queues); err != nil {
			return nil, fmt.Errorf("postgres: presence: worker %s queues: %w", w.ID, err)
		}
		if w.Kinds, err = parseFilter(kinds); err != nil {
			return nil, fmt.Errorf("postgres: presence: worker %s kinds: %w", w.ID, err)
		}
		out = append(out, &w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: presence: %w", interpretError(err))
	}
	slices.SortFunc(out, func(a, b *store.WorkerSeen) int {
		return cmp.Or(strings.Compare(a.ServerID, b.ServerID), strings.Compare(a.ID, b.ID), strings.Compare(a.Tenant, b.Tenant))
	})
	return out, nil
}

// filterJSON is a claim filter as stored: a JSON array, or NULL (nil) for
// none (every queue, every kind).
func filterJSON(vals []string) *string {
	if len(vals) == 0 {
		return nil
	}
	b, _ := json.Marshal(vals) // strings always marshal
	s := string(b)
	return &s
}

// parseFilter reads filterJSON back: nil for NULL.
func parseFilter(v *string) ([]string, error) {
	if v == nil || *v == "" {
		return nil, nil
	}
	var out []string
	if err := json.Unmarshal([]byte(*v), &out); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// Activity implements store.Store: one statement.
func (s *Store) Activity(ctx context.Context, p *store.ActivityParams) ([]*store.ActivityMinute, error) {
	sql, args := sqlActivityAll, []any{p.Since.UTC()}
	if p.Tenant != "" {
		sql, args = sqlActivityTenant, append(args, p.Tenant)
	}
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: activity: %w", interpretError(err))
	}
	defer rows.Close()
	var out []*store.ActivityMinute
	for rows.Next() {
		var m store.ActivityMinute
		if err := rows.Scan(&m.Minute, &m.Starts, &m.Failures); err != nil {
			return nil, fmt.Errorf("postgres: activity: %w", interpretError(err))
		}
		m.Minute = m.Minute.UTC()
		out = append(out, &m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: activity: %w", interpretError(err))
	}
	return out, nil
}
