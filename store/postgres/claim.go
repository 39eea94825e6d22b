package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latch-run/latch/store"
)

// Claim statements. $1 is now; {filters} is replaced by claimFilters.
// sqlReady and sqlRoom have a copy in latch_claim_candidates and
// latch_tenant_candidates (migrations 5, 11), which sqlClaimMany and
// claimTx's first round take their candidates from:
// a change to either is a change to both, the function's by a new
// migration.
const (
	// sqlReady: execution e is ready at $1 (queued, whatever its run_at, or
	// scheduled and due).
	sqlReady = `e.status IN ('queued', 'scheduled') AND (e.status = 'queued' OR e.run_at <= $1)`

	// sqlRoom: e has no concurrency key, or its key has room within its
	// tenant (keys are scoped per tenant) in the statement's snapshot, which
	// shows the transaction's own leases too. The authoritative count is
	// taken under the key's lock (claimTx).
	sqlRoom = `(e.concurrency_key IS NULL OR e.concurrency_limit > (SELECT count(*) FROM latch_executions k
       WHERE k.status = 'running' AND k.tenant = e.tenant AND k.concurrency_key = e.concurrency_key))`

	// claimTx's first round: up to about $2 candidates in fair claim order
	// (latch_claim_candidates, which locks them), $3 tenant, $4 queues, $5
	// kinds, $6 excluded tenants as sqlClaimMany takes them.
	sqlClaimTxFirst = `
WITH c AS MATERIALIZED (
    SELECT * FROM latch_claim_candidates($1, $2, $3::text, $4::text[], $5::text[], false, $6::text[])
)
SELECT e.id::text, e.tenant, e.concurrency_key, e.concurrency_limit, e.rate_key, c.ord
FROM c JOIN latch_executions e ON e.id = c.id
WHERE e.id = ANY(ARRAY(SELECT id FROM c))
ORDER BY c.ord`

	// claimTx's later rounds: ready executions of the tenants of the first
	// round (sqlClaimLaterRound), locked, skipping those another
	// transaction holds, in their tenant's claim order, the tenants taking
	// turns in the order of the first round ($3, their names). An execution
	// whose concurrency key is already at its limit is left out (sqlRoom),
	// so a backlog of blocked work cannot hide runnable work behind it. $2
	// is how many.
	sqlClaimTxLater = `
WITH c AS MATERIALIZED (
    SELECT e.id, e.tenant, e.concurrency_key, e.concurrency_limit, e.rate_key, e.priority, e.run_at
    FROM latch_executions e
    WHERE ` + sqlReady + `
      AND ` + sqlRoom + `
      AND e.tenant = ANY($3::text[])
      {filters}
    ORDER BY e.priority DESC, e.run_at, e.id
    LIMIT $2
    FOR UPDATE OF e SKIP LOCKED
)
SELECT c.id::text, c.tenant, c.concurrency_key, c.concurrency_limit, c.rate_key,
    (row_number() OVER (PARTITION BY c.tenant ORDER BY c.priority DESC, c.run_at, c.id) - 1)
        * cardinality($3::text[]) + array_position($3::text[], c.tenant) - 1 AS ord
FROM c ORDER BY ord`

	// sqlStart: what a claim adds to the attempt: one start, but none for a
	// resume of a flow (x.resume, which stays set while the run holds the
	// lease: see sqlReleaseSet).
	sqlStart = `CASE WHEN x.resume THEN 0 ELSE 1 END`

	// What a claim sets: $1 now, $3 worker, $4 lease expiry. A fresh random
	// token per attempt fences every later call (I5).
	// The claim also starts a run (runs.go).
	sqlClaimSet = `status = 'running', attempt = x.attempt + ` + sqlStart + `, lease_token = gen_random_uuid(),
    worker_id = $3, lease_expires_at = $4, started_at = $1, runs = x.runs + 1`

	// has_steps says whether the claim must read the execution's journal
	// (journals.go). The columns are named, so that a statement can return
	// them from its CTE u (sqlClaimed) and leave out sqlRunReturning's.
	sqlClaimReturning = `x.id::text AS id, x.tenant, x.kind, x.queue, x.payload, x.attempt, x.max_attempts,
    x.timeout_seconds, x.lease_token::text AS lease_token, x.has_steps, x.trace_parent, x.run_at`
	sqlClaimed = `u.id, u.tenant, u.kind, u.queue, u.payload, u.attempt, u.max_attempts,
    u.timeout_seconds, u.lease_token, u.has_steps, u.trace_parent, u.run_at`

	// The candidates of claimTx's later rounds ({filters} of the form
	// claimFilters renders, numbered from $%[1]d): not seen by an earlier
	// round, and only those the claim can decide without waiting for
	// another lock: no concurrency key, or one of the keys it locked; no
	// rate key, a rate key whose bucket it locked, or one without a limit.
	sqlClaimLaterRound = `
  AND e.id <> ALL($%[1]d::uuid[])
  AND (e.concurrency_key IS NULL
       OR (e.tenant, e.concurrency_key) IN (SELECT * FROM unnest($%[2]d::text[], $%[3]d::text[])))
  AND (e.rate_key IS NULL
       OR (e.tenant, e.rate_key) IN (SELECT * FROM unnest($%[4]d::text[], $%[5]d::text[]))
       OR NOT EXISTS (SELECT 1 FROM latch_rate_limits l WHERE l.tenant = e.tenant AND l.rate_key = e.rate_key))`

	// Lease what claimTx chose; its rows are already locked by it. Their
	// runs are recorded in the same statement (sqlRecordRuns).
	sqlClaimChosen = `
WITH u AS (
    UPDATE latch_executions x SET ` + sqlClaimSet + `
    WHERE x.id = ANY($2::text[]::uuid[])
    RETURNING ` + sqlClaimReturning + `, ` + sqlRunReturning + sqlRecordRuns + `
SELECT ` + sqlClaimed + ` FROM u, rt`

	// Running executions per (tenant, concurrency key); $1 and $2 are the
	// tenants and keys, pairwise.
	sqlCountRunning = `
SELECT tenant, concurrency_key, count(*) FROM latch_executions
WHERE status = 'running' AND concurrency_key = ANY($2::text[])
  AND (tenant, concurrency_key) IN (SELECT * FROM unnest($1::text[], $2::text[]))
GROUP BY tenant, concurrency_key`
)

