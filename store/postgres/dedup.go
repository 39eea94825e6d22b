package postgres

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latch-run/latch/store"
)

// Dedup hits (store.Execution.DedupHits). A submission (or a schedule's
// tick) that its dedup key answers with an existing execution is a hit, and
// the statement that answers it counts it: an UPDATE of the execution's row,
// dedup_hits = dedup_hits + n, last_dedup_hit_at = the hit's now, whose
// RETURNING is the answer. The row lock orders the hits of one execution, so
// the count is exact however many come at once, and each answer shows the
// count with its own hit (n hits answered by one statement are numbered in
// their order in it). A submission that creates its execution writes
// nothing more: the plain submit path is as it was.
//
// Where a hit is counted:
//   - a one-item Admit whose key was taken (sqlAdmitMany bound nothing for
//     it): after its group commits, one statement for the group's taken keys
//     (sqlHitKeys), or the submit's own if that one could not run;
//   - an item of one statement with the same key as an earlier item that
//     created the execution (a group's followers, a batch's later items):
//     counted in the insert of the execution itself, as if those hits came
//     right after it (sqlAdmitMany, sqlInsertExecutions);
//   - admitTx and FireSchedule: when the hits are locked (lockHits), before
//     the transaction waits for anything else.
//
// Locks: a hit takes the execution's row lock (FOR NO KEY UPDATE, in id
// order when it takes several) and, in the statements above, holds nothing
// else while it waits for it, or (in admitTx) only the schedule locks and the
// dedup keys it binds, which neither a claim nor a cancel takes. A claim
// passes a row a hit holds (SKIP LOCKED) and holds its candidates only while
// it takes advisory locks, rate-limit rows and tenant rows (SKIP LOCKED),
// none of which a hit holds; a cancel holds the one row and then waits for
// quota shards only, which no hit holds while it waits for an execution
// (admitTx locks hits before it takes quota). So a hit waits for a claim or a
// cancel of its execution to commit and is never part of a cycle with them.

// sqlHitKeys answers submissions whose dedup keys were taken, one element
// per submission of each array ($1 tenants, $2 keys, $3 kinds, $4
// payloads, $5 nows): for each whose key maps to an execution (TTL not
// passed at its now), a row with the execution: a hit (same kind and
// payload) with the execution after the count, total its new dedup_hits and
// cnt the hits this statement counted on it; a reuse (anything else) with
// the execution as read and total NULL. A submission without a row is not
// decided here (no live mapping: admitTx decides). The executions hit are
// locked in id order before any is updated.
var sqlHitKeys = `
WITH u AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[])
    WITH ORDINALITY AS u(tenant, dedup_key, kind, payload, now, n)
), m AS MATERIALIZED (
    SELECT u.n, u.now, e.id, e.kind = u.kind AND e.payload = u.payload AS same
    FROM u JOIN latch_dedup_keys d ON d.tenant = u.tenant AND d.dedup_key = u.dedup_key
    JOIN latch_executions e ON e.id = d.execution_id
    WHERE d.expires_at > u.now
), c AS MATERIALIZED (
    SELECT m.id, count(*)::int AS hits, (array_agg(m.now ORDER BY m.n DESC))[1] AS last
    FROM m WHERE m.same GROUP BY m.id
), l AS MATERIALIZED (
    SELECT x.id FROM latch_executions x WHERE x.id = ANY(ARRAY(SELECT c.id FROM c))
    ORDER BY x.id FOR NO KEY UPDATE OF x
), h AS (
    UPDATE latch_executions x SET dedup_hits = x.dedup_hits + c.hits, last_dedup_hit_at = c.last
    FROM c WHERE x.id = ANY(ARRAY(SELECT l.id FROM l)) AND x.id = c.id
    RETURNING x.id AS hit_id, x.dedup_hits AS total, c.hits AS cnt, ` + columns("x") + `
)
SELECT m.n, h.* FROM m JOIN h ON h.hit_id = m.id WHERE m.same
UNION ALL
SELECT m.n, e.id, NULL::int, NULL::int, ` + columns("e") + `
FROM m JOIN latch_executions e ON e.id = m.id WHERE NOT m.same`

// sqlLockHits is admitTx's: it locks the executions that tenant $1's keys
// $2 map to, in id order, and counts $3 hits (per key) at $4, returning
// each key's TTL end and execution as it is now: after the count, or, for
// a key with no hit to count (it only answers reuses), as locked, which
// is its newest version, unchanged.
var sqlLockHits = `
WITH l AS MATERIALIZED (
    SELECT d.dedup_key AS k, d.expires_at AS k_expires, u.hits AS k_hits, e.*
    FROM unnest($2::text[], $3::int[]) AS u(dedup_key, hits)
    JOIN latch_dedup_keys d ON d.tenant = $1 AND d.dedup_key = u.dedup_key
    JOIN latch_executions e ON e.id = d.execution_id
    ORDER BY e.id FOR NO KEY UPDATE OF e
), h AS (
    UPDATE latch_executions x SET dedup_hits = x.dedup_hits + l.k_hits, last_dedup_hit_at = $4
    FROM l WHERE x.id = ANY(ARRAY(SELECT l.id FROM l WHERE l.k_hits > 0)) AND x.id = l.id
    RETURNING l.k, l.k_expires, ` + columns("x") + `
)
SELECT * FROM h
UNION ALL
SELECT l.k, l.k_expires, ` + columns("l") + ` FROM l WHERE l.k_hits = 0`

