package postgres

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/latch-run/latch/store"
)

// The set-based statements of the hot operations (group.go). Each takes one
// array per input column, unnests them WITH ORDINALITY (n, 1-based, names
// the operation) and answers rows carrying n.

// sqlAdmitMany admits single submissions, each as if alone:
//
//  1. every dedup key is bound (ON CONFLICT DO NOTHING: the unique index
//     decides), in (tenant, key) order so that concurrent groups wait for
//     each other in one order; a submission whose key is taken admits
//     nothing and is answered admitted = false (its caller reads what the
//     key maps to, or runs the transaction path if it expired); a key
//     named twice in one group is bound by the first;
//  2. each tenant takes the units its new executions need from one quota
//     shard no other transaction holds (SKIP LOCKED);
//  3. the executions are inserted.
//
// A later submission of the group with a key named before is not in the
// arrays: it is answered from the first (buildAdmit). If that one creates
// the execution and the later one asks for the same (sameRequest), its hit
// is counted in the insert: $19 the hits, $20 the time of the latest (NULL,
// the array or an element, for none). $18 are the trace parents.
//
// If a tenant finds no shard with enough units at hand, latch_abort rolls
// the whole statement back (keys included) and each submission runs alone,
// then if need be as a transaction that waits (admitTx). A submission for
// an unknown tenant admits nothing.
//
// $17 strict is for one Admit of several items, which commits all or
// nothing (admitKeyed): it aborts unless every submission is admitted, and
// the batch is then decided by admitTx. The caller gives each key once
// ($3): later items with an earlier item's key are answered from the
// earlier one.
const sqlAdmitMany = `
WITH u AS (
    SELECT * FROM unnest($1::text[], $2::uuid[], $3::text[], $4::timestamptz[], $5::text[], $6::text[],
        $7::int[], $8::text[], $9::text[], $10::int[], $11::text[], $12::text[], $13::int[], $14::int[],
        $15::text[], $16::timestamptz[], $18::text[], $19::int[], $20::timestamptz[])
    WITH ORDINALITY AS u(tenant, id, dedup_key, now, kind, queue, priority, status, ckey, climit,
        rkey, payload, max_attempts, timeout_seconds, schedule, run_at, trace_parent, hits, last_hit, n)
), known AS (
    SELECT u.*, t.dedup_ttl FROM u JOIN latch_tenants t ON t.name = u.tenant
), dk AS (
    INSERT INTO latch_dedup_keys (tenant, dedup_key, execution_id, expires_at)
    SELECT tenant, dedup_key, id, now + (dedup_ttl / 1000) * interval '1 microsecond'
    FROM known WHERE dedup_key IS NOT NULL
    ORDER BY tenant, dedup_key, n
    ON CONFLICT DO NOTHING
    RETURNING execution_id
), need AS (
    SELECT * FROM known WHERE dedup_key IS NULL OR id IN (SELECT execution_id FROM dk)
), g AS (
    SELECT tenant, count(*) AS units FROM need GROUP BY tenant
), tok AS (
    UPDATE latch_quota_shards s SET free = s.free - g.units
    FROM g CROSS JOIN LATERAL (
        SELECT c.shard FROM latch_quota_shards c
        WHERE c.tenant = g.tenant AND c.free >= g.units
        ORDER BY c.shard LIMIT 1 FOR UPDATE SKIP LOCKED) f
    WHERE s.tenant = g.tenant AND s.shard = f.shard
    RETURNING s.tenant
), ex AS (
    INSERT INTO latch_executions (id, tenant, kind, queue, priority, status, dedup_key,
        concurrency_key, concurrency_limit, rate_key, payload, max_attempts, timeout_seconds,
        schedule, created_at, run_at, trace_parent, dedup_hits, last_dedup_hit_at, stored_bytes)
    SELECT id, tenant, kind, queue, priority, status, dedup_key, ckey, climit, rkey, payload,
        max_attempts, timeout_seconds, schedule, now, run_at, trace_parent, coalesce(hits, 0), last_hit,
        octet_length(payload)
    FROM need WHERE tenant IN (SELECT tenant FROM tok)
    RETURNING id
)
SELECT u.n, u.id IN (SELECT id FROM ex),
    CASE WHEN (SELECT count(*) FROM tok) < (SELECT count(*) FROM g)
         THEN latch_abort('no quota shard with enough units at hand')
         WHEN $17 AND (SELECT count(*) FROM ex) < (SELECT count(*) FROM u)
         THEN latch_abort('a submission of the group was not admitted') END
FROM u`