// Claim implements store.Store. Executions without a limit are leased by
// one statement (sqlClaimMany), shared with concurrent claims of the same
// filters (group.go); when a candidate has a concurrency key or a rate key
// with a limit, the claim runs as a transaction that decides under the
// limits' locks (claimTx): it counts the key's running executions of the
// candidate's tenant under the (tenant, key) advisory lock (I4) and takes
// the bucket's tokens with its row locked (I7). Either way tenants take
// turns (I12): the candidates come in fair claim order from
// latch_claim_candidates (migrations 5, 12, 13), and the tenants served get new
// turns (latch_tenants.turn) in the same transaction. The excluded tenants
// (ExcludeTenants) are left out there, before any of their executions is
// read; claimTx's later rounds read only the first round's tenants.
func (s *Store) Claim(ctx context.Context, p *store.ClaimParams) (*store.ClaimResult, error) {
	if err := p.ValidateExclude(); err != nil {
		return nil, err
	}
	t := now(p.Now)
	maxN, lease := p.Bounds()
	expires := micro(t.Add(lease))
	op := &claimOp{p: p, max: maxN, now: t, expires: expires}
	if err := s.run(ctx, op); err != nil {
		return nil, fmt.Errorf("postgres: claim: %w", interpretError(err))
	}
	got := op.leases
	var retryAt time.Time
	var deferred int
	if op.limited {
		var err error
		if got, retryAt, deferred, err = s.claimTx(ctx, p, t, maxN, expires); err != nil {
			return nil, err
		}
	}
	return s.claimed(ctx, got, expires, retryAt, deferred)
}

