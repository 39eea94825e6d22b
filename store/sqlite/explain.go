package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/latch-run/latch/store"
)

// Explain implements store.Store: the facts of store.ExplainFacts read in
// one read transaction, each an indexed read: the execution (primary
// key), its tenant (primary key), its concurrency key's running
// executions (executions_concurrency: the running ones of that key only),
// its rate limit (primary key), the tenants ahead of it in turn order
// with ready work (tenants_ready, one probe of executions_ready_tenant
// each, as the claim's turn walk), and the live workers (workers_seen).
func (s *Store) Explain(ctx context.Context, p *store.ExplainParams) (*store.Explanation, error) {
	t := now(p.Now)
	tx, err := s.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("sqlite: explain: %w", interpretError(err))
	}
	defer func() { _ = tx.Rollback() }()
	x, err := getExecution(ctx, tx, p.Tenant, p.ID)
	if err != nil {
		return nil, interpretError(err)
	}
	f := &store.ExplainFacts{Execution: x}
	if !x.Status.Waiting() {
		return f.Decide(t), nil
	}
	var disabled int
	var turn int64
	if err := tx.QueryRowContext(ctx, `SELECT disabled, turn FROM tenants WHERE name = ?`, x.Tenant).
		Scan(&disabled, &turn); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite: explain: tenant: %w", interpretError(err))
	}
	f.TenantDisabled = disabled != 0
	if x.ConcurrencyKey != "" {
		if f.Running, f.Holders, err = keyHolders(ctx, tx, x.Tenant, x.ConcurrencyKey); err != nil {
			return nil, err
		}
	}
	if x.RateKey != "" {
		rl, err := getRateLimit(ctx, tx, x.Tenant, x.RateKey)
		switch {
		case err == nil:
			f.RateLimit = rl
		case !errors.Is(err, store.ErrNotFound):
			return nil, interpretError(err)
		}
	}
	query, args := aheadQuery(t, turn, x.Tenant)
	if err := tx.QueryRowContext(ctx, query, args...).Scan(&f.TenantsAhead); err != nil {
		return nil, fmt.Errorf("sqlite: explain: turns: %w", interpretError(err))
	}
	if f.Workers, err = readWorkers(ctx, tx, x.Tenant, true, ns(t.Add(-store.WorkerAlive))); err != nil {
		return nil, err
	}
	return f.Decide(t), nil
}

// aheadQuery counts, up to store.MaxExplainTenants, the tenants before
// tenant (of turn turn) in the claim's turn order that have ready work at
// t: the claim's turn walk (turnQuery), backwards from tenant, one probe
// of executions_ready_tenant each (INDEXED BY, as the claim's).
func aheadQuery(t time.Time, turn int64, tenant string) (string, []any) {
	ready, rargs := readyWhere(&store.ClaimParams{}, t, false)
	args := append(append([]any{turn, tenant, tenant}, rargs...), store.MaxExplainTenants)
	return `SELECT COUNT(*) FROM (SELECT 1 FROM tenants t INDEXED BY tenants_ready
		WHERE t.inflight > 0 AND t.disabled = 0 AND (t.turn, t.name) < (?, ?) AND t.name <> ?
		AND EXISTS (SELECT 1 FROM executions e INDEXED BY executions_ready_tenant WHERE e.tenant = t.name AND ` + ready + `)
		LIMIT ?)`, args
}

// sqlExplainHolders reads the running executions of a tenant's
// concurrency key: executions_concurrency holds the running ones with a
// key, and only they.
const sqlExplainHolders = `SELECT id FROM executions INDEXED BY executions_concurrency
		WHERE status = 'running' AND concurrency_key = ? AND tenant = ? ORDER BY id`

// keyHolders counts tenant's running executions with concurrency key key
// and names the first store.MaxExplainHolders of them by id.
func keyHolders(ctx context.Context, tx *sql.Tx, tenant, key string) (running int, holders []string, err error) {
	rows, err := tx.QueryContext(ctx, sqlExplainHolders, key, tenant)
	if err != nil {
		return 0, nil, fmt.Errorf("sqlite: explain: holders: %w", interpretError(err))
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return 0, nil, fmt.Errorf("sqlite: explain: holders: %w", interpretError(err))
		}
		running++
		if len(holders) < store.MaxExplainHolders {
			holders = append(holders, id)
		}
	}
	if err := rows.Err(); err != nil {
		return 0, nil, fmt.Errorf("sqlite: explain: holders: %w", interpretError(err))
	}
	return running, holders, nil
}