// The fenced operations (I5): each changes an execution only while it is
// running under the given lease token with a lease that has not expired at
// the operation's now, and belongs to the given tenant ("" = any). The fence
// is the UPDATE's WHERE clause, so the check and the change are one step: a
// concurrent change (a rescue, a force delete, another call with the same
// token) is waited for and the fence re-checked on the row's newest version.
//
// In a group (sqlHeartbeatMany, the Many end-of-attempt statements) the
// rows are first locked with SKIP LOCKED (sqlFenceLocked) and only those
// are changed: a group never waits for an execution row, since it may hold
// a quota shard and the storage row by then (the admissions go first), and
// a transaction that holds an execution row may wait for those (doc.go,
// "Lock order"). An operation that a group left unanswered (its row held
// elsewhere, its fence failed, or, for Complete, Fail and Release, an
// execution of a family) runs again alone, waiting for the row: a
// Heartbeat as sqlHeartbeatAlone (Store.run), an end of attempt as
// endAttemptTx (endAttempt), which also takes the family's locks.
const (
	sqlFenceInputs = `$1::uuid[], $2::uuid[], $3::text[], $4::timestamptz[]`
	sqlFenceNames  = `id, tok, tenant, now`
	sqlFence       = `x.id = u.id AND x.status = 'running' AND x.lease_token = u.tok
      AND (u.tenant = '' OR x.tenant = u.tenant) AND x.lease_expires_at >= u.now`

	// sqlFenceLocked is the CTE l, the fenced rows no other transaction
	// holds, locked; sqlFenceHeld limits a change to them.
	// sqlFenceLockedNoFamily is l without the executions of a family (a
	// child, or a parent), which a group neither locks nor changes.
	sqlFenceLocked         = sqlFenceLockedOf + sqlFenceLockedEnd
	sqlFenceLockedNoFamily = sqlFenceLockedOf + sqlNoFamily + sqlFenceLockedEnd
	sqlFenceLockedOf       = `, l AS MATERIALIZED (
    SELECT x.id FROM u JOIN latch_executions x ON ` + sqlFence
	sqlFenceLockedEnd = `
    FOR NO KEY UPDATE OF x SKIP LOCKED
)`
	sqlNoFamily  = ` AND x.parent_id IS NULL AND x.children = 0`
	sqlFenceHeld = ` AND x.id = ANY(ARRAY(SELECT id FROM l))`

	// Heartbeat: u.expires, the new expiry. sqlHeartbeatMany is a group's
	// (SKIP LOCKED), sqlHeartbeatAlone waits for the row.
	sqlHeartbeatInputs = `
WITH u AS (
    SELECT * FROM unnest(` + sqlFenceInputs + `, $5::timestamptz[])
    WITH ORDINALITY AS u(` + sqlFenceNames + `, expires, n)
)`
	sqlHeartbeatUpdate = `
UPDATE latch_executions x SET lease_expires_at = u.expires
FROM u WHERE ` + sqlFence
	sqlHeartbeatMany  = sqlHeartbeatInputs + sqlFenceLocked + sqlHeartbeatUpdate + sqlFenceHeld + sqlHeartbeatReturning
	sqlHeartbeatAlone = sqlHeartbeatInputs + sqlHeartbeatUpdate + sqlHeartbeatReturning

	sqlHeartbeatReturning = `
RETURNING u.n, x.cancel_requested`

	// Complete: u.result (NULL = none). A requested cancel wins: the
	// execution ends cancelled, its result kept. A success clears the error
	// an earlier attempt left.
	sqlCompleteStatus = `CASE WHEN x.cancel_requested THEN 'cancelled' ELSE 'succeeded' END`
	sqlCompleteSet    = `
    status = ` + sqlCompleteStatus + `,
    error = CASE WHEN x.cancel_requested THEN x.error END,
    result = u.result, finished_at = u.now,
    stored_bytes = x.stored_bytes + coalesce(octet_length(u.result), 0),
    lease_token = NULL, worker_id = NULL, lease_expires_at = NULL, resume = false`

	// Fail: u.retry wanted, u.run_at of the retry, u.error (NULL = keep).
	// Cancelled if requested; queued again (scheduled if run_at is later than
	// now) while attempts remain and a retry is wanted; else failed.
	sqlFailStatus = `CASE WHEN x.cancel_requested THEN 'cancelled'
                  WHEN u.retry AND x.attempt < x.max_attempts
                  THEN CASE WHEN u.run_at > u.now THEN 'scheduled' ELSE 'queued' END
                  ELSE 'failed' END`
	sqlFailSet = `
    status = ` + sqlFailStatus + `,
    run_at = CASE WHEN NOT x.cancel_requested AND u.retry AND x.attempt < x.max_attempts
                  THEN u.run_at ELSE x.run_at END,
    finished_at = CASE WHEN x.cancel_requested OR NOT (u.retry AND x.attempt < x.max_attempts)
                       THEN u.now END,
    error = coalesce(u.error, x.error),
    stored_bytes = x.stored_bytes + coalesce(octet_length(u.error), 0),
    lease_token = NULL, worker_id = NULL, lease_expires_at = NULL, resume = false`

	// Release: queued again at once, or cancelled if requested. The attempt
	// still counts as a start, unless the handler never ran (u.unstarted):
	// then the claim is undone, a resume's included (it counted no start
	// and stays a resume).
	sqlReleaseStatus = `CASE WHEN x.cancel_requested THEN 'cancelled' ELSE 'queued' END`
	sqlReleaseSet    = `
    status = ` + sqlReleaseStatus + `,
    attempt = CASE WHEN u.unstarted AND NOT x.resume THEN x.attempt - 1 ELSE x.attempt END,
    resume = u.unstarted AND x.resume AND NOT x.cancel_requested,
    run_at = CASE WHEN x.cancel_requested THEN x.run_at ELSE u.now END,
    finished_at = CASE WHEN x.cancel_requested THEN u.now END,
    lease_token = NULL, worker_id = NULL, lease_expires_at = NULL`

	// The quota units of executions that became terminal go back, per
	// tenant, to a shard no other transaction holds. If a tenant finds none
	// (all held, or the quota frozen), latch_abort rolls the statement back
	// and the operation runs as a transaction that can wait (endAttemptTx).
	// The final SELECT reads re, the runs' CTE (sqlEndRunsMany), so that it
	// runs.
	sqlGiveBackMany = `
), g AS (
    SELECT tenant, count(*) AS units FROM e
    WHERE status IN ('succeeded', 'failed', 'cancelled') GROUP BY tenant
), q AS (
    UPDATE latch_quota_shards s SET free = s.free + g.units
    FROM g CROSS JOIN LATERAL (
        SELECT c.shard FROM latch_quota_shards c
        WHERE c.tenant = g.tenant AND c.free >= 0
        ORDER BY c.shard LIMIT 1 FOR UPDATE SKIP LOCKED) f
    WHERE s.tenant = g.tenant AND s.shard = f.shard
    RETURNING 1
)
SELECT e.*, CASE WHEN (SELECT count(*) FROM q) < (SELECT count(*) FROM g)
                 THEN latch_abort('no quota shard at hand') END
FROM e, re`
)