// sameRequest reports whether sub asks for what existing is (same kind, same
// canonical payload): then a dedup key that maps to existing answers sub
// with it, a hit; otherwise the key is reused (dedupAnswer).
func sameRequest(sub, existing *store.Execution) bool {
	return existing.Kind == sub.Kind && string(existing.Payload) == string(sub.Payload)
}

// hitAnswer answers a hit on existing, the hits-th counted on it, at t: a
// copy of existing showing that count.
func hitAnswer(existing *store.Execution, hits int, t time.Time) store.Admitted {
	x := *existing
	at := t
	x.DedupHits, x.LastDedupHitAt = hits, &at
	return store.Admitted{Execution: &x, Deduplicated: true}
}

// settleHits answers, after their group committed, the one-item submits
// whose key was taken (sqlHitKeys), one statement for them all. A submit
// left unanswered runs it alone (admitOne); if the statement's outcome is
// unknown (the connection failed), those submits fail with its error rather
// than count their hits twice.
func settleHits(ctx context.Context, q querier, ops []groupOp) {
	var taken []*admitOp
	for _, g := range ops {
		if o := g.(*admitOp); !o.out.created && o.out.same == nil && o.e.DedupKey != "" {
			taken = append(taken, o)
		}
	}
	if len(taken) == 0 {
		return
	}
	err := hitKeys(ctx, q, taken)
	if err != nil && !isServerError(err) {
		for _, o := range taken {
			o.out.err = err
		}
	}
}

// hitKeys runs sqlHitKeys for ops and sets each op's answer (none: not
// decided); looked is set once the statement ran.
func hitKeys(ctx context.Context, q querier, ops []*admitOp) error {
	n := len(ops)
	tenants, keys, kinds, payloads, nows := make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]time.Time, n)
	for i, o := range ops {
		o.out.answer, o.out.looked = nil, false
		tenants[i], keys[i], kinds[i], payloads[i], nows[i] = o.tenant, o.e.DedupKey, o.e.Kind, string(o.e.Payload), o.t
	}
	rows, err := q.Query(ctx, sqlHitKeys, tenants, keys, kinds, payloads, nows)
	if err != nil {
		return err
	}
	type hitRow struct {
		total, cnt *int
		exec       *store.Execution
	}
	found := map[int64]hitRow{}
	byExec := map[string][]int64{} // hits, per execution
	err = func() error {
		defer rows.Close()
		for rows.Next() {
			var k int64
			var id any
			var r hitRow
			var err error
			r.exec, err = scanExecution(prefixed{rows, []any{&k, &id, &r.total, &r.cnt}})
			if err != nil {
				return err
			}
			if k < 1 || int(k) > n {
				return errors.New("postgres: dedup hit for no submission")
			}
			found[k] = r
			if r.total != nil {
				byExec[r.exec.ID] = append(byExec[r.exec.ID], k)
			}
		}
		return rows.Err()
	}()
	if err != nil {
		return err
	}
	for _, ks := range byExec {
		slices.Sort(ks)
		for rank, k := range ks {
			r, o := found[k], ops[k-1]
			a := hitAnswer(r.exec, *r.total-*r.cnt+rank+1, o.t)
			o.out.answer = &a
		}
	}
	for k, r := range found {
		if r.total == nil {
			o := ops[k-1]
			a := dedupAnswer(o.e, r.exec)
			o.out.answer = &a
		}
	}
	for _, o := range ops {
		o.out.looked = true
	}
	return nil
}

// lockHits returns each hit's execution as it is now, its count moved by
// counts[key] (at t), and holds it until the transaction ends, so that the
// answer shows it as it is at the commit. Without the lock, the hit was
// read before the quota wait and a change committed meanwhile — a Fail
// whose freed unit the group then takes, a Complete that a later reader
// sees — went unseen by the answer while its effects were used or observed.
// The lock wait is on execution rows, in id order, before any quota shard:
// the order every path that changes an execution and its quota takes, so
// it adds no deadlock. Claims pass a held queued hit by (SKIP LOCKED) until
// the commit, as the Claim contract allows. A key that no longer maps to the
// same live execution — its execution deleted, or the key re-bound,
// meanwhile — reruns the whole transaction (errHitMoved), which then binds
// or reads it anew; the counts roll back with it.
func lockHits(ctx context.Context, tx pgx.Tx, tenant string, hits map[string]*store.Execution,
	counts map[string]int, t time.Time) (map[string]*store.Execution, error) {
	if len(hits) == 0 {
		return hits, nil
	}
	keys := make([]string, 0, len(hits))
	for key := range hits {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	ns := make([]int, len(keys))
	for i, key := range keys {
		ns[i] = counts[key]
	}
	rows, err := tx.Query(ctx, sqlLockHits, tenant, keys, ns, t)
	if err != nil {
		return nil, err
	}
	found := map[string]keyHit{}
	err = func() error {
		defer rows.Close()
		for rows.Next() {
			var key string
			var h keyHit
			h.exec, err = scanExecution(prefixed{rows, []any{&key, &h.expires}})
			if err != nil {
				return err
			}
			found[key] = h
		}
		return rows.Err()
	}()
	if err != nil {
		return nil, err
	}
	locked := make(map[string]*store.Execution, len(keys))
	for _, key := range keys {
		h, ok := found[key]
		if !ok || !h.liveAt(t) || h.exec.ID != hits[key].ID {
			return nil, errHitMoved
		}
		locked[key] = h.exec
	}
	return locked, nil
}
