package postgres

import (
	"github.com/google/uuid"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// OnRetry has s call fn with each error after which it runs an operation
// again (a deadlock, a serialization failure).
func OnRetry(s *Store, fn func(err error)) { s.retried = fn }

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
// and of every tenant's (counted after a page), the page read in such a
// window with a kind filter, and acme's pages unfiltered and of a dedup key.
func ListPlanQueries() map[string]PlanQuery {
	after, _ := parseID("00000000-0000-7000-8000-0000000186a1")
	oldest, _ := parseID("00000000-0000-7000-8000-000000013881")
	acme := &listWindow{tenant: "acme", hi: after}
	all := &listWindow{hi: after}
	return map[string]PlanQuery{
		"window of a tenant":            {acme.countQuery(), append(acme.args(uuid.Nil), 10000)},
		"window of every tenant":        {all.countQuery(), append(all.args(uuid.Nil), 10000)},
		"page in a tenant's window":     {acme.pageQuery([]string{"kind = $4"}, 5), append(acme.args(oldest), "nope", 51)},
		"page in every tenant's window": {all.pageQuery([]string{"kind = $3"}, 4), append(all.args(oldest), "nope", 51)},
		"unfiltered page of a tenant":   {acme.pageQuery(nil, 4), append(acme.args(uuid.Nil), 51)},
		"dedup key of a tenant":         {listQuery([]string{"tenant = $1", "dedup_key = $2"}, 3), []any{"acme", "k", 51}},
		"schedule of a tenant":          {listQuery([]string{"tenant = $1", "schedule = $2", "id < $3"}, 4), []any{"acme", "s1", after, 51}},
	}
}

// ListPlanQueriesOf are List's window and page statements for tenant's
// first page with a kind filter; the page's arguments take the window's
// oldest id.
func ListPlanQueriesOf(tenant string) (window PlanQuery, page func(oldest string) PlanQuery) {
	w := &listWindow{tenant: tenant, hi: maxID}
	return PlanQuery{w.countQuery(), append(w.args(uuid.Nil), 10000)}, func(oldest string) PlanQuery {
		lo, _ := parseID(oldest)
		return PlanQuery{w.pageQuery([]string{"kind = $4"}, 5), append(w.args(lo), "nope", 51)}
	}
}

// RunsPlanQueries are the statements that write latch_runs (and delete
// the journal and signals) by execution, and those of a child's end that
// read and write its parent's spawn in the journal, with arguments for the lease of
// execution id with token (its run 1, tenant acme) at now; Rescue's
// finds that lease expired.
func RunsPlanQueries(id, token string, now time.Time) map[string]PlanQuery {
	ids := "{" + id + "}"
	tok := "{" + token + "}"
	at := "{" + now.Format(time.RFC3339Nano) + "}"
	ts := now.Format(time.RFC3339Nano)
	later := now.Add(time.Hour).Format(time.RFC3339Nano)
	return map[string]PlanQuery{
		"complete":         {finishStatements[kindComplete].change[finishGrouped], []any{ids, tok, "{acme}", at, "{NULL}"}},
		"complete alone":   {finishStatements[kindComplete].change[finishAlone], []any{ids, tok, "{acme}", at, "{NULL}"}},
		"complete one":     {finishStatements[kindComplete].change[finishInTx], []any{ids, tok, "{acme}", at, "{NULL}"}},
		"fail":             {finishStatements[kindFail].change[finishGrouped], []any{ids, tok, "{acme}", at, "{false}", at, "{boom}"}},
		"release":          {finishStatements[kindRelease].change[finishGrouped], []any{ids, tok, "{acme}", at, "{false}"}},
		"suspend":          {sqlSuspendWait, []any{id, later, "sleep", "s", ts, 1, 0, nil, nil, false}},
		"child ended":      {sqlChildEnded, []any{id, "s", "children:s"}},
		"fan-in children":  {sqlFanInChildren, []any{id, "s"}},
		"claim chosen":     {sqlClaimChosen, []any{ts, ids, "w", later}},
		"rescue":           {sqlRescue, []any{later, 100, "lost"}},
		"prune":            {sqlPruneExecutions, []any{later, 100}},
		"delete tenant":    {sqlDeleteTenant, []any{"acme"}},
		"delete execution": {sqlDeleteExecution, []any{id}},
		"event match":      {sqlEventMatch, []any{"acme", "n1", nil, id, ts, nil}},
		"event match key":  {sqlEventMatch, []any{"acme", "n1", nil, id, ts, "k1"}},
		"event resume":     {sqlEventResume, []any{ids, "{null}", id, ts}},
		"event consume":    {sqlConsumeEvent, []any{id, id}},
		"prune events":     {sqlPruneEvents, []any{ts, 100}},
		"event waiters":    {sqlEventWaiters, []any{"acme", "event:n1", ts, nil}},
	}
}

// SetAfterClaim makes s call f with the executions each Claim leased, right
// after the claim commits and before it reads their journals, for tests
// that change them in between (a force delete).
func SetAfterClaim(s *Store, f func(ids []string)) { s.afterClaim = f }