// finishMode is where an end-of-attempt statement runs.
type finishMode int

const (
	// finishGrouped: in a group, passing the rows other transactions hold
	// (sqlFenceLocked), giving quota units back (sqlGiveBackMany).
	finishGrouped finishMode = iota
	// finishAlone: alone (its group rolled back), waiting for the row,
	// giving quota units back.
	finishAlone
	// finishInTx: in endAttemptTx, which has locked the family's rows (its
	// probe, the execution's) and given the units back before: the change
	// comes last, with the storage count its trigger moves.
	finishInTx
	numFinishModes
)

// finishSQL is one end-of-attempt kind's statements: the change by
// finishMode, and endAttemptTx's probe.
type finishSQL struct {
	change [numFinishModes]string
	probe  string
}

// newFinishSQL builds an end-of-attempt kind's statements: the fenced
// UPDATE for inputs (extra array parameters after the fence's four, and
// their names) with set, ending the run under the lease (runs, from
// endRunsSQL) and answering n, the execution after the change and its run
// number; status is the expression set gives status, which the probe
// evaluates on the row it locks, answering the tenant, whether the change
// ends the execution and how many children it spawned.
//
// The statements that give quota units back themselves (finishGrouped,
// finishAlone) leave out the executions of a family (a child, or a
// parent): their ends lock the family's rows in its order and touch them
// (family.go), which endAttemptTx does; they are answered as if the fence
// had not held, and endAttempt sends them there.
func newFinishSQL(inputs, names, status, set, runs string) finishSQL {
	with := `
WITH u AS (
    SELECT * FROM unnest(` + sqlFenceInputs + inputs + `)
    WITH ORDINALITY AS u(` + sqlFenceNames + names + `, n)
)`
	update := func(locked, held, end string) string {
		return with + locked + `, e AS (
    UPDATE latch_executions x SET ` + set + `
    FROM u WHERE ` + sqlFence + held + `
    RETURNING u.n, ` + columns("x") + `, x.runs AS run` + runs + end
	}
	inTx := `
)
SELECT e.*, NULL::boolean FROM e, re`
	var f finishSQL
	f.change[finishGrouped] = update(sqlFenceLockedNoFamily, sqlFenceHeld+sqlNoFamily, sqlGiveBackMany)
	f.change[finishAlone] = update("", sqlNoFamily, sqlGiveBackMany)
	f.change[finishInTx] = update("", "", inTx)
	f.probe = with + `
SELECT x.tenant, (` + status + `) IN ('succeeded', 'failed', 'cancelled'), x.children
FROM u JOIN latch_executions x ON ` + sqlFence + `
FOR NO KEY UPDATE OF x`
	return f
}

