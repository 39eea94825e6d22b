package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/latch-run/latch/store"
)

// Claim implements store.Store. Candidates are read and leased inside one
// IMMEDIATE transaction, so two claimers can never lease the same attempt.
// A candidate with a concurrency key is skipped while its tenant already has
// concurrency_limit running executions with that key (I4): keys are scoped
// per tenant. A candidate that may run by its key then asks its tenant's
// bucket for its rate key (I7): the token is taken, and the bucket's TAT
// written, in the transaction that starts it; a refused candidate is
// deferred (scheduled at the bucket's next free start) in it too.
//
// Fairness (I12): tenants take turns (see run). The transaction walks the
// tenants with work in flight in turn order (tenants_ready: least recently
// served first, ties by name), keeping those with a ready candidate for
// this claim (one index probe each; for a claim filtered by kind, one per
// kind, in the tenant's lanes), reads each one's candidates in its own
// claim order (executions_ready_tenant; for a claim filtered by kind, each
// of its kinds' lanes, executions_ready_kind, merged: a backlog of other
// kinds is never read), and deals out one start per tenant
// per round; at the end each tenant it served gets a turn past every other,
// in the order it was last served (saveTurns). A claim's cost is one probe
// per tenant it passes that has work in flight but nothing ready for it,
// and one candidate read per tenant it serves; tenants with nothing in
// flight are not in tenants_ready and cost nothing. A single-tenant queue
// pays one probe, one candidate read and one turn update per claim besides
// what it paid before.
//
// Flows: a lease carries its execution's journal, read (one primary-key
// range) only for executions with steps (executions.steps); a resume
// (executions.resume, set by Suspend, Signal and Wake) starts without
// counting an attempt.
func (s *Store) Claim(ctx context.Context, p *store.ClaimParams) (*store.ClaimResult, error) {
	if err := p.ValidateExclude(); err != nil {
		return nil, err
	}
	t := now(p.Now)
	maxN, lease := p.Bounds()
	var res *store.ClaimResult
	err := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		c := &claim{tx: tx, p: p, t: t, expires: t.Add(lease), maxN: maxN, journalLeft: store.ClaimJournalBytes,
			running: map[[2]string]int{}, buckets: newBuckets(tx), res: &store.ClaimResult{}}
		if err := c.run(ctx); err != nil {
			return false, err
		}
		res = c.res
		res.Deferred = c.deferred
		return len(res.Leases) > 0, nil
	})
	if err != nil {
		return nil, err
	}
	return s.feed.Claimed(res, nil)
}

// claim is one Claim's state inside its transaction.
type claim struct {
	tx      *sql.Tx
	p       *store.ClaimParams
	t       time.Time
	expires time.Time
	maxN    int
	// running counts, per tenant and concurrency key, the running
	// executions, those this claim started included.
	running  map[[2]string]int
	buckets  *buckets
	deferred int
	res      *store.ClaimResult

	// The turn walk: the last tenant read from tenants_ready, whether more
	// may follow, and the largest turn of any tenant (the base of the new
	// turns). served lists the tenants this claim leased to, in the order
	// they were last served.
	walked   *turnMark
	walkDone bool
	maxTurn  int64
	turns    map[string]int64 // the turns of the tenants read
	served   []string

	// journalLeft is what is left of the claim's bound of journal bytes
	// (store.ClaimJournalBytes) for the leases still to start.
	journalLeft int
}

// turnMark is a tenant's place in turn order.
type turnMark struct {
	turn int64
	name string
}

// queue is one tenant's candidates while the claim serves it.
type queue struct {
	tenant string
	cands  []candidate
	pos    int
	full   bool // the last read was cut by its limit: more may follow
	moved  bool // a candidate of the last read left the candidate set
}

type candidate struct {
	lease  store.Lease
	ckey   sql.NullString
	climit sql.NullInt64
	rkey   sql.NullString
	resume bool  // a flow's resume: its start counts no attempt
	steps  int   // entries in its journal
	runs   int64 // its runs so far (executions.runs)
}