// claimed finishes a claim that committed with the leases got (expiring
// at expires): it announces them, reads their journals and answers.
func (s *Store) claimed(ctx context.Context, got []claimed, expires, retryAt time.Time, deferred int) (*store.ClaimResult, error) {
	if len(got) > 0 {
		s.changes.announce()
	}
	if s.afterClaim != nil {
		ids := make([]string, len(got))
		for i, c := range got {
			ids[i] = c.lease.ExecutionID
		}
		s.afterClaim(ids)
	}
	got, err := s.readJournals(ctx, got)
	if err != nil {
		// The claim committed: its leases, which no worker gets, are
		// rescued once they expire.
		s.feed.PublishAll()
		return nil, fmt.Errorf("postgres: claim: %w", interpretError(err))
	}
	res := &store.ClaimResult{Leases: leasesInOrder(got, expires), RetryAt: retryAt, Deferred: deferred}
	return s.feed.Claimed(res, nil)
}

// excluded is the claim's excluded tenants as latch_claim_candidates
// takes them (migration 13): nil, SQL NULL, when there are none.
func excluded(p *store.ClaimParams) []string {
	if len(p.ExcludeTenants) == 0 {
		return nil
	}
	return p.ExcludeTenants
}

// claimFilters renders the tenant, queue and kind filters with parameters
// numbered from first, and their arguments.
func claimFilters(p *store.ClaimParams, first int) (string, []any) {
	var b strings.Builder
	var args []any
	add := func(format string, v any) {
		fmt.Fprintf(&b, format, first+len(args))
		args = append(args, v)
	}
	if p.Tenant != "" {
		add(" AND e.tenant = $%d", p.Tenant)
	}
	if len(p.Queues) > 0 {
		add(" AND e.queue = ANY($%d::text[])", p.Queues)
	}
	if len(p.Kinds) > 0 {
		add(" AND e.kind = ANY($%d::text[])", p.Kinds)
	}
	return b.String(), args
}

// claimed is one leased execution and its place in claim order.
type claimed struct {
	lease    store.Lease
	ord      int64
	hasSteps bool // its journal is not empty (readJournals)
}

// scanClaimed reads sqlClaimReturning's columns (nullable: sqlClaimMany
// answers one row of NULLs when it leased nothing).
func scanClaimed(row pgx.Row, prefix ...any) (*claimed, error) {
	var (
		id, tenant, kind, queue, payload, token *string
		attempt, maxAttempts, timeout           *int
		hasSteps                                *bool
		trace                                   *string
		runAt                                   *time.Time
	)
	dest := append(prefix, &id, &tenant, &kind, &queue, &payload, &attempt, &maxAttempts,
		&timeout, &token, &hasSteps, &trace, &runAt)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	if id == nil {
		return nil, nil
	}
	return &claimed{
		lease: store.Lease{
			ExecutionID: *id, Tenant: *tenant, Kind: *kind, Queue: *queue,
			Payload: json.RawMessage(*payload), Attempt: *attempt, MaxAttempts: *maxAttempts,
			TimeoutSeconds: *timeout, Token: *token, TraceParent: derefOr(trace, ""),
			ReadyAt: derefOr(runAt, time.Time{}).UTC(),
		},
		hasSteps: *hasSteps,
	}, nil
}

// derefOr is *p, or def when p is nil.
func derefOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// leasesInOrder returns the leases in claim order, as Claim promises
// (RETURNING has no order).
func leasesInOrder(cs []claimed, expires time.Time) []store.Lease {
	slices.SortFunc(cs, func(a, b claimed) int { return cmp.Compare(a.ord, b.ord) })
	out := make([]store.Lease, len(cs))
	for i, c := range cs {
		out[i] = c.lease
		out[i].ExpiresAt = expires
	}
	return out
}