// The runs' ends: a Complete succeeded, a Fail failed with its error, a
// Release released, unless the execution ended cancelled.
var (
	sqlCompleteRuns = endRunsSQL(store.RunSucceeded, `NULL`)
	sqlFailRuns     = endRunsSQL(store.RunFailed, `CASE WHEN e.status <> 'cancelled' THEN u.error END`)
	sqlReleaseRuns  = endRunsSQL(store.RunReleased, `NULL`)
)

// finishStatements are the end-of-attempt statements of Complete, Fail and
// Release.
var finishStatements = map[opKind]finishSQL{
	kindComplete: newFinishSQL(`, $5::text[]`, `, result`, sqlCompleteStatus, sqlCompleteSet, sqlCompleteRuns),
	kindFail: newFinishSQL(`, $5::boolean[], $6::timestamptz[], $7::text[]`, `, retry, run_at, error`,
		sqlFailStatus, sqlFailSet, sqlFailRuns),
	kindRelease: newFinishSQL(`, $5::boolean[]`, `, unstarted`, sqlReleaseStatus, sqlReleaseSet, sqlReleaseRuns),
}

// admitOp is one submission for sqlAdmitMany: its input, and the slot
// its group's statement answers in (out), which the generic grouping
// needs: Store.run returns only an error. admitOne reads out once the
// group has run; nothing else does (admitKeyed needs only the commit).
type admitOp struct {
	tenant string
	e      *store.Execution
	t      time.Time
	strict bool // one Admit of several items: all or nothing (sqlAdmitMany $17)

	out admitOutcome
}

// admitOutcome is what the statement decided for one admitOp; the zero
// value is "admitted nothing" (an unknown tenant, or an aborted group).
type admitOutcome struct {
	created bool            // its execution was inserted
	same    *store.Admitted // an earlier op of the statement with its key created it: the answer
	answer  *store.Admitted // its key was taken: the answer of sqlHitKeys (nil: not decided)
	looked  bool            // sqlHitKeys ran for it after the commit
	err     error           // sqlHitKeys's outcome for it is unknown
}

// heartbeatOp is one Heartbeat for sqlHeartbeatMany.
type heartbeatOp struct {
	fence
	expires time.Time
	found   bool // out: the fence held
	cancel  bool // out
}