// maxDeferred bounds the candidates one claim defers for their rate limits,
// and with them the work of one write step; the next claim goes on.
const maxDeferred = store.DefaultBatch

// run deals out starts in rounds: each round gives every tenant in the
// claim's turn order one start (the tenant's next candidate in its own
// claim order that may start; those its rate limit refuses are deferred on
// the way, those its concurrency keys hold back are passed over), until Max
// are leased, maxDeferred deferred, or no tenant has a candidate left. A
// tenant's candidates are read in batches; every candidate of a batch
// leaves the candidate set (started, deferred to a later RunAt, or held by
// a concurrency key now at its limit), so the next batch holds only new
// ones: a backlog of deferred work cannot hide runnable work behind it.
// When every tenant read so far is out of candidates, the walk reads the
// next tenants in turn order.
func (c *claim) run(ctx context.Context) error {
	var queues []*queue
	for c.room() {
		if len(queues) == 0 {
			next, err := c.nextTenants(ctx)
			if err != nil {
				return err
			}
			if len(next) == 0 {
				break
			}
			for _, name := range next {
				queues = append(queues, &queue{tenant: name, full: true, moved: true})
			}
		}
		kept := queues[:0]
		for i, q := range queues {
			if !c.room() {
				kept = append(kept, queues[i:]...)
				break
			}
			left, err := c.serve(ctx, q, len(queues))
			if err != nil {
				return err
			}
			if left {
				kept = append(kept, q)
			}
		}
		queues = kept
	}
	if err := c.saveTurns(ctx); err != nil {
		return err
	}
	return c.buckets.save(ctx)
}

// room reports whether the claim may start or defer more.
func (c *claim) room() bool {
	return len(c.res.Leases) < c.maxN && c.deferred < maxDeferred
}

// serve gives tenant q its turn of a round: it tries q's candidates until
// one starts. left reports whether q may have candidates left; sharing is
// how many tenants the round serves (it sizes q's batches).
func (c *claim) serve(ctx context.Context, q *queue, sharing int) (left bool, err error) {
	for c.room() {
		if q.pos == len(q.cands) {
			if !q.full || !q.moved {
				return false, nil
			}
			share := (c.maxN - len(c.res.Leases) + sharing - 1) / sharing
			if q.cands, q.full, err = c.candidates(ctx, q.tenant, share); err != nil {
				return false, err
			}
			q.pos, q.moved = 0, false
			if len(q.cands) == 0 {
				return false, nil
			}
		}
		cand := &q.cands[q.pos]
		q.pos++
		n := len(c.res.Leases)
		done, err := c.try(ctx, cand)
		if err != nil {
			return false, err
		}
		q.moved = q.moved || done
		if len(c.res.Leases) > n {
			c.markServed(q.tenant)
			return true, nil
		}
	}
	return true, nil
}

// markServed moves tenant to the end of served.
func (c *claim) markServed(tenant string) {
	if i := slices.Index(c.served, tenant); i >= 0 {
		c.served = slices.Delete(c.served, i, i+1)
	}
	c.served = append(c.served, tenant)
}

// nextTenants reads, after the last one read, the next tenants in turn
// order that have a ready execution for this claim: as many as the claim
// may still lease, since each is served at most once a round. (One whose
// ready executions its concurrency keys all hold back gives none, and is
// passed.)
func (c *claim) nextTenants(ctx context.Context) ([]string, error) {
	if c.walkDone {
		return nil, nil
	}
	from := turnMark{turn: -1}
	if c.walked != nil {
		from = *c.walked
	}
	want := c.maxN - len(c.res.Leases)
	query, args := turnQuery(c.p, c.t, from, want)
	rows, err := c.tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: claim: %w", err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var m turnMark
		if err := rows.Scan(&m.name, &m.turn, &c.maxTurn); err != nil {
			return nil, fmt.Errorf("sqlite: claim: %w", err)
		}
		names = append(names, m.name)
		c.walked = &m
		if c.turns == nil {
			c.turns = map[string]int64{}
		}
		c.turns[m.name] = m.turn
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: claim: %w", err)
	}
	c.walkDone = len(names) < want
	return names, nil
}