// claimTx claims when candidates carry limits, in one transaction, in
// rounds. A round locks its candidates (SKIP LOCKED) and decides them with
// the tenants taking turns (choose): the concurrency key first (a candidate
// blocked by it is passed over, takes no token and costs its tenant no
// turn), then the rate limit (store.RateLimit's GCRA on the bucket's TAT);
// it leases what it chose and defers the ready executions of every bucket
// that refused a start (deferRefused). The claim ends when it has Max
// leases or has seen every ready execution; a later round looks further
// only because an earlier one deferred or passed over what it found, and
// begins with the tenant whose turn found no candidate left in a read that
// may have been cut short. The moved TATs are written before the commit.
//
// Locks: the first round takes, after its candidates, each of their (tenant,
// concurrency key) pairs (advisory locks, in (tenant, key) order), and only
// then counts the keys' running executions, in a statement whose snapshot
// is taken after the locks and so sees every claim of those keys that held
// them before; then the buckets of their (tenant, rate key) pairs (row
// locks, in (tenant, key) order), whose TATs it reads as the last claim
// that held them left them. Only claims raise a key's running count or move
// a TAT, and they do so under these locks, so the limits hold (I4, I7).
// Later rounds wait for no lock: they consider only candidates whose keys
// and buckets the claim already holds, or that have none (a later lock
// taken out of order could deadlock with another claimer). deferred counts
// the executions the claim deferred (ClaimResult.Deferred).
func (s *Store) claimTx(ctx context.Context, p *store.ClaimParams, t time.Time, maxN int, expires time.Time) (
	leases []claimed, retryAt time.Time, deferred int, err error) {
	err = s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) (bool, error) {
		c := &claimRun{p: p, t: t, expires: expires, running: map[pair]int{}}
		leases, retryAt, deferred = nil, time.Time{}, 0
		for round := 0; len(leases) < maxN; round++ {
			batch := (maxN-len(leases))*2 + 8 // a few spare candidates let the limits skip some
			cands, err := c.candidates(ctx, tx, round, batch)
			if err != nil {
				return false, err
			}
			if round == 0 {
				if err := c.lockLimits(ctx, tx, cands); err != nil {
					return false, err
				}
			}
			full := len(cands) >= batch // some tenant's read may have been cut short
			chosen, considered := c.choose(cands, maxN-len(leases), full, round == 0)
			got, err := c.lease(ctx, tx, chosen)
			if err != nil {
				return false, err
			}
			leases = append(leases, got...)
			at, n, err := deferRefused(ctx, tx, p, t, c.buckets)
			if err != nil {
				return false, err
			}
			deferred += n
			if !at.IsZero() && (retryAt.IsZero() || at.Before(retryAt)) {
				retryAt = at
			}
			if !full {
				break // every ready execution was seen
			}
			c.seen = append(c.seen, considered...)
		}
		if err := writeBuckets(ctx, tx, c.buckets); err != nil {
			return false, err
		}
		if err := moveTurns(ctx, tx, leases); err != nil {
			return false, err
		}
		return len(leases) > 0, nil
	})
	if err != nil {
		return nil, time.Time{}, 0, fmt.Errorf("postgres: claim: %w", err)
	}
	return leases, retryAt, deferred, nil
}

// claimRun is one claimTx attempt.
type claimRun struct {
	p       *store.ClaimParams
	t       time.Time
	expires time.Time

	keys    []pair           // the concurrency keys locked, in lock order
	running map[pair]int     // running executions per locked key, this claim's included
	buckets map[pair]*bucket // the rate limits locked
	tenants []string         // the first round's tenants, in turn order
	seen    []string         // the candidates of earlier rounds
	ord     map[string]int64 // each chosen candidate's place in claim order
	lastOrd int64            // the last place given (choose)
}

