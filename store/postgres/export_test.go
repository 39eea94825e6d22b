package postgres

import (
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// PoolOf exposes a Store's pool to the external tests.
func PoolOf(s *Store) *pgxpool.Pool { return s.pool }

// LockSpaceConcurrency is the advisory lock space of concurrency keys
// (locks.go), for tests that hold a key's lock as a claim would.
const LockSpaceConcurrency = lockSpaceConcurrency

// PlanQuery is a statement and its arguments, for EXPLAIN.
type PlanQuery struct {
	SQL  string
	Args []any
}

// ObservePlanQueries are the statements of QueueStats and ConcurrencyKeys,
// for every tenant and for one (acme).
func ObservePlanQueries() map[string]PlanQuery {
	out := map[string]PlanQuery{}
	at := time.Now()
	for _, tenant := range []string{"", "acme"} {
		sql, args := withTenant(sqlQueueStats, tenant, []any{at})
		out["QueueStats tenant="+tenant] = PlanQuery{sql, args}
		sql, args = withTenant(sqlConcurrencyKeys, tenant, nil)
		out["ConcurrencyKeys tenant="+tenant] = PlanQuery{sql, args}
	}
	return out
}

// ListPlanQuery is List's statement for a first page of 50 of every
// tenant's executions.
func ListPlanQuery() string {
	return `SELECT ` + executionColumnsPlain + ` FROM latch_executions ORDER BY latch_executions.id DESC LIMIT 51`
}