// saveTurns gives each tenant the claim served a turn past every other
// tenant's, in the order the claim last served them, so that the next
// claim serves first the tenants this one did not reach. A claim that
// served one tenant only, whose turn is already past every other's (turns
// given are never equal, only the first, 0, is shared), changes nothing:
// the common case of one busy tenant costs no write.
func (c *claim) saveTurns(ctx context.Context) error {
	if len(c.served) == 1 && c.maxTurn > 0 && c.turns[c.served[0]] == c.maxTurn {
		return nil
	}
	for i, name := range c.served {
		if _, err := c.tx.ExecContext(ctx, `UPDATE tenants SET turn = ? WHERE name = ?`,
			c.maxTurn+1+int64(i), name); err != nil {
			return fmt.Errorf("sqlite: claim: turn: %w", err)
		}
	}
	return nil
}

// candidates reads tenant's next batch in its claim order, sized for a
// share of the claim's starts; full reports whether the batch was cut by
// its limit (more may follow).
func (c *claim) candidates(ctx context.Context, tenant string, share int) (cands []candidate, full bool, err error) {
	query, args, limit := claimQuery(c.p, c.t, tenant, share)
	rows, err := c.tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, false, fmt.Errorf("sqlite: claim: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var cand candidate
		var payload string
		var trace sql.NullString
		var runAt int64
		if err := rows.Scan(&cand.lease.ExecutionID, &cand.lease.Tenant, &cand.lease.Kind, &cand.lease.Queue,
			&payload, &cand.lease.Attempt, &cand.lease.MaxAttempts, &cand.lease.TimeoutSeconds,
			&cand.ckey, &cand.climit, &cand.rkey, &cand.resume, &cand.steps, &cand.runs, &trace, &runAt); err != nil {
			return nil, false, fmt.Errorf("sqlite: claim: %w", err)
		}
		cand.lease.Payload = json.RawMessage(payload)
		cand.lease.TraceParent = trace.String
		cand.lease.ReadyAt = fromNS(runAt)
		cands = append(cands, cand)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("sqlite: claim: %w", err)
	}
	return cands, len(cands) == limit, nil
}

