package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/latch-run/latch/store"
)

// Admission statements. $1 is always the tenant.
var (
	// sqlDedupLookup reads what keys map to, with the executions as they
	// are now, and when each key's TTL ends.
	sqlDedupLookup = `
SELECT d.dedup_key, d.expires_at, ` + columns("e") + `
FROM latch_dedup_keys d JOIN latch_executions e ON e.id = d.execution_id
WHERE d.tenant = $1 AND d.dedup_key = ANY($2::text[])`

	// sqlDedupMappings reads mappings whatever their executions: a mapping
	// whose execution is missing is stale (it cannot be made by this store;
	// if one exists anyway, it is removed like an expired one).
	// sqlDedupLock is sqlDedupLookup holding the executions read (FOR
	// SHARE, in id order) until the transaction ends: nothing changes them
	// before the answer that shows them is committed.
	sqlDedupLock = sqlDedupLookup + `
ORDER BY e.id FOR SHARE OF e`

	sqlDedupMappings = `
SELECT d.dedup_key, d.execution_id::text, e.id IS NOT NULL
FROM latch_dedup_keys d LEFT JOIN latch_executions e ON e.id = d.execution_id
WHERE d.tenant = $1 AND d.dedup_key = ANY($2::text[])`

	sqlAdmitTenant = `SELECT dedup_ttl FROM latch_tenants WHERE name = $1`

	// Bind every key in one statement, in key order: concurrent batches that
	// share keys wait for each other in the same order and cannot deadlock.
	sqlBindKeys = `
INSERT INTO latch_dedup_keys (tenant, dedup_key, execution_id, expires_at)
SELECT $1, k, id::uuid, $4 FROM unnest($2::text[], $3::text[]) AS u(k, id)
ON CONFLICT DO NOTHING
RETURNING dedup_key`

	// Compare-and-delete: remove a mapping only while it still names the
	// execution that was read, so a key re-bound meanwhile stays bound.
	sqlUnbindKeys = `
DELETE FROM latch_dedup_keys d USING unnest($2::text[], $3::text[]) AS u(k, id)
WHERE d.tenant = $1 AND d.dedup_key = u.k AND d.execution_id = u.id::uuid`

	// Insert executions of tenant $1 created at $2, one row per element
	// of the arrays $3..$16. A skipped tick (FireSchedule) is inserted
	// finished at its creation.
	sqlInsertExecutions = `
INSERT INTO latch_executions (id, tenant, kind, queue, priority, status, dedup_key,
    concurrency_key, concurrency_limit, rate_key, payload, max_attempts, timeout_seconds,
    schedule, created_at, run_at, finished_at)
SELECT u.id::uuid, $1, u.kind, u.queue, u.priority, u.status, nullif(u.dedup_key, ''),
    nullif(u.ckey, ''), nullif(u.climit, 0), nullif(u.rkey, ''), u.payload, u.max_attempts,
    u.timeout_seconds, nullif(u.schedule, ''), $2, u.run_at,
    CASE WHEN u.status = 'skipped' THEN $2::timestamptz END
FROM unnest($3::text[], $4::text[], $5::text[], $6::int[], $7::text[], $8::text[], $9::text[],
    $10::int[], $11::text[], $12::text[], $13::int[], $14::int[], $15::text[], $16::timestamptz[])
    AS u(id, kind, queue, priority, status, dedup_key, ckey, climit, rkey, payload, max_attempts,
         timeout_seconds, schedule, run_at)`

	// sqlAdmitUnkeyed admits a group without dedup keys in one statement, all
	// or nothing: its $17 quota units from one shard no other transaction
	// holds, and the executions. Without such a shard it inserts nothing and
	// admitTx decides.
	sqlAdmitUnkeyed = `
WITH tok AS (
    UPDATE latch_quota_shards q SET free = q.free - $17
    FROM (SELECT shard FROM latch_quota_shards WHERE tenant = $1 AND free >= $17
          ORDER BY shard LIMIT 1 FOR UPDATE SKIP LOCKED) c
    WHERE q.tenant = $1 AND q.shard = c.shard
    RETURNING 1
)` + sqlInsertExecutions + `
WHERE EXISTS (SELECT 1 FROM tok)`
)

