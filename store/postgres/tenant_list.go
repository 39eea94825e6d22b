package postgres

import (
	"context"
	"fmt"

	"github.com/latch-run/latch/store"
)

// sqlListTenants is sqlGetTenant over a page of names: the quota shards of
// the page's tenants only.
const sqlListTenants = `
SELECT t.name, t.max_inflight, t.dedup_ttl, t.retention, t.created_at, t.disabled, t.event_retention,
    CASE WHEN bool_or(q.free < 0) THEN t.max_inflight + sum(q.debt)
         ELSE t.max_inflight - coalesce(sum(q.free), 0) END,
    ` + sqlStorageColumns + `
FROM (SELECT * FROM latch_tenants WHERE name > $1 ORDER BY name LIMIT $2) t
LEFT JOIN latch_quota_shards q ON q.tenant = t.name
GROUP BY t.name, t.max_inflight, t.dedup_ttl, t.retention, t.created_at, t.disabled, t.event_retention
ORDER BY t.name`

// ListTenants implements store.Store.
func (s *Store) ListTenants(ctx context.Context, p *store.ListTenantsParams) ([]*store.Tenant, error) {
	rows, err := s.pool.Query(ctx, sqlListTenants, p.After, p.PageLimit())
	if err != nil {
		return nil, fmt.Errorf("postgres: list tenants: %w", interpretError(err))
	}
	defer rows.Close()
	var out []*store.Tenant
	for rows.Next() {
		var ten store.Tenant
		var ttl, ret, evret int64
		if err := rows.Scan(&ten.Name, &ten.MaxInflight, &ttl, &ret, &ten.CreatedAt, &ten.Disabled, &evret, &ten.Inflight,
			&ten.MaxStoredBytes, &ten.StoredBytes); err != nil {
			return nil, fmt.Errorf("postgres: list tenants: %w", interpretError(err))
		}
		ten.DedupTTL, ten.Retention, ten.CreatedAt = durationNS(ttl), durationNS(ret), ten.CreatedAt.UTC()
		ten.EventRetention = durationNS(evret)
		out = append(out, &ten)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list tenants: %w", interpretError(err))
	}
	return out, nil
}
