package postgres

import (
	"context"
	"fmt"

	"github.com/latch-run/latch/store"
)

// sqlReadyKinds: the (tenant, kind) pairs with a queued execution, a skip
// scan of latch_executions_queued_kind (one probe a pair), and those with
// a scheduled one due by $1, a skip scan of
// latch_executions_scheduled_kind with one probe a pair for the due one;
// $2 how many; {tenant} filters to one tenant ($3) or none (withTenant).
// (tenant, kind) row comparisons follow the indexes' order.
const sqlReadyKinds = `
WITH RECURSIVE q AS (
    (SELECT e.tenant, e.kind FROM latch_executions e WHERE e.status = 'queued'{tenant}
     ORDER BY e.tenant, e.kind LIMIT 1)
    UNION ALL
    SELECT n.tenant, n.kind FROM q CROSS JOIN LATERAL (
        SELECT e.tenant, e.kind FROM latch_executions e WHERE e.status = 'queued'{tenant}
          AND (e.tenant, e.kind) > (q.tenant, q.kind) ORDER BY e.tenant, e.kind LIMIT 1) n
), s AS (
    (SELECT e.tenant, e.kind FROM latch_executions e WHERE e.status = 'scheduled'{tenant}
     ORDER BY e.tenant, e.kind LIMIT 1)
    UNION ALL
    SELECT n.tenant, n.kind FROM s CROSS JOIN LATERAL (
        SELECT e.tenant, e.kind FROM latch_executions e WHERE e.status = 'scheduled'{tenant}
          AND (e.tenant, e.kind) > (s.tenant, s.kind) ORDER BY e.tenant, e.kind LIMIT 1) n
), d AS (
    SELECT s.tenant, s.kind FROM (SELECT * FROM s LIMIT $2) s WHERE EXISTS (SELECT 1 FROM latch_executions e
        WHERE e.status = 'scheduled' AND e.tenant = s.tenant AND e.kind = s.kind AND e.run_at <= $1)
)
SELECT tenant, kind FROM ((SELECT * FROM q LIMIT $2) UNION SELECT tenant, kind FROM d) u
ORDER BY tenant COLLATE "C", kind COLLATE "C" LIMIT $2`

// ReadyKinds implements store.Store: one statement of skip scans.
func (s *Store) ReadyKinds(ctx context.Context, p *store.ReadyKindsParams) ([]*store.ReadyKind, error) {
	sql, args := withTenant(sqlReadyKinds, p.Tenant, []any{now(p.Now), store.MaxReadyKinds})
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: ready kinds: %w", interpretError(err))
	}
	defer rows.Close()
	var out []*store.ReadyKind
	for rows.Next() {
		var k store.ReadyKind
		if err := rows.Scan(&k.Tenant, &k.Kind); err != nil {
			return nil, fmt.Errorf("postgres: ready kinds: %w", interpretError(err))
		}
		out = append(out, &k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: ready kinds: %w", interpretError(err))
	}
	return out, nil
}