// Admit implements store.Store. A single submission goes through
// sqlAdmitMany, shared with concurrent submissions (admitFast, group.go); a
// group of submissions is first tried as one all-or-nothing statement
// (admitGroupFast). What those cannot decide — no quota unit at hand
// without waiting, a dedup key past its TTL, an unknown tenant, a group that
// cannot be admitted whole — runs as one transaction (admitTx), and so does
// a submission that names a schedule (rare outside FireSchedule: see
// lockSchedules).
func (s *Store) Admit(ctx context.Context, p *store.AdmitParams) (*store.AdmitResult, error) {
	return s.feed.Admitted(s.admit(ctx, p))
}

func (s *Store) admit(ctx context.Context, p *store.AdmitParams) (*store.AdmitResult, error) {
	t := now(p.Now)
	items := make([]item, len(p.Items))
	scheduled := false
	for i := range p.Items {
		items[i] = prepare(p.Tenant, &p.Items[i], t)
		scheduled = scheduled || p.Items[i].Schedule != ""
	}
	// An execution of a schedule is admitted under the schedule's shared
	// lock (lockSchedules), which only admitTx takes.
	switch {
	case scheduled:
	case len(items) == 1 && items[0].err == nil:
		if res, done, err := s.admitFast(ctx, p.Tenant, &items[0], t); done || err != nil {
			return res, err
		}
	case len(items) > 1:
		if res, done, err := s.admitGroupFast(ctx, p.Tenant, items, t); done || err != nil {
			return res, err
		}
	}
	return s.admitTx(ctx, p.Tenant, items, t)
}

// admitGroupFast admits a group in one statement (sqlAdmitMany, strict)
// when every item can be admitted at once: its keys all free, the units
// all at hand on one shard. Otherwise the statement aborts, having changed
// nothing, and done is false: admitTx decides.
func (s *Store) admitGroupFast(ctx context.Context, tenant string, items []item, t time.Time) (*store.AdmitResult, bool, error) {
	var ops []groupOp
	var idx []int
	keyed := false
	for i := range items {
		if items[i].err == nil {
			ops = append(ops, &admitOp{tenant: tenant, e: items[i].exec, t: t, strict: true})
			idx = append(idx, i)
			keyed = keyed || items[i].exec.DedupKey != ""
		}
	}
	if len(ops) == 0 {
		return nil, false, nil
	}
	if !keyed {
		var n int64
		err := s.write(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
			tag, err := c.Exec(ctx, sqlAdmitUnkeyed, append(executionArrays(tenant, t, items, idx), len(idx))...)
			n = tag.RowsAffected()
			return err
		})
		if err != nil {
			return nil, false, interpretError(err)
		}
		if n == 0 {
			return nil, false, nil
		}
		res := &store.AdmitResult{Items: make([]store.Admitted, len(items))}
		for i := range items {
			res.Items[i] = store.Admitted{Execution: items[i].exec, Err: items[i].err}
		}
		s.changes.announce()
		return res, true, nil
	}
	err := s.write(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		st := build(kindAdmit, ops)
		rows, err := c.Query(ctx, st.sql, st.args...)
		if err != nil {
			return err
		}
		return st.read(rows)
	})
	if aborted(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, interpretError(err)
	}
	res := &store.AdmitResult{Items: make([]store.Admitted, len(items))}
	j := 0
	for i := range items {
		if items[i].err != nil {
			res.Items[i].Err = items[i].err
			continue
		}
		op := ops[j].(*admitOp)
		j++
		if op.leader == nil {
			res.Items[i].Execution = op.e
		} else {
			x := *op.leader.e
			res.Items[i] = dedupAnswer(op.e, &x)
		}
	}
	s.changes.announce()
	return res, true, nil
}

// item is one submission, validated, with its execution built.
type item struct {
	exec *store.Execution
	err  error // a refusal decided before the database is asked
}

func prepare(tenant string, sub *store.Submission, t time.Time) item {
	if err := store.CheckItem(sub); err != nil {
		return item{err: err}
	}
	return item{exec: newExecution(tenant, sub, t)}
}

// newExecution builds the execution a submission creates, with the store's
// defaults applied; its times are those the database will hold.
func newExecution(tenant string, sub *store.Submission, t time.Time) *store.Execution {
	id := sub.ID
	if id == "" {
		id = uuid.Must(uuid.NewV7()).String()
	}
	e := store.NewExecution(id, tenant, sub, t)
	e.RunAt = micro(e.RunAt)
	return e
}

