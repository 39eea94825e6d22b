package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
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
	// of the arrays $3..$19 ($17: trace parents, NULL for none; $18 and
	// $19: the hits of later items of the group with the same key, and the
	// latest's time, both NULL, the array or an element, for none). A
	// skipped tick (FireSchedule) is inserted finished at its creation.
	sqlInsertExecutions = `
INSERT INTO latch_executions (id, tenant, kind, queue, priority, status, dedup_key,
    concurrency_key, concurrency_limit, rate_key, payload, max_attempts, timeout_seconds,
    schedule, created_at, run_at, finished_at, trace_parent, dedup_hits, last_dedup_hit_at, stored_bytes)
SELECT u.id::uuid, $1, u.kind, u.queue, u.priority, u.status, nullif(u.dedup_key, ''),
    nullif(u.ckey, ''), nullif(u.climit, 0), nullif(u.rkey, ''), u.payload, u.max_attempts,
    u.timeout_seconds, nullif(u.schedule, ''), $2, u.run_at,
    CASE WHEN u.status = 'skipped' THEN $2::timestamptz END, u.trace_parent,
    coalesce(u.hits, 0), u.last_hit, CASE WHEN u.status = 'skipped' THEN 0 ELSE octet_length(u.payload) END
FROM unnest($3::text[], $4::text[], $5::text[], $6::int[], $7::text[], $8::text[], $9::text[],
    $10::int[], $11::text[], $12::text[], $13::int[], $14::int[], $15::text[], $16::timestamptz[],
    $17::text[], $18::int[], $19::timestamptz[])
    AS u(id, kind, queue, priority, status, dedup_key, ckey, climit, rkey, payload, max_attempts,
         timeout_seconds, schedule, run_at, trace_parent, hits, last_hit)`

	// sqlAdmitUnkeyed admits a group without dedup keys in one statement, all
	// or nothing: its $20 quota units from one shard no other transaction
	// holds, and the executions. Without such a shard it inserts nothing and
	// admitTx decides.
	sqlAdmitUnkeyed = `
WITH tok AS (
    UPDATE latch_quota_shards q SET free = q.free - $20
    FROM (SELECT shard FROM latch_quota_shards WHERE tenant = $1 AND free >= $20
          ORDER BY shard LIMIT 1 FOR UPDATE SKIP LOCKED) c
    WHERE q.tenant = $1 AND q.shard = c.shard
    RETURNING 1
)` + sqlInsertExecutions + `
WHERE EXISTS (SELECT 1 FROM tok)`
)

// Admit implements store.Store.
func (s *Store) Admit(ctx context.Context, p *store.AdmitParams) (*store.AdmitResult, error) {
	return s.feed.Admitted(s.admit(ctx, p))
}

// admit is the one submit path. In reading order:
//
//  1. prepare: each item validated and its execution built, before the
//     database is asked (admit.go);
//  2. admitAtOnce: one statement that decides the whole submit without
//     waiting for anything, or says it cannot and has changed nothing:
//     - one item: admitOne, sqlAdmitMany shared with the one-item submits
//     that arrive meanwhile (group commit: group.go, sql_group.go);
//     - several items, none with a dedup key: admitUnkeyed, sqlAdmitUnkeyed;
//     - several items with keys: admitKeyed, sqlAdmitMany alone, all or
//     nothing;
//  3. admitTx: what step 2 cannot decide — no quota unit at hand without
//     waiting for a shard (quota.go), a dedup key past its TTL, an unknown
//     tenant, a batch that cannot be admitted whole — and every submit
//     naming a schedule (it needs the schedule's lock: lockSchedules) runs
//     as one transaction that may wait (admit_tx.go).
//
// Each statement of step 2 is there because it paid in a benchmark against
// the transaction alone: one-item submits arriving together share one
// commit (concurrent same-key submits ran several times faster), and a
// batch is one round trip instead of a transaction's six or more.
//
// Every path returns its answers; the one statement a group shares
// answers each submission in its admitOp's out slot, which admitOne alone
// reads. Whatever the path, the dedup keys, the quota units and the
// executions of a submit are written in one transaction.
func (s *Store) admit(ctx context.Context, p *store.AdmitParams) (*store.AdmitResult, error) {
	t := now(p.Now)
	items := make([]item, len(p.Items))
	for i := range p.Items {
		items[i] = prepare(p.Tenant, &p.Items[i], t)
	}
	res, decided, err := s.admitAtOnce(ctx, p.Tenant, items, t)
	if decided || err != nil {
		return res, err
	}
	return s.admitTx(ctx, p.Tenant, items, t)
}

// admitAtOnce picks the statement that can decide the submit at once.
// decided is false when admitTx must decide: nothing was changed.
func (s *Store) admitAtOnce(ctx context.Context, tenant string, items []item, t time.Time) (res *store.AdmitResult, decided bool, err error) {
	var valid []int // the items prepare did not refuse
	keyed := false
	for i, it := range items {
		if it.err != nil {
			continue
		}
		if it.exec.Schedule != "" {
			return nil, false, nil // an execution of a schedule: under its lock, in admitTx
		}
		valid = append(valid, i)
		keyed = keyed || it.exec.DedupKey != ""
	}
	switch {
	case len(valid) == 0:
		return nil, false, nil
	case len(items) == 1:
		a, decided, err := s.admitOne(ctx, tenant, items[0].exec, t)
		if !decided || err != nil {
			return nil, decided, err
		}
		return &store.AdmitResult{Items: []store.Admitted{a}}, true, nil
	case !keyed:
		decided, err = s.admitUnkeyed(ctx, tenant, items, valid, t)
	default:
		decided, err = s.admitKeyed(ctx, tenant, items, valid, t)
	}
	if !decided || err != nil {
		return nil, false, err
	}
	s.changes.announce()
	return batchAnswer(items, t), true, nil
}