// candidate is a ready execution a claim holds (FOR UPDATE).
type candidate struct {
	id      string
	tenant  string
	key     *string // concurrency key
	limit   *int
	rateKey *string
	ord     int64 // its place in the order the round read it in
}

// candidates locks and reads up to about n ready executions in claim order:
// the first round from latch_claim_candidates, in fair claim order; later
// rounds (sqlClaimLaterRound) from the first round's tenants, taking turns
// in the first round's turn order.
func (c *claimRun) candidates(ctx context.Context, tx pgx.Tx, round, n int) ([]candidate, error) {
	var rows pgx.Rows
	var err error
	if round == 0 {
		rows, err = tx.Query(ctx, sqlClaimTxFirst, c.t, n, c.p.Tenant, c.p.Queues, c.p.Kinds, excluded(c.p))
	} else {
		if len(c.tenants) == 0 {
			return nil, nil
		}
		filters, args := claimFilters(c.p, 4)
		first := 4 + len(args)
		filters += fmt.Sprintf(sqlClaimLaterRound, first, first+1, first+2, first+3, first+4)
		keyTenants, keyNames := unzip(c.keys)
		var rated []pair
		for k := range c.buckets {
			rated = append(rated, k)
		}
		rateTenants, rateKeys := unzip(rated)
		args = append(args, c.seen, keyTenants, keyNames, rateTenants, rateKeys)
		rows, err = tx.Query(ctx, strings.Replace(sqlClaimTxLater, "{filters}", filters, 1),
			append([]any{c.t, n, c.tenants}, args...)...)
	}
	if err != nil {
		return nil, err
	}
	var cands []candidate
	var x candidate
	_, err = pgx.ForEachRow(rows, []any{&x.id, &x.tenant, &x.key, &x.limit, &x.rateKey, &x.ord}, func() error {
		cands = append(cands, x)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(cands, func(a, b candidate) int { return cmp.Compare(a.ord, b.ord) })
	if c.ord == nil {
		c.ord = map[string]int64{}
	}
	for _, x := range cands {
		if round == 0 && !slices.Contains(c.tenants, x.tenant) {
			c.tenants = append(c.tenants, x.tenant)
		}
	}
	return cands, nil
}

// lockLimits takes the locks of the candidates' concurrency keys, counts
// their running executions, and locks the candidates' buckets.
func (c *claimRun) lockLimits(ctx context.Context, tx pgx.Tx, cands []candidate) error {
	var rated []pair
	for _, x := range cands {
		if x.key != nil && !slices.Contains(c.keys, pair{x.tenant, *x.key}) {
			c.keys = append(c.keys, pair{x.tenant, *x.key})
		}
		if x.rateKey != nil && !slices.Contains(rated, pair{x.tenant, *x.rateKey}) {
			rated = append(rated, pair{x.tenant, *x.rateKey})
		}
	}
	slices.SortFunc(c.keys, comparePairs)
	if len(c.keys) > 0 {
		tenants, names := unzip(c.keys)
		if err := lockPairs(ctx, tx, lockSpaceConcurrency, false, tenants, names); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, sqlCountRunning, tenants, names)
		if err != nil {
			return err
		}
		var k pair
		var n int
		if _, err := pgx.ForEachRow(rows, []any{&k.tenant, &k.name, &n}, func() error { c.running[k] = n; return nil }); err != nil {
			return err
		}
	}
	var err error
	c.buckets, err = lockBuckets(ctx, tx, rated)
	return err
}

// choose decides a round's candidates and returns the ids of up to n to
// lease, in claim order, and the candidates it decided (leased or passed
// over). The tenants take turns (I12) in the order of their first
// candidates (turn order), one start each a turn, each turn going to the
// tenant's next candidate in its own order that its limits let start: the
// concurrency key first, then the bucket. A candidate they refuse (a key
// this very claim filled, a bucket out of tokens) is passed over and costs
// its tenant no turn: the tenant's next candidate takes it.
//
// When a tenant runs out of candidates while its read may have been cut
// short (full: the round read as many as it asked for; in the first round,
// whose reads give each tenant the same share, only a tenant that gave as
// many as any other can have more), choose stops at that tenant's turn:
// the next round reads further and begins with it (c.tenants), the other
// tenants following in turn order.
func (c *claimRun) choose(cands []candidate, n int, full, first bool) (chosen, considered []string) {
	var order []string
	queue := map[string][]candidate{}
	for _, x := range cands { // in the round's claim order
		if _, ok := queue[x.tenant]; !ok {
			order = append(order, x.tenant)
		}
		queue[x.tenant] = append(queue[x.tenant], x)
	}
	most := 0
	for _, q := range queue {
		most = max(most, len(q))
	}
	cut := func(t string) bool { return full && (!first || len(queue[t]) == most) }
	gave := map[string]int{} // candidates decided, per tenant
	startable := func(x candidate) bool {
		if x.key != nil && c.running[pair{x.tenant, *x.key}] >= *x.limit {
			return false
		}
		if x.rateKey != nil {
			if b := c.buckets[pair{x.tenant, *x.rateKey}]; b != nil && !b.take(c.t) {
				return false
			}
		}
		return true
	}
	// take gives t's turn to its next startable candidate, if it has one.
	take := func(t string) bool {
		q := queue[t]
		for gave[t] < len(q) {
			x := q[gave[t]]
			gave[t]++
			considered = append(considered, x.id)
			if !startable(x) {
				continue // passed over: the turn stays t's
			}
			if x.key != nil {
				c.running[pair{x.tenant, *x.key}]++ // leased by this very claim
			}
			c.lastOrd++
			c.ord[x.id] = c.lastOrd
			chosen = append(chosen, x.id)
			return true
		}
		return false
	}
	for len(chosen) < n && len(order) > 0 {
		for i := 0; i < len(order) && len(chosen) < n; {
			t := order[i]
			switch {
			case take(t):
				i++
			case cut(t):
				// Its turn waits for the next round, which begins with it.
				c.tenants = rotateTo(c.tenants, t)
				return chosen, considered
			default:
				order = slices.Delete(order, i, i+1) // nothing more to start
			}
		}
	}
	return chosen, considered
}

// rotateTo returns ts rotated to begin with t (ts unchanged if it lacks t).
func rotateTo(ts []string, t string) []string {
	i := slices.Index(ts, t)
	if i <= 0 {
		return ts
	}
	return append(slices.Clone(ts[i:]), ts[:i]...)
}

// lease leases the chosen candidates.
func (c *claimRun) lease(ctx context.Context, tx pgx.Tx, chosen []string) ([]claimed, error) {
	if len(chosen) == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, sqlClaimChosen, c.t, chosen, c.p.WorkerID, c.expires)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []claimed
	for rows.Next() {
		l, err := scanClaimed(rows)
		if err != nil {
			return nil, err
		}
		l.ord = c.ord[l.lease.ExecutionID]
		out = append(out, *l)
	}
	return out, rows.Err()
}

// sqlMoveTurns gives the tenants $1 new turns, in that order (sqlTurns).
const sqlMoveTurns = `WITH s AS (SELECT * FROM unnest($1::text[]) WITH ORDINALITY AS s(tenant, i))
` + sqlTurns

// moveTurns gives the tenants of leases new turns, in the order they were
// last served.
func moveTurns(ctx context.Context, tx pgx.Tx, leases []claimed) error {
	if len(leases) == 0 {
		return nil
	}
	byOrd := slices.Clone(leases)
	slices.SortFunc(byOrd, func(a, b claimed) int { return cmp.Compare(a.ord, b.ord) })
	var served []string
	for _, l := range byOrd {
		served = append(slices.DeleteFunc(served, func(t string) bool { return t == l.lease.Tenant }), l.lease.Tenant)
	}
	_, err := tx.Exec(ctx, sqlMoveTurns, served)
	return err
}