// admitFast tries the fast path for one valid submission: sqlAdmitMany,
// shared with concurrent submissions (group.go). done is false when the
// transaction path must decide: no quota unit at hand, a key whose TTL has
// passed, an unknown tenant.
func (s *Store) admitFast(ctx context.Context, tenant string, it *item, t time.Time) (res *store.AdmitResult, done bool, err error) {
	e := it.exec
	op := &admitOp{tenant: tenant, e: e, t: t}
	err = s.run(ctx, op)
	if aborted(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, interpretError(err)
	}
	answer, done, err := s.answer(ctx, op)
	if !done || err != nil {
		return nil, done, err
	}
	return &store.AdmitResult{Items: []store.Admitted{answer}}, true, nil
}

// answer decides an admitOp after its statement committed. done is false
// when the statement could not decide it.
func (s *Store) answer(ctx context.Context, op *admitOp) (store.Admitted, bool, error) {
	l := op.lead()
	switch {
	case op == l && op.admitted:
		s.changes.announce()
		return store.Admitted{Execution: op.e}, true, nil
	case l.admitted: // the same key, created by an op just before this one
		x := *l.e
		return dedupAnswer(op.e, &x), true, nil
	case op.e.DedupKey == "":
		return store.Admitted{}, false, nil
	}
	// The key was taken. If it maps to a live execution, that is the
	// answer; reading it changes nothing, so no transaction is needed.
	hit := l.hit
	if !l.looked {
		hits, err := lookupKeys(ctx, s.pool, op.tenant, []string{op.e.DedupKey})
		if err != nil {
			return store.Admitted{}, false, err
		}
		if h, ok := hits[op.e.DedupKey]; ok {
			hit = &h
		}
	}
	if hit == nil || !hit.liveAt(op.t) {
		return store.Admitted{}, false, nil
	}
	x := *hit.exec
	return dedupAnswer(op.e, &x), true, nil
}

// keyHit is a key that maps to an existing execution.
type keyHit struct {
	expires time.Time // when the key's TTL ends
	exec    *store.Execution
}

// liveAt reports whether the key still maps to its execution at t.
func (h keyHit) liveAt(t time.Time) bool { return h.expires.After(t) }

// lookupKeys reads the keys that map to existing executions.
func lookupKeys(ctx context.Context, q querier, tenant string, keys []string) (map[string]keyHit, error) {
	return readKeys(ctx, q, sqlDedupLookup, tenant, keys)
}

// readKeys runs sqlDedupLookup or sqlDedupLock.
func readKeys(ctx context.Context, q querier, sql, tenant string, keys []string) (map[string]keyHit, error) {
	rows, err := q.Query(ctx, sql, tenant, keys)
	if err != nil {
		return nil, fmt.Errorf("postgres: admit: dedup lookup: %w", interpretError(err))
	}
	defer rows.Close()
	out := map[string]keyHit{}
	for rows.Next() {
		var key string
		var h keyHit
		h.exec, err = scanExecution(prefixed{rows, []any{&key, &h.expires}})
		if err != nil {
			return nil, fmt.Errorf("postgres: admit: dedup lookup: %w", interpretError(err))
		}
		out[key] = h
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: admit: dedup lookup: %w", interpretError(err))
	}
	return out, nil
}

// prefixed scans some leading columns before the ones its caller asks for.
type prefixed struct {
	row    pgx.Row
	prefix []any
}

func (p prefixed) Scan(dest ...any) error { return p.row.Scan(append(p.prefix, dest...)...) }

// dedupAnswer answers a submission whose key maps to existing: the same
// request (same kind and canonical payload) is deduplicated onto it,
// anything else is a reuse of the key.
func dedupAnswer(sub, existing *store.Execution) store.Admitted {
	if existing.Kind != sub.Kind || !bytes.Equal(existing.Payload, sub.Payload) {
		return store.Admitted{Err: fmt.Errorf("dedup key %q maps to execution %s: %w",
			sub.DedupKey, existing.ID, store.ErrDedupKeyReused)}
	}
	return store.Admitted{Execution: existing, Deduplicated: true}
}