// finishOp is one Complete, Fail or Release.
type finishOp struct {
	fence
	op        opKind
	result    *string          // Complete
	retry     bool             // Fail
	runAt     time.Time        // Fail
	errMsg    *string          // Fail
	unstarted bool             // Release
	exec      *store.Execution // out: nil if the fence did not hold
	family    []string         // out (endAttemptTx): the other executions its end changed
}

// fence is what a fenced operation names.
type fence struct {
	id, token uuid.UUID
	tenant    string
	now       time.Time
}

func (*admitOp) kind() opKind     { return kindAdmit }
func (*heartbeatOp) kind() opKind { return kindHeartbeat }
func (o *finishOp) kind() opKind  { return o.op }

// unanswered reports a Heartbeat that its group did not change: its lease
// is lost, or another transaction held its row (sqlFenceLocked). Store.run
// runs it again alone, which waits for the row and decides. (A Complete,
// Fail or Release left unanswered is endAttempt's: endAttemptTx.)
func (o *heartbeatOp) unanswered() bool { return !o.found }

// build makes the statement for ops, all of one kind, and resets their
// outputs: an operation whose group was rolled back, or left it
// unanswered, is built again alone (grouped false).
func build(k opKind, ops []groupOp, grouped bool) statement {
	switch k {
	case kindAdmit:
		return buildAdmit(ops)
	case kindHeartbeat:
		return buildHeartbeat(byID(ops), grouped)
	case kindClaim:
		return buildClaim(ops)
	default:
		return buildFinish(k, byID(ops), pick(grouped, finishGrouped, finishAlone))
	}
}

// byID orders fenced operations by execution id, so that their statement
// (a nested loop over its arrays, on the primary key) locks the rows in
// id order, as every statement that locks several executions of a family
// locks them (family.go): a parent's row, older than its children's,
// before theirs. A group's statement waits for none of them (SKIP LOCKED);
// the order holds for the one that runs alone.
func byID(ops []groupOp) []groupOp {
	sorted := slices.Clone(ops)
	id := func(g groupOp) []byte {
		switch o := g.(type) {
		case *heartbeatOp:
			return o.id[:]
		case *finishOp:
			return o.id[:]
		}
		return nil
	}
	slices.SortStableFunc(sorted, func(a, b groupOp) int { return bytes.Compare(id(a), id(b)) })
	return sorted
}

// row returns the operation named by a result row's n.
func row[T groupOp](ops []groupOp, n int64) (T, error) {
	var zero T
	if n < 1 || int(n) > len(ops) {
		return zero, fmt.Errorf("postgres: result row for operation %d of %d", n, len(ops))
	}
	return ops[n-1].(T), nil
}

