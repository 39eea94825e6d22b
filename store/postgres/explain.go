package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/latch-run/latch/store"
)

// Explain's reads (store.ExplainFacts), each an indexed read.
const (
	sqlExplainTenant = `SELECT disabled, turn FROM latch_tenants WHERE name = $1`

	// The running executions of a tenant's concurrency key
	// (latch_executions_concurrency holds the running ones with a key).
	sqlExplainHolders = `SELECT id::text FROM latch_executions
WHERE status = 'running' AND concurrency_key = $2 AND tenant = $1 ORDER BY id`

	// The tenants a claim serves before tenant $3 (turn $1): smaller turn,
	// or equal turn and smaller name, as latch_claim_candidates orders
	// them, that are enabled and have ready work at $2 (one probe of
	// latch_executions_queued, one of latch_executions_scheduled, as the
	// claim's), at most $4.
	sqlExplainAhead = `SELECT count(*) FROM (SELECT 1 FROM latch_tenants t
WHERE NOT t.disabled AND t.name <> $3
  AND (t.turn < $1 OR (t.turn = $1 AND t.name COLLATE "C" < $3 COLLATE "C"))
  AND (EXISTS (SELECT 1 FROM latch_executions e WHERE e.tenant = t.name AND e.status = 'queued')
    OR EXISTS (SELECT 1 FROM latch_executions e WHERE e.tenant = t.name AND e.status = 'scheduled' AND e.run_at <= $2))
LIMIT $4) x`
)

// Explain implements store.Store: the facts of store.ExplainFacts read in
// one read-only snapshot (repeatable read), each an indexed read: the
// execution, its tenant, its concurrency key's running executions, its
// rate limit, the tenants ahead of it in turn order with ready work, and
// the live workers.
func (s *Store) Explain(ctx context.Context, p *store.ExplainParams) (*store.Explanation, error) {
	t := now(p.Now)
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("postgres: explain: %w", interpretError(err))
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	x, err := getExecution(ctx, tx, p.Tenant, p.ID)
	if err != nil {
		return nil, err
	}
	f := &store.ExplainFacts{Execution: x}
	if !x.Status.Waiting() {
		return f.Decide(t), nil
	}
	var turn int64
	if err := tx.QueryRow(ctx, sqlExplainTenant, x.Tenant).Scan(&f.TenantDisabled, &turn); err != nil &&
		!errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("postgres: explain: tenant: %w", interpretError(err))
	}
	if x.ConcurrencyKey != "" {
		if f.Running, f.Holders, err = keyHolders(ctx, tx, x.Tenant, x.ConcurrencyKey); err != nil {
			return nil, err
		}
	}
	if x.RateKey != "" {
		rl, err := getRecord(ctx, tx, scanRateLimit, "rate limit", x.RateKey, sqlGetRateLimit, x.Tenant, x.RateKey)
		switch {
		case err == nil:
			f.RateLimit = rl
		case !errors.Is(err, store.ErrNotFound):
			return nil, err
		}
	}
	if err := tx.QueryRow(ctx, sqlExplainAhead, turn, t, x.Tenant, store.MaxExplainTenants).
		Scan(&f.TenantsAhead); err != nil {
		return nil, fmt.Errorf("postgres: explain: turns: %w", interpretError(err))
	}
	workers := strings.ReplaceAll(sqlPresenceWorkers, "{tenant}", " AND tenant IN ($2, '')")
	if f.Workers, err = readWorkers(ctx, tx, workers, []any{t.Add(-store.WorkerAlive), x.Tenant}); err != nil {
		return nil, err
	}
	return f.Decide(t), nil
}

// keyHolders counts tenant's running executions with concurrency key key
// and names the first store.MaxExplainHolders of them by id.
func keyHolders(ctx context.Context, q querier, tenant, key string) (running int, holders []string, err error) {
	rows, err := q.Query(ctx, sqlExplainHolders, tenant, key)
	if err != nil {
		return 0, nil, fmt.Errorf("postgres: explain: holders: %w", interpretError(err))
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return 0, nil, fmt.Errorf("postgres: explain: holders: %w", interpretError(err))
		}
		running++
		if len(holders) < store.MaxExplainHolders {
			holders = append(holders, id)
		}
	}
	if err := rows.Err(); err != nil {
		return 0, nil, fmt.Errorf("postgres: explain: holders: %w", interpretError(err))
	}
	return running, holders, nil
}