// admitTx admits a group in one transaction. Items are decided in order as
// if submitted singly:
//
//  0. the schedules the items name are locked, shared (lockSchedules), so
//     that a concurrent FireSchedule's overlap check sees these executions;
//  1. every dedup key of the group is bound in one statement, in key order
//     (ON CONFLICT DO NOTHING: the unique index decides, never a read); a
//     key that is taken is read, and if its TTL has passed it is removed by
//     compare-and-delete and bound again. The executions the taken keys
//     map to are then read again and held until the commit (lockHits), so
//     that the answer shows them as they are when it commits;
//  2. the items that create executions take their quota units in one step
//     (takeQuota), in order; those beyond the units available are refused
//     and their just-bound keys unbound;
//  3. the admitted executions are inserted in one statement.
//
// Nothing else can see any of it before the commit.
func (s *Store) admitTx(ctx context.Context, tenant string, items []item, t time.Time) (*store.AdmitResult, error) {
	var res *store.AdmitResult
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) (bool, error) {
		var changed bool
		var err error
		res, changed, err = admitInTx(ctx, tx, tenant, items, t)
		return changed, err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// decision is how one item ends.
type decision int

const (
	decRefused decision = iota // it.err or a refusal set below
	decNew                     // creates its execution, if quota allows
	decSameAs                  // same key as an earlier item of the group
	decHit                     // the key maps to an existing execution
)

func admitInTx(ctx context.Context, tx pgx.Tx, tenant string, items []item, t time.Time) (*store.AdmitResult, bool, error) {
	a, err := bindAdmission(ctx, tx, tenant, items, t)
	if err != nil {
		return nil, false, err
	}
	return a.finish(ctx, tx)
}

// admission is admitInTx between its steps: the keys bound and the hits
// locked (bindAdmission), the quota not yet taken (finish). FireSchedule
// decides its overlap check in between.
type admission struct {
	tenant string
	items  []item
	t      time.Time
	res    *store.AdmitResult
	dec    []decision
	first  map[string]int              // dedup key -> the first valid item that names it
	hits   map[string]*store.Execution // keys that map to a live execution, locked
}

// bindAdmission is step 1 of admitInTx: it reads the tenant, takes the
// shared locks of the schedules the items name (lockSchedules), binds the
// keys and locks the hits, answering the items whose key maps to an
// execution.
func bindAdmission(ctx context.Context, tx pgx.Tx, tenant string, items []item, t time.Time) (*admission, error) {
	var ttl int64
	if err := tx.QueryRow(ctx, sqlAdmitTenant, tenant).Scan(&ttl); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("tenant %q: %w", tenant, store.ErrNotFound)
		}
		return nil, err
	}
	a := &admission{tenant: tenant, items: items, t: t,
		res: &store.AdmitResult{Items: make([]store.Admitted, len(items))},
		dec: make([]decision, len(items)), first: map[string]int{}}
	var schedules []string
	for i, it := range items {
		switch {
		case it.err != nil:
			a.dec[i], a.res.Items[i].Err = decRefused, it.err
			continue
		case it.exec.DedupKey == "":
			a.dec[i] = decNew
		default:
			if _, ok := a.first[it.exec.DedupKey]; ok {
				a.dec[i] = decSameAs
			} else {
				a.first[it.exec.DedupKey] = i
				a.dec[i] = decNew
			}
		}
		if it.exec.Schedule != "" {
			schedules = append(schedules, it.exec.Schedule)
		}
	}
	if err := lockSchedules(ctx, tx, tenant, schedules, true); err != nil {
		return nil, err
	}

	// Bind the keys.
	var err error
	a.hits, err = bindKeys(ctx, tx, tenant, items, a.first, micro(t.Add(time.Duration(ttl))), t)
	if err != nil {
		return nil, err
	}
	// The executions the taken keys map to, locked until the commit
	// (lockHits) before this transaction waits for anything else.
	if err := lockHits(ctx, tx, tenant, a.hits, t); err != nil {
		return nil, err
	}
	for key, i := range a.first {
		if h, ok := a.hits[key]; ok {
			a.dec[i] = decHit
			a.res.Items[i] = dedupAnswer(items[i].exec, h)
		}
	}
	return a, nil
}

