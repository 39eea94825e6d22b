package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/latch-run/latch/store"
)

// ReportServer implements store.Store: the server's row, its workers and
// the activity deltas in one step. A worker's last_seen_at takes the later
// of the stored and the reported time; an activity minute adds the deltas
// to what earlier reports (of any server) left. A tenant's worker is
// recorded only while the tenant exists and if seen since its creation, a
// tenant's activity only while it exists (store.ServerReport), so a report
// pending across a delete does not reach the next tenant of the name.
func (s *Store) ReportServer(ctx context.Context, p *store.ServerReport) error {
	if err := checkReport(p); err != nil {
		return err
	}
	t := now(p.Now)
	return s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		if _, err := tx.ExecContext(ctx, `INSERT INTO servers (id, host, version, started_at, last_seen_at)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET host = excluded.host,
			version = excluded.version, started_at = excluded.started_at, last_seen_at = excluded.last_seen_at`,
			p.ID, p.Host, p.Version, ns(p.StartedAt.UTC()), ns(t)); err != nil {
			return false, fmt.Errorf("sqlite: report server: %w", err)
		}
		for _, w := range p.Workers {
			seen := t
			if !w.LastSeenAt.IsZero() {
				seen = w.LastSeenAt
			}
			// The filters are those of the latest report of the worker.
			if _, err := tx.ExecContext(ctx, `INSERT INTO workers (server_id, worker_id, tenant, last_seen_at, queues, kinds)
				SELECT ?1, ?2, ?3, ?4, ?5, ?6 WHERE ?3 = '' OR EXISTS (SELECT 1 FROM tenants WHERE name = ?3 AND created_at <= ?4)
				ON CONFLICT (server_id, worker_id, tenant)
				DO UPDATE SET last_seen_at = MAX(last_seen_at, excluded.last_seen_at),
				queues = IIF(excluded.last_seen_at >= last_seen_at, excluded.queues, queues),
				kinds = IIF(excluded.last_seen_at >= last_seen_at, excluded.kinds, kinds)`,
				p.ID, w.ID, w.Tenant, ns(seen), filterJSON(w.Queues), filterJSON(w.Kinds)); err != nil {
				return false, fmt.Errorf("sqlite: report server: worker: %w", err)
			}
		}
		for _, a := range p.Activity {
			if a.Starts == 0 && a.Failures == 0 {
				continue
			}
			minute := store.MinuteOf(a.Minute)
			if _, err := tx.ExecContext(ctx, `INSERT INTO activity (tenant, minute, starts, failures)
				SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM tenants WHERE name = ?1)
				ON CONFLICT (tenant, minute)
				DO UPDATE SET starts = starts + excluded.starts, failures = failures + excluded.failures`,
				a.Tenant, ns(minute), a.Starts, a.Failures); err != nil {
				return false, fmt.Errorf("sqlite: report server: activity: %w", err)
			}
		}
		return false, nil
	})
}

// checkReport refuses a report the store cannot record as it is: without
// a server id, with a worker without an id, or with a negative count.
func checkReport(p *store.ServerReport) error {
	if p.ID == "" {
		return fmt.Errorf("%w: server report without a server id", store.ErrInvalid)
	}
	for _, w := range p.Workers {
		if w.ID == "" {
			return fmt.Errorf("%w: server %q reports a worker without an id", store.ErrInvalid, p.ID)
		}
	}
	for _, a := range p.Activity {
		if a.Starts < 0 || a.Failures < 0 {
			return fmt.Errorf("%w: server %q reports a negative activity count (tenant %q, minute %s)",
				store.ErrInvalid, p.ID, a.Tenant, a.Minute.UTC().Format(time.RFC3339))
		}
	}
	return nil
}

// sinceNS is a lower bound in unix nanoseconds; the zero time bounds
// nothing.
func sinceNS(t time.Time) int64 {
	if t.IsZero() {
		return math.MinInt64
	}
	return ns(t)
}

// Presence implements store.Store.
func (s *Store) Presence(ctx context.Context, p *store.PresenceParams) (*store.Presence, error) {
	since := sinceNS(p.Since)
	// One read transaction, so servers and workers are of the same moment.
	tx, err := s.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("sqlite: presence: %w", interpretError(err))
	}
	defer func() { _ = tx.Rollback() }()
	out := &store.Presence{}
	if p.Tenant == "" {
		if out.Servers, err = readServers(ctx, tx, since); err != nil {
			return nil, err
		}
	}
	if out.Workers, err = readWorkers(ctx, tx, p.Tenant, false, since); err != nil {
		return nil, err
	}
	return out, nil
}