// try starts or defers one candidate; done is false when its concurrency
// key holds it back (it is then not charged a token).
func (c *claim) try(ctx context.Context, cand *candidate) (done bool, err error) {
	k := [2]string{cand.lease.Tenant, cand.ckey.String}
	if cand.ckey.Valid {
		if _, ok := c.running[k]; !ok {
			var n int
			// INDEXED BY: see claimQuery.
			if err := c.tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM executions INDEXED BY executions_concurrency
				WHERE status = 'running' AND tenant = ? AND concurrency_key = ?`,
				cand.lease.Tenant, cand.ckey.String).Scan(&n); err != nil {
				return false, fmt.Errorf("sqlite: claim: %w", err)
			}
			c.running[k] = n
		}
		if int64(c.running[k]) >= cand.climit.Int64 {
			return false, nil
		}
	}
	if cand.rkey.Valid {
		b, err := c.buckets.get(ctx, cand.lease.Tenant, cand.rkey.String)
		if err != nil {
			return false, err
		}
		if ok, retryAt := b.take(c.t); !ok {
			return true, c.deferTo(ctx, cand.lease.ExecutionID, retryAt)
		}
	}
	if cand.ckey.Valid {
		c.running[k]++
	}
	return true, c.start(ctx, cand)
}

// sqlStart leases an execution to the claiming worker. The row then holds
// the run it starts (runs.go): its number (runs), attempt, worker and
// claim time (started_at). A resume's start counts no attempt; its resume
// flag stays set while the run lasts (Release of an unstarted lease gives
// it back) and every end of the run clears it.
const sqlStart = `UPDATE executions SET status = 'running',
		attempt = attempt + 1 - resume, runs = runs + 1, lease_token = ?, worker_id = ?, lease_expires_at = ?,
		started_at = ? WHERE id = ?`

// start leases the candidate to the claiming worker, with its journal (as
// much as the claim's bound has left); a
// run past store.MaxRunsKept drops the oldest from the history.
func (c *claim) start(ctx context.Context, cand *candidate) error {
	l := cand.lease
	l.Token = uuid.NewString()
	if !cand.resume {
		l.Attempt++
	}
	l.ExpiresAt = c.expires.UTC()
	if cand.steps > 0 {
		var err error
		var size int
		if l.Steps, l.StepsPartial, size, err = readJournal(ctx, c.tx, l.ExecutionID, c.journalLeft); err != nil {
			return fmt.Errorf("sqlite: claim: %w", err)
		}
		c.journalLeft -= size
	}
	args := []any{l.Token, nullString(c.p.WorkerID), ns(c.expires), ns(c.t), l.ExecutionID}
	if _, err := c.tx.ExecContext(ctx, sqlStart, args...); err != nil {
		return fmt.Errorf("sqlite: claim: %w", err)
	}
	if err := dropOldRuns(ctx, c.tx, l.ExecutionID, cand.runs+1); err != nil {
		return err
	}
	c.res.Leases = append(c.res.Leases, l)
	return nil
}

// deferTo makes a candidate its rate limit refused scheduled at runAt,
// Attempt and quota slot unchanged, and keeps the earliest such runAt as
// the claim's RetryAt.
func (c *claim) deferTo(ctx context.Context, id string, runAt time.Time) error {
	if _, err := c.tx.ExecContext(ctx, `UPDATE executions SET status = 'scheduled', run_at = ?
		WHERE id = ?`, ns(runAt), id); err != nil {
		return fmt.Errorf("sqlite: claim: defer: %w", err)
	}
	c.deferred++
	if c.res.RetryAt.IsZero() || runAt.Before(c.res.RetryAt) {
		c.res.RetryAt = runAt.UTC()
	}
	return nil
}

// readyWhere is the condition, on executions e, of a candidate of this
// claim: ready at t, its concurrency key (if any) with room within its
// tenant, and of the claim's queues and kinds. Executions whose key is
// already at its limit are filtered out in SQL so that a backlog of blocked
// work cannot hide runnable work behind it.
//
// The running count of a key names its index (INDEXED BY): without table
// statistics the planner otherwise picks executions_tenant and reads every
// execution the tenant ever had, per candidate with a key, in every claim,
// so claims slowed down as a tenant's history grew (found by the soak,
// internal/soak: 100 submits/s fell to 28/s after 10 minutes).
func readyWhere(p *store.ClaimParams, t time.Time, room bool) (string, []any) {
	var b strings.Builder
	b.WriteString(`e.status IN ('queued', 'scheduled') AND (e.status = 'queued' OR e.run_at <= ?)`)
	if room {
		b.WriteString(`
		AND (e.concurrency_key IS NULL OR (SELECT COUNT(*) FROM executions r INDEXED BY executions_concurrency
			WHERE r.status = 'running' AND r.tenant = e.tenant
			AND r.concurrency_key = e.concurrency_key) < e.concurrency_limit)`)
	}
	args := []any{ns(t)}
	in := func(col string, vals []string) {
		if len(vals) == 0 {
			return
		}
		b.WriteString(` AND ` + col + ` IN (?` + strings.Repeat(`, ?`, len(vals)-1) + `)`)
		for _, v := range vals {
			args = append(args, v)
		}
	}
	in("e.queue", p.Queues)
	in("e.kind", p.Kinds)
	return b.String(), args
}

// turnQuery selects, in turn order after from, up to n tenants with a
// ready execution of the claim's queues and kinds (one probe of
// executions_ready_tenant each, or with a kind filter of each of the
// tenant's lanes of those kinds, executions_ready_kind; whether its
// concurrency key lets it start is left to claimQuery, which is cheaper
// than asking it of every probe), with their turns and the largest turn of
// all. The claim's tenant filter, and any other rule on which tenants may
// be served at all, belongs here: an excluded tenant (ExcludeTenants) is
// passed on its tenants row, before any probe of its executions.
func turnQuery(p *store.ClaimParams, t time.Time, from turnMark, n int) (query string, args []any) {
	ready, rargs := readyWhere(p, t, false)
	index := "executions_ready_tenant"
	if len(p.Kinds) > 0 {
		index = "executions_ready_kind"
	}
	var b strings.Builder
	b.WriteString(`SELECT t.name, t.turn, (SELECT MAX(turn) FROM tenants)
		FROM tenants t INDEXED BY tenants_ready
		WHERE t.inflight > 0 AND t.disabled = 0 AND (t.turn, t.name) > (?, ?)`)
	args = []any{from.turn, from.name}
	if p.Tenant != "" {
		b.WriteString(` AND t.name = ?`)
		args = append(args, p.Tenant)
	}
	if len(p.ExcludeTenants) > 0 {
		b.WriteString(` AND t.name NOT IN (?` + strings.Repeat(`, ?`, len(p.ExcludeTenants)-1) + `)`)
		for _, name := range p.ExcludeTenants {
			args = append(args, name)
		}
	}
	b.WriteString(` AND EXISTS (SELECT 1 FROM executions e INDEXED BY ` + index + `
		WHERE e.tenant = t.name AND ` + ready + `)
		ORDER BY t.turn, t.name LIMIT ?`)
	args = append(append(args, rargs...), n)
	return b.String(), args
}

// claimCols are the columns of a candidate (candidates scans them).
const claimCols = `id, tenant, kind, queue, payload, attempt, max_attempts, timeout_seconds,
		concurrency_key, concurrency_limit, rate_key, resume, steps, runs, trace_parent, run_at`

// claimQuery selects tenant's ready candidates in its claim order (highest
// priority first, then oldest run_at, then id), enough for share starts:
// from its queue (executions_ready_tenant), or with a kind filter from its
// lane of each kind (executions_ready_kind), each walked in claim order up
// to the limit and merged, so that a backlog of other kinds is never read.
func claimQuery(p *store.ClaimParams, t time.Time, tenant string, share int) (query string, args []any, limit int) {
	// A few spare candidates let the in-batch concurrency count skip some.
	limit = share*2 + 8
	kinds := slices.Compact(slices.Sorted(slices.Values(p.Kinds)))
	if len(kinds) == 0 {
		ready, rargs := readyWhere(p, t, true)
		query = `SELECT ` + claimCols + ` FROM executions e INDEXED BY executions_ready_tenant
		WHERE e.tenant = ? AND ` + ready + ` ORDER BY e.priority DESC, e.run_at, e.id LIMIT ?`
		return query, append(append([]any{tenant}, rargs...), limit), limit
	}
	other := *p
	other.Kinds = nil // each lane is of one kind
	ready, rargs := readyWhere(&other, t, true)
	lanes := make([]string, len(kinds))
	for i, k := range kinds {
		lanes[i] = `SELECT * FROM (SELECT ` + claimCols + `, priority AS lane_priority, run_at AS lane_run_at
		FROM executions e INDEXED BY executions_ready_kind
		WHERE e.tenant = ? AND e.kind = ? AND ` + ready + ` ORDER BY e.priority DESC, e.run_at, e.id LIMIT ?)`
		args = append(append(append(args, tenant, k), rargs...), limit)
	}
	query = `SELECT ` + claimCols + ` FROM (` + strings.Join(lanes, `
		UNION ALL `) + `) ORDER BY lane_priority DESC, lane_run_at, id LIMIT ?`
	return query, append(args, limit), limit
}