// finish is steps 2 and 3 of admitInTx: the quota of the items that create
// executions, and their insert. changed reports whether any was inserted.
func (a *admission) finish(ctx context.Context, tx pgx.Tx) (*store.AdmitResult, bool, error) {
	tenant, items, res, dec, first, hits := a.tenant, a.items, a.res, a.dec, a.first, a.hits
	// 2. Quota for the items that create executions, in order.
	var fresh []int
	for i := range items {
		if dec[i] == decNew {
			fresh = append(fresh, i)
		}
	}
	got, err := takeQuota(ctx, tx, tenant, len(fresh))
	if err != nil {
		return nil, false, err
	}
	var unbindKeys, unbindIDs []string
	for n, i := range fresh {
		e := items[i].exec
		if n < got {
			res.Items[i].Execution = e
			continue
		}
		dec[i] = decRefused
		res.Items[i].Err = fmt.Errorf("tenant %q is at its max_inflight: %w", tenant, store.ErrQuotaExceeded)
		if e.DedupKey != "" {
			unbindKeys, unbindIDs = append(unbindKeys, e.DedupKey), append(unbindIDs, e.ID)
		}
	}
	if len(unbindKeys) > 0 {
		if _, err := tx.Exec(ctx, sqlUnbindKeys, tenant, unbindKeys, unbindIDs); err != nil {
			return nil, false, fmt.Errorf("postgres: admit: unbind: %w", err)
		}
	}
	// Later items with an earlier item's key: as if submitted after it.
	for i := range items {
		if dec[i] != decSameAs {
			continue
		}
		key := items[i].exec.DedupKey
		j := first[key]
		switch {
		case hits[key] != nil: // the key mapped to an execution before the group
			res.Items[i] = dedupAnswer(items[i].exec, hits[key])
		case res.Items[j].Execution != nil: // the group's first item created it
			res.Items[i] = dedupAnswer(items[i].exec, res.Items[j].Execution)
		default: // the first was refused for quota: the key is free, the quota still spent
			res.Items[i].Err = res.Items[j].Err
		}
	}

	// 3. Insert the admitted executions.
	if got == 0 {
		return res, false, nil
	}
	if err := insertExecutions(ctx, tx, tenant, items, fresh[:got], a.t); err != nil {
		return nil, false, err
	}
	return res, true, nil
}

// errHitMoved rolls back and reruns an admitInTx whose dedup hit changed
// hands before it could lock it (see lockHits). It is a serialization
// failure in all but name, and retried like one.
var errHitMoved = &pgconn.PgError{Code: codeSerializationFailure,
	Message: "latch: a dedup key changed hands during the admission; run it again"}

// lockHits replaces each hit with its execution as it is now and holds it
// (FOR SHARE) until the transaction ends, so that the answer shows it as it
// is at the commit. Without the lock, the hit was read before the quota
// wait and a change committed meanwhile — a Fail whose freed unit the group
// then takes, a Complete that a later reader sees — went unseen by the
// answer while its effects were used or observed. The lock wait is on an
// execution row before any quota shard, the order every path that changes
// an execution and its quota takes, so it adds no deadlock. Claims pass a
// held queued hit by (SKIP LOCKED) until the commit, as the Claim contract
// allows. A key that no longer maps to the same live execution — its
// execution deleted, or the key re-bound, meanwhile — reruns the whole
// transaction (errHitMoved), which then binds or reads it anew.
func lockHits(ctx context.Context, tx pgx.Tx, tenant string, hits map[string]*store.Execution, t time.Time) error {
	if len(hits) == 0 {
		return nil
	}
	keys := slices.Sorted(maps.Keys(hits))
	found, err := readKeys(ctx, tx, sqlDedupLock, tenant, keys)
	if err != nil {
		return err
	}
	for _, key := range keys {
		h, ok := found[key]
		if !ok || !h.liveAt(t) || h.exec.ID != hits[key].ID {
			return errHitMoved
		}
		hits[key] = h.exec
	}
	return nil
}

