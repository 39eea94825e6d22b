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

// ListPlanQueries are List's statements: its window of acme's executions
// and of every tenant's, the page read in such a window with a kind
// filter, and acme's page of a dedup key.
func ListPlanQueries() map[string]PlanQuery {
	after, _ := parseID("00000000-0000-7000-8000-0000000186a1")
	oldest, _ := parseID("00000000-0000-7000-8000-000000013881")
	return map[string]PlanQuery{
		"window of a tenant":            {listWindowQuery([]string{"tenant = $1", "id < $2"}, 3), []any{"acme", after, 10000}},
		"window of every tenant":        {listWindowQuery([]string{"id < $1"}, 2), []any{after, 10000}},
		"page in a tenant's window":     {listQuery([]string{"tenant = $1", "id < $2", "id >= $3", "kind = $4"}, 5), []any{"acme", after, oldest, "nope", 51}},
		"page in every tenant's window": {listQuery([]string{"id < $1", "id >= $2", "kind = $3"}, 4), []any{after, oldest, "nope", 51}},
		"dedup key of a tenant":         {listQuery([]string{"tenant = $1", "dedup_key = $2"}, 3), []any{"acme", "k", 51}},
	}
}