// admitOne admits one valid submission through sqlAdmitMany, shared with
// the one-item submits that arrive meanwhile (Store.run). decided is false
// when the statement could not decide: no quota unit at hand (the group
// aborted), a key that maps to an execution past its TTL, an unknown
// tenant.
func (s *Store) admitOne(ctx context.Context, tenant string, e *store.Execution, t time.Time) (a store.Admitted, decided bool, err error) {
	op := &admitOp{tenant: tenant, e: e, t: t}
	err = s.run(ctx, op)
	if aborted(err) {
		return store.Admitted{}, false, nil
	}
	if err != nil {
		return store.Admitted{}, false, interpretError(err)
	}
	out := &op.out
	switch {
	case out.created:
		s.changes.announce()
		return store.Admitted{Execution: e}, true, nil
	case out.same != nil: // created by an op of the group with the same key (its hit counted there)
		return *out.same, true, nil
	case e.DedupKey == "": // an unknown tenant
		return store.Admitted{}, false, nil
	case out.err != nil: // the group's hit statement may or may not have counted this hit
		return store.Admitted{}, false, interpretError(out.err)
	}
	// The key was taken. If it maps to a live execution, that is the
	// answer, and the statement that reads it counts the hit (dedup.go):
	// the group's, after its commit, or this submit's own.
	if !out.looked {
		err := s.write(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
			return hitKeys(ctx, c, []*admitOp{op})
		})
		if err != nil {
			return store.Admitted{}, false, fmt.Errorf("postgres: admit: dedup hit: %w", interpretError(err))
		}
	}
	if out.answer == nil {
		return store.Admitted{}, false, nil
	}
	return *out.answer, true, nil
}

// admitUnkeyed admits items[valid], which name no dedup key, in one
// statement, all or nothing (sqlAdmitUnkeyed). decided is false when no
// quota shard nobody holds has the units, the tenant's storage budget has
// not the room, or the tenant is unknown.
func (s *Store) admitUnkeyed(ctx context.Context, tenant string, items []item, valid []int, t time.Time) (decided bool, err error) {
	var n int64
	err = s.write(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		tag, err := c.Exec(ctx, sqlAdmitUnkeyed, append(executionArrays(tenant, t, items, valid), len(valid))...)
		n = tag.RowsAffected()
		return err
	})
	if aborted(err) { // over the storage budget: admitTx decides item by item
		return false, nil
	}
	if err != nil {
		return false, interpretError(err)
	}
	return n > 0, nil
}

// admitKeyed admits items[valid] in one statement (sqlAdmitMany, strict,
// not shared with other submits) when every one of them creates its
// execution: its key free, the units all at hand on one shard. Otherwise
// the statement aborts, having changed nothing, and decided is false.
func (s *Store) admitKeyed(ctx context.Context, tenant string, items []item, valid []int, t time.Time) (decided bool, err error) {
	ops := make([]groupOp, len(valid))
	for j, i := range valid {
		ops[j] = &admitOp{tenant: tenant, e: items[i].exec, t: t, strict: true}
	}
	err = s.write(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		st := buildAdmit(ops)
		rows, err := c.Query(ctx, st.sql, st.args...)
		if err != nil {
			return err
		}
		return st.read(rows)
	})
	if aborted(err) {
		return false, nil
	}
	if err != nil {
		return false, interpretError(err)
	}
	return true, nil
}

// batchAnswer answers a batch that admitUnkeyed or admitKeyed admitted
// whole at t: every valid item created its execution, but for a later item
// with an earlier item's key, which is deduplicated onto it, its hit
// counted in the insert as sqlAdmitMany counts a follower's.
func batchAnswer(items []item, t time.Time) *store.AdmitResult {
	res := &store.AdmitResult{Items: make([]store.Admitted, len(items))}
	first := map[string]*store.Execution{}
	hits := map[string]int{}
	for i, it := range items {
		switch e := it.exec; {
		case it.err != nil:
			res.Items[i].Err = it.err
		case e.DedupKey == "":
			res.Items[i].Execution = e
		case first[e.DedupKey] != nil && sameRequest(e, first[e.DedupKey]):
			hits[e.DedupKey]++
			res.Items[i] = hitAnswer(first[e.DedupKey], hits[e.DedupKey], t)
		case first[e.DedupKey] != nil:
			res.Items[i] = dedupAnswer(e, first[e.DedupKey])
		default:
			first[e.DedupKey] = e
			res.Items[i].Execution = e
		}
	}
	return res
}

// item is one submission, validated, with its execution built.
type item struct {
	exec *store.Execution
	err  error // a refusal decided before the database is asked
	hits int   // admitTx: later items deduplicated onto it, counted in its insert
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

// readKeys runs sql, sqlDedupLookup.
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

// dedupAnswer answers a submission whose key maps to existing without
// counting a hit: a reuse of the key (not sameRequest) is refused; the same
// request is deduplicated onto existing as it is (callers that count hits
// answer those with hitAnswer).
func dedupAnswer(sub, existing *store.Execution) store.Admitted {
	if !sameRequest(sub, existing) {
		return store.Admitted{Err: fmt.Errorf("dedup key %q maps to execution %s: %w",
			sub.DedupKey, existing.ID, store.ErrDedupKeyReused)}
	}
	return store.Admitted{Execution: existing, Deduplicated: true}
}