// bindKeys binds the dedup key of each first item to its execution and
// returns the keys that already map to a live execution. A key that maps to
// an expired (or vanished) execution is unbound by compare-and-delete and
// bound again; a key unbound by someone else meanwhile is simply bound again.
func bindKeys(ctx context.Context, tx pgx.Tx, tenant string, items []item, first map[string]int,
	expires, t time.Time) (map[string]*store.Execution, error) {
	pending := make([]string, 0, len(first))
	for key := range first {
		pending = append(pending, key)
	}
	slices.Sort(pending)
	hits := map[string]*store.Execution{}
	for round := 0; len(pending) > 0; round++ {
		if round == maxAttempts {
			return nil, fmt.Errorf("postgres: admit: dedup keys %q keep changing hands", pending)
		}
		ids := make([]string, len(pending))
		for i, key := range pending {
			ids[i] = items[first[key]].exec.ID
		}
		rows, err := tx.Query(ctx, sqlBindKeys, tenant, pending, ids, expires)
		if err != nil {
			return nil, fmt.Errorf("postgres: admit: bind: %w", err)
		}
		bound, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return nil, fmt.Errorf("postgres: admit: bind: %w", err)
		}
		if len(bound) == len(pending) {
			break
		}
		taken := slices.DeleteFunc(pending, func(k string) bool { return slices.Contains(bound, k) })
		pending = nil
		found, err := lookupKeys(ctx, tx, tenant, taken)
		if err != nil {
			return nil, err
		}
		var staleKeys, staleIDs, unknown []string
		for _, key := range taken {
			switch h, ok := found[key]; {
			case !ok:
				unknown = append(unknown, key)
			case h.liveAt(t):
				hits[key] = h.exec
			default: // the TTL has passed: compare-and-delete, bind again
				staleKeys, staleIDs = append(staleKeys, key), append(staleIDs, h.exec.ID)
				pending = append(pending, key)
			}
		}
		if len(unknown) > 0 {
			// Unbound since the bind (bind again), bound anew (look again:
			// bind again, which conflicts), or stale (remove, bind again).
			rows, err := tx.Query(ctx, sqlDedupMappings, tenant, unknown)
			if err != nil {
				return nil, fmt.Errorf("postgres: admit: dedup lookup: %w", err)
			}
			var key, id string
			var exists bool
			_, err = pgx.ForEachRow(rows, []any{&key, &id, &exists}, func() error {
				if !exists {
					staleKeys, staleIDs = append(staleKeys, key), append(staleIDs, id)
				}
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("postgres: admit: dedup lookup: %w", err)
			}
			pending = append(pending, unknown...)
			slices.Sort(pending)
		}
		if len(staleKeys) > 0 {
			if _, err := tx.Exec(ctx, sqlUnbindKeys, tenant, staleKeys, staleIDs); err != nil {
				return nil, fmt.Errorf("postgres: admit: expire keys: %w", err)
			}
		}
	}
	return hits, nil
}

func insertExecutions(ctx context.Context, tx pgx.Tx, tenant string, items []item, idx []int, t time.Time) error {
	if _, err := tx.Exec(ctx, sqlInsertExecutions, executionArrays(tenant, t, items, idx)...); err != nil {
		return fmt.Errorf("postgres: admit: insert: %w", err)
	}
	return nil
}

// executionArrays are the arguments $1..$16 of sqlInsertExecutions for the
// executions of items[idx].
func executionArrays(tenant string, t time.Time, items []item, idx []int) []any {
	n := len(idx)
	var (
		ids, kinds, queues, statuses, keys, ckeys, rkeys, payloads, schedules = make([]string, n),
			make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n),
			make([]string, n), make([]string, n), make([]string, n)
		prios, climits, attempts, timeouts = make([]int, n), make([]int, n), make([]int, n), make([]int, n)
		runAts                             = make([]time.Time, n)
	)
	for j, i := range idx {
		e := items[i].exec
		ids[j], kinds[j], queues[j], statuses[j] = e.ID, e.Kind, e.Queue, string(e.Status)
		keys[j], ckeys[j], rkeys[j], payloads[j], schedules[j] = e.DedupKey, e.ConcurrencyKey, e.RateKey, string(e.Payload), e.Schedule
		prios[j], climits[j], attempts[j], timeouts[j] = e.Priority, e.ConcurrencyLimit, e.MaxAttempts, e.TimeoutSeconds
		runAts[j] = e.RunAt
	}
	return []any{tenant, t, ids, kinds, queues, prios, statuses, keys, ckeys,
		climits, rkeys, payloads, attempts, timeouts, schedules, runAts}
}