func readServers(ctx context.Context, tx *sql.Tx, since int64) ([]*store.Server, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, host, version, started_at, last_seen_at FROM servers
		WHERE last_seen_at >= ? ORDER BY id`, since)
	if err != nil {
		return nil, fmt.Errorf("sqlite: presence: %w", interpretError(err))
	}
	defer rows.Close()
	var out []*store.Server
	for rows.Next() {
		var sv store.Server
		var started, seen int64
		if err := rows.Scan(&sv.ID, &sv.Host, &sv.Version, &started, &seen); err != nil {
			return nil, fmt.Errorf("sqlite: presence: %w", interpretError(err))
		}
		sv.StartedAt, sv.LastSeenAt = fromNS(started), fromNS(seen)
		out = append(out, &sv)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: presence: %w", interpretError(err))
	}
	return out, nil
}

// readWorkers reads the workers seen since since: every one (tenant ""),
// or tenant's, or with anyTenant also the workers of every tenant.
func readWorkers(ctx context.Context, tx *sql.Tx, tenant string, anyTenant bool, since int64) ([]*store.WorkerSeen, error) {
	query, args := workersQuery(tenant, anyTenant, since)
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: presence: %w", interpretError(err))
	}
	defer rows.Close()
	var out []*store.WorkerSeen
	for rows.Next() {
		var w store.WorkerSeen
		var seen int64
		var queues, kinds sql.NullString
		if err := rows.Scan(&w.ServerID, &w.ID, &w.Tenant, &seen, &queues, &kinds); err != nil {
			return nil, fmt.Errorf("sqlite: presence: %w", interpretError(err))
		}
		w.LastSeenAt = fromNS(seen)
		if w.Queues, err = parseFilter(queues); err != nil {
			return nil, fmt.Errorf("sqlite: presence: worker %s queues: %w", w.ID, err)
		}
		if w.Kinds, err = parseFilter(kinds); err != nil {
			return nil, fmt.Errorf("sqlite: presence: worker %s kinds: %w", w.ID, err)
		}
		out = append(out, &w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: presence: %w", interpretError(err))
	}
	return out, nil
}

// workersQuery is readWorkers' query.
func workersQuery(tenant string, anyTenant bool, since int64) (string, []any) {
	query := `SELECT server_id, worker_id, tenant, last_seen_at, queues, kinds FROM workers WHERE last_seen_at >= ?`
	args := []any{since}
	switch {
	case tenant != "" && anyTenant:
		query += ` AND tenant IN (?, '')`
		args = append(args, tenant)
	case tenant != "":
		query += ` AND tenant = ?`
		args = append(args, tenant)
	}
	return query + ` ORDER BY server_id, worker_id, tenant`, args
}

// filterJSON is a claim filter as stored: a JSON array, or NULL for none
// (every queue, every kind).
func filterJSON(vals []string) any {
	if len(vals) == 0 {
		return nil
	}
	b, _ := json.Marshal(vals) // strings always marshal
	return string(b)
}

// parseFilter reads filterJSON back: nil for NULL.
func parseFilter(v sql.NullString) ([]string, error) {
	if !v.Valid || v.String == "" {
		return nil, nil
	}
	var out []string
	if err := json.Unmarshal([]byte(v.String), &out); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// activityQuery reads the minutes at or after since: one tenant's, a range
// of the primary key, or every tenant's summed per minute, a range of
// activity_minute.
func activityQuery(p *store.ActivityParams) (string, []any) {
	since := sinceNS(p.Since)
	if p.Tenant != "" {
		return `SELECT minute, starts, failures FROM activity
			WHERE tenant = ? AND minute >= ? AND (starts > 0 OR failures > 0) ORDER BY minute`,
			[]any{p.Tenant, since}
	}
	return `SELECT minute, SUM(starts), SUM(failures) FROM activity INDEXED BY activity_minute
		WHERE minute >= ? GROUP BY minute HAVING SUM(starts) > 0 OR SUM(failures) > 0 ORDER BY minute`,
		[]any{since}
}

// Activity implements store.Store.
func (s *Store) Activity(ctx context.Context, p *store.ActivityParams) ([]*store.ActivityMinute, error) {
	query, args := activityQuery(p)
	rows, err := s.read.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: activity: %w", interpretError(err))
	}
	defer rows.Close()
	var out []*store.ActivityMinute
	for rows.Next() {
		var m store.ActivityMinute
		var minute int64
		if err := rows.Scan(&minute, &m.Starts, &m.Failures); err != nil {
			return nil, fmt.Errorf("sqlite: activity: %w", interpretError(err))
		}
		m.Minute = fromNS(minute)
		out = append(out, &m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: activity: %w", interpretError(err))
	}
	return out, nil
}

// prunePresence forgets, in Prune's step, the servers and workers not seen
// for store.PresenceKept and the activity minutes older than
// store.ActivityKept.
func prunePresence(ctx context.Context, tx *sql.Tx, t time.Time) error {
	seen := ns(t.Add(-store.PresenceKept))
	for _, q := range []struct {
		sql string
		arg int64
	}{
		{`DELETE FROM servers WHERE last_seen_at <= ?`, seen},
		{`DELETE FROM workers WHERE last_seen_at <= ?`, seen},
		{`DELETE FROM activity WHERE minute < ?`, ns(t.Add(-store.ActivityKept))},
	} {
		if _, err := tx.ExecContext(ctx, q.sql, q.arg); err != nil {
			return fmt.Errorf("sqlite: prune presence: %w", err)
		}
	}
	return nil
}