func buildAdmit(all []groupOp) statement {
	// One row per (tenant, key): a later op with a key already named is
	// decided with the first, as if it came just after it.
	leaders := map[[2]string]*admitOp{}
	var ops []groupOp
	followers := map[*admitOp]*admitOp{} // op -> the earlier op with its key
	hits := map[*admitOp]int{}           // a leader's followers that ask for the same; a follower's rank among them
	last := map[*admitOp]time.Time{}     // a leader's latest such follower's now
	strict := false
	for _, g := range all {
		o := g.(*admitOp)
		o.out = admitOutcome{}
		strict = strict || o.strict
		if key := o.e.DedupKey; key != "" {
			if l, ok := leaders[[2]string{o.tenant, key}]; ok {
				followers[o] = l
				if sameRequest(o.e, l.e) {
					hits[l]++
					hits[o], last[l] = hits[l], o.t
				}
				continue
			}
			leaders[[2]string{o.tenant, key}] = o
		}
		ops = append(ops, o)
	}
	k := len(ops)
	var (
		tenants, kinds, queues, statuses, payloads = make([]string, k), make([]string, k),
			make([]string, k), make([]string, k), make([]string, k)
		keys, ckeys, rkeys, schedules = make([]*string, k), make([]*string, k), make([]*string, k), make([]*string, k)
		ids                           = make([][16]byte, k)
		nows, runAts                  = make([]time.Time, k), make([]time.Time, k)
		prios, attempts, timeouts     = make([]int, k), make([]int, k), make([]int, k)
		climits                       = make([]*int, k)
		traces                        = make([]*string, k)
		hitCounts                     []int        // nil (NULL) unless a leader has hits
		lastHits                      []*time.Time // likewise
	)
	for i, g := range ops {
		o := g.(*admitOp)
		e := o.e
		tenants[i], ids[i], keys[i], nows[i] = o.tenant, uuid.MustParse(e.ID), strPtr(e.DedupKey), o.t
		kinds[i], queues[i], prios[i], statuses[i] = e.Kind, e.Queue, e.Priority, string(e.Status)
		ckeys[i], rkeys[i], payloads[i] = strPtr(e.ConcurrencyKey), strPtr(e.RateKey), string(e.Payload)
		attempts[i], timeouts[i], schedules[i], runAts[i] = e.MaxAttempts, e.TimeoutSeconds, strPtr(e.Schedule), e.RunAt
		traces[i] = strPtr(e.TraceParent)
		if h := hits[o]; h > 0 {
			if hitCounts == nil {
				hitCounts, lastHits = make([]int, k), make([]*time.Time, k)
			}
			at := last[o]
			hitCounts[i], lastHits[i] = h, &at
		}
		if e.ConcurrencyKey != "" {
			climits[i] = &e.ConcurrencyLimit
		}
	}
	return statement{
		sql: sqlAdmitMany,
		args: []any{tenants, ids, keys, nows, kinds, queues, prios, statuses, ckeys, climits,
			rkeys, payloads, attempts, timeouts, schedules, runAts, strict, traces, hitCounts, lastHits},
		read: func(rows pgx.Rows) error {
			var n int64
			var created bool
			var abort *bool
			_, err := pgx.ForEachRow(rows, []any{&n, &created, &abort}, func() error {
				o, err := row[*admitOp](ops, n)
				if err == nil {
					o.out.created = created
				}
				return err
			})
			for f, l := range followers {
				if !l.out.created {
					continue
				}
				a := dedupAnswer(f.e, l.e)
				if r := hits[f]; r > 0 {
					a = hitAnswer(l.e, r, f.t)
				}
				f.out.same = &a
			}
			return err
		},
		settle: func(ctx context.Context, q querier) { settleHits(ctx, q, all) },
	}
}

func buildHeartbeat(ops []groupOp, grouped bool) statement {
	ids, toks, tenants, nows, expires := fenceArrays(ops)
	for i, g := range ops {
		o := g.(*heartbeatOp)
		o.found, o.cancel = false, false
		expires[i] = o.expires
	}
	return statement{
		sql:  pick(grouped, sqlHeartbeatMany, sqlHeartbeatAlone),
		args: []any{ids, toks, tenants, nows, expires},
		read: func(rows pgx.Rows) error {
			var n int64
			var cancel bool
			_, err := pgx.ForEachRow(rows, []any{&n, &cancel}, func() error {
				o, err := row[*heartbeatOp](ops, n)
				if err == nil {
					o.found, o.cancel = true, cancel
				}
				return err
			})
			return err
		},
	}
}

// buildFinish makes a Complete, Fail or Release statement to run as mode
// says (finishMode).
func buildFinish(k opKind, ops []groupOp, mode finishMode) statement {
	ids, toks, tenants, nows, _ := fenceArrays(ops)
	args := []any{ids, toks, tenants, nows}
	switch k {
	case kindComplete:
		results := make([]*string, len(ops))
		for i, g := range ops {
			results[i] = g.(*finishOp).result
		}
		args = append(args, results)
	case kindFail:
		retry, runAt, errMsg := make([]bool, len(ops)), make([]time.Time, len(ops)), make([]*string, len(ops))
		for i, g := range ops {
			o := g.(*finishOp)
			retry[i], runAt[i], errMsg[i] = o.retry, o.runAt, o.errMsg
		}
		args = append(args, retry, runAt, errMsg)
	case kindRelease:
		unstarted := make([]bool, len(ops))
		for i, g := range ops {
			unstarted[i] = g.(*finishOp).unstarted
		}
		args = append(args, unstarted)
	}
	for _, g := range ops {
		g.(*finishOp).exec = nil
	}
	return statement{
		sql:  finishStatements[k].change[mode],
		args: args,
		read: func(rows pgx.Rows) error {
			defer rows.Close()
			for rows.Next() {
				var n int64
				var run int
				var abort *bool
				e, err := scanExecution(wrapped{rows, []any{&n}, []any{&run, &abort}})
				if err != nil {
					return err
				}
				o, err := row[*finishOp](ops, n)
				if err != nil {
					return err
				}
				o.exec = e
			}
			return rows.Err()
		},
	}
}

func fenceArrays(ops []groupOp) (ids, toks [][16]byte, tenants []string, nows, extra []time.Time) {
	k := len(ops)
	ids, toks, tenants, nows, extra = make([][16]byte, k), make([][16]byte, k), make([]string, k),
		make([]time.Time, k), make([]time.Time, k)
	for i, g := range ops {
		var f *fence
		switch o := g.(type) {
		case *heartbeatOp:
			f = &o.fence
		case *finishOp:
			f = &o.fence
		}
		ids[i], toks[i], tenants[i], nows[i] = f.id, f.token, f.tenant, f.now
	}
	return ids, toks, tenants, nows, extra
}

// wrapped scans some columns before and after the ones its caller asks for.
type wrapped struct {
	row           pgx.Row
	before, after []any
}

func (w wrapped) Scan(dest ...any) error {
	all := make([]any, 0, len(w.before)+len(dest)+len(w.after))
	all = append(append(append(all, w.before...), dest...), w.after...)
	return w.row.Scan(all...)
}

func pick[T any](cond bool, a, b T) T {
	if cond {
		return a
	}
	return b
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// sqlClaimMany leases ready executions for several claims with the same
// filters in one statement: the first sum(max) candidates in fair claim
// order (latch_claim_candidates: tenants take turns, I12), locked with FOR
// UPDATE SKIP LOCKED (two claimers never lease one attempt and never wait
// for each other; a candidate changed since the snapshot is re-checked on
// its newest version and skipped if no longer ready), dealt out in that
// order: the first claim's max to it, and so on. A candidate counts as
// ready if it is at the earliest now of the claims (one claim alone: its
// own now). If any candidate has a limit — a concurrency key, or a rate key
// its tenant has a rate limit for — nothing is leased and limited > 0 (one
// row of NULLs): the limit must be decided under its lock, in claimTx.
//
// The run of each lease is recorded in the same statement, by one INSERT
// for them all (sqlRecordRuns). The tenants served get their new turns in
// the same statement too: the
// function moves them (its move argument), knowing what this statement
// leases: its first sum(max) candidates by ord, or none if one is limited.
//
// The candidates come from latch_claim_candidates (migrations 5, 11), whose
// plan walks each tenant's queue index in claim order whatever the table's
// statistics say. Its queries take their own snapshots, later than this
// statement's: a candidate this statement's snapshot does not show yet
// (committed in between) is locked but not leased, and stays ready, as if
// another claimer had held it; one it shows older is leased in its newest
// version, which the candidate's lock keeps as the function read it. The
// executions are then found by their ids (= ANY, the primary key), never
// by a join the planner could turn into a scan of the whole table.
//
//	$1 max, $2 worker, $3 now, $4 lease expiry, one element per claim;
//	$5 tenant ('' = any), $6 queues, $7 kinds (NULL or empty = any),
//	$8 the excluded tenants (NULL = none: ClaimParams.ExcludeTenants)
const sqlClaimMany = `
WITH r AS (
    SELECT r.*, sum(r.max) OVER (ORDER BY r.n) - r.max AS after, sum(r.max) OVER (ORDER BY r.n) AS upto
    FROM unnest($1::int[], $2::text[], $3::timestamptz[], $4::timestamptz[])
    WITH ORDINALITY AS r(max, worker, now, expires, n)
), c AS MATERIALIZED (
    SELECT * FROM latch_claim_candidates((SELECT min(now) FROM r), (SELECT sum(max) FROM r)::bigint,
        $5::text, $6::text[], $7::text[], true, $8::text[])
), a AS MATERIALIZED (
    SELECT o.id, o.k, r.n, r.worker, r.now, r.expires
    FROM (SELECT c.id, row_number() OVER (ORDER BY c.ord) AS k FROM c
          WHERE NOT EXISTS (SELECT 1 FROM c WHERE c.limited)) o
    JOIN r ON o.k > r.after AND o.k <= r.upto
), u AS (
    UPDATE latch_executions x SET status = 'running', attempt = x.attempt + ` + sqlStart + `,
        lease_token = gen_random_uuid(), worker_id = a.worker, lease_expires_at = a.expires,
        started_at = a.now, runs = x.runs + 1
    FROM a WHERE x.id = ANY(ARRAY(SELECT id FROM a)) AND x.id = a.id
    RETURNING a.n, a.k, ` + sqlClaimReturning + `, ` + sqlRunReturning + sqlRecordRuns + `
SELECT k.limited, u.n, u.k, ` + sqlClaimed + `
FROM (SELECT count(*) FILTER (WHERE limited) AS limited FROM c) k LEFT JOIN u ON true CROSS JOIN rt`

// sqlTurns (claimTx's, as latch_claim_candidates does for sqlClaimMany)
// moves the turns of the tenants in s (tenant, i): s.i, from 1,
// is the order they were last served in. The new turns are past every turn
// given before: from the sequence latch_turns, one value per statement,
// times 2^20 (room for that many tenants served by one statement) plus
// s.i. A tenant row another transaction holds is skipped (FOR NO KEY
// UPDATE SKIP LOCKED): that is a concurrent claim serving the tenant and
// moving its turn just as far, so no claim waits for another on a tenant
// row. A statement that served one tenant only, whose turn is already past
// every other's (turns given are never equal; only the first, 0, is
// shared), moves nothing: the common case of one busy tenant costs no
// write.
const sqlTurns = `UPDATE latch_tenants t SET turn = (SELECT nextval('latch_turns')) * 1048576 + s.i
    FROM s WHERE t.name = s.tenant AND t.name IN (
        SELECT l.name FROM latch_tenants l JOIN s ON s.tenant = l.name
        WHERE NOT ((SELECT count(*) FROM s) = 1 AND l.turn > 0
                   AND l.turn = (SELECT max(m.turn) FROM latch_tenants m))
        FOR NO KEY UPDATE OF l SKIP LOCKED)`

// claimOp is one Claim for sqlClaimMany.
type claimOp struct {
	p       *store.ClaimParams
	max     int
	now     time.Time
	expires time.Time

	// out
	leases  []claimed
	limited bool // a candidate had a limit: nothing was leased (claimTx decides)
}

func (*claimOp) kind() opKind { return kindClaim }

// signature names the filters: claims share a statement only with the
// same filters.
func (o *claimOp) signature() string {
	return fmt.Sprintf("%q|%q|%q|%q", o.p.Tenant, o.p.Queues, o.p.Kinds, o.p.ExcludeTenants)
}

func buildClaim(ops []groupOp) statement {
	k := len(ops)
	maxes, workers, nows, expires := make([]int, k), make([]string, k), make([]time.Time, k), make([]time.Time, k)
	for i, g := range ops {
		o := g.(*claimOp)
		o.leases, o.limited = nil, false
		maxes[i], workers[i], nows[i], expires[i] = o.max, o.p.WorkerID, o.now, o.expires
	}
	p := ops[0].(*claimOp).p
	return statement{
		sql:  sqlClaimMany,
		args: []any{maxes, workers, nows, expires, p.Tenant, p.Queues, p.Kinds, excluded(p)},
		read: func(rows pgx.Rows) error {
			defer rows.Close()
			for rows.Next() {
				var limited int
				var n, k *int64
				c, err := scanClaimed(rows, &limited, &n, &k)
				if err != nil {
					return err
				}
				if limited > 0 {
					for _, g := range ops {
						g.(*claimOp).limited = true
					}
				}
				if c == nil {
					continue
				}
				c.ord = *k
				o, err := row[*claimOp](ops, *n)
				if err != nil {
					return err
				}
				o.leases = append(o.leases, *c)
			}
			return rows.Err()
		},
	}
}
