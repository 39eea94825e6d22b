package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/latch-run/latch/store"
)

// admitTx is step 3 of Store.admit: it admits a group in one transaction,
// which may wait for locks and quota shards. Items are decided in order as
// if submitted singly:
//
//  0. the schedules the items name are locked, shared (lockSchedules), so
//     that a concurrent FireSchedule's overlap check sees these executions;
//  1. every dedup key of the group is bound in one statement, in key order
//     (ON CONFLICT DO NOTHING: the unique index decides, never a read); a
//     key that is taken is read, and if its TTL has passed it is removed by
//     compare-and-delete and bound again. The executions the taken keys
//     map to are then read again, their hits counted, and held until the
//     commit (lockHits), so that the answer shows them as they are when it
//     commits;
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
	a, err := bindAdmission(ctx, tx, tenant, items, t, false)
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
	// reserve is what the caller counts in the storage budget before the
	// items (a publish's event, events.go): finish refuses the whole
	// admission with ErrStorageExceeded when the budget has not room for
	// it, and decides the items with the rest.
	reserve int64
}

// bindAdmission is step 1 of admitInTx: it reads the tenant, takes the
// shared locks of the schedules the items name (lockSchedules), binds the
// keys and locks the hits, counting them (dedup.go), and answers the items
// whose key maps to an execution. An item that asks for what the execution
// is (sameRequest) is a hit, anything else a reuse of the key; with tick
// (FireSchedule) every item the key answers is a hit, whatever the
// execution holds.
func bindAdmission(ctx context.Context, tx pgx.Tx, tenant string, items []item, t time.Time, tick bool) (*admission, error) {
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
	// The executions the taken keys map to, their hits counted and the rows
	// locked until the commit (lockHits), before this transaction waits for
	// anything else.
	isHit := func(it item) bool { return tick || sameRequest(it.exec, a.hits[it.exec.DedupKey]) }
	counts := map[string]int{}
	for _, it := range items {
		if it.err == nil && a.hits[it.exec.DedupKey] != nil && isHit(it) {
			counts[it.exec.DedupKey]++
		}
	}
	if a.hits, err = lockHits(ctx, tx, tenant, a.hits, counts, t); err != nil {
		return nil, err
	}
	// Every item with a key that maps to an execution is answered here, in
	// order: the hits numbered as they come.
	rank := map[string]int{}
	for i, it := range items {
		if it.err != nil || a.hits[it.exec.DedupKey] == nil {
			continue
		}
		key, h := it.exec.DedupKey, a.hits[it.exec.DedupKey]
		a.dec[i] = decHit
		if !isHit(it) {
			a.res.Items[i] = dedupAnswer(it.exec, h)
			continue
		}
		rank[key]++
		a.res.Items[i] = hitAnswer(h, h.DedupHits-counts[key]+rank[key], t)
	}
	return a, nil
}

// finish is steps 2 and 3 of admitInTx: the quota of the items that create
// executions, and their insert. changed reports whether any was inserted.
func (a *admission) finish(ctx context.Context, tx pgx.Tx) (*store.AdmitResult, bool, error) {
	tenant, items, res, dec, first := a.tenant, a.items, a.res, a.dec, a.first
	// 2. Quota for the items that create executions, in order.
	var fresh []int
	for i := range items {
		items[i].hits = 0
		if dec[i] == decNew {
			fresh = append(fresh, i)
		}
	}
	got, err := takeQuota(ctx, tx, tenant, len(fresh))
	if err != nil {
		return nil, false, err
	}
	// 2b. The storage budget for the items quota admitted, in order, with
	// the tenant's count locked (the check and the inserts are one step);
	// one refused gives its quota unit back.
	room, err := storageRoom(ctx, tx, tenant)
	if err != nil {
		return nil, false, err
	}
	if a.reserve > 0 {
		if a.reserve > room {
			return nil, false, fmt.Errorf("tenant %q: %d bytes with %d left of its storage budget: %w", tenant,
				a.reserve, room, store.ErrStorageExceeded)
		}
		room -= a.reserve
	}
	var admitted []int
	var unbindKeys, unbindIDs []string
	for n, i := range fresh {
		e := items[i].exec
		switch {
		case n < got && e.StoredBytes <= room:
			res.Items[i].Execution = e
			admitted = append(admitted, i)
			room -= e.StoredBytes
			continue
		case n < got:
			res.Items[i].Err = fmt.Errorf("tenant %q: a payload of %d bytes with %d left of its storage budget: %w",
				tenant, e.StoredBytes, room, store.ErrStorageExceeded)
		default:
			res.Items[i].Err = fmt.Errorf("tenant %q is at its max_inflight: %w", tenant, store.ErrQuotaExceeded)
		}
		if e.DedupKey != "" {
			unbindKeys, unbindIDs = append(unbindKeys, e.DedupKey), append(unbindIDs, e.ID)
		}
	}
	if err := returnQuota(ctx, tx, tenant, got-len(admitted)); err != nil {
		return nil, false, err
	}
	if len(unbindKeys) > 0 {
		if _, err := tx.Exec(ctx, sqlUnbindKeys, tenant, unbindKeys, unbindIDs); err != nil {
			return nil, false, fmt.Errorf("postgres: admit: unbind: %w", err)
		}
	}
	// Later items with an earlier item's key (not one that mapped to an
	// execution before the group: bindAdmission answered those): as if
	// submitted after it. Their hits are counted in the insert.
	for i := range items {
		if dec[i] != decSameAs {
			continue
		}
		j := first[items[i].exec.DedupKey]
		switch x := res.Items[j].Execution; {
		case x != nil && sameRequest(items[i].exec, x): // the group's first item created it
			items[j].hits++
			res.Items[i] = hitAnswer(x, items[j].hits, a.t)
		case x != nil:
			res.Items[i] = dedupAnswer(items[i].exec, x)
		default: // the first was refused (quota, storage): the key is free, the quota still spent
			res.Items[i].Err = res.Items[j].Err
		}
	}

	// 3. Insert the admitted executions.
	if len(admitted) == 0 {
		return res, false, nil
	}
	if err := insertExecutions(ctx, tx, tenant, items, admitted, a.t); err != nil {
		return nil, false, err
	}
	return res, true, nil
}

// errHitMoved rolls back and reruns an admitInTx whose dedup hit changed
// hands before it could lock it (see lockHits). It is a serialization
// failure in all but name, and retried like one.
var errHitMoved = &pgconn.PgError{Code: codeSerializationFailure,
	Message: "latch: a dedup key changed hands during the admission; run it again"}

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

// executionArrays are the arguments $1..$19 of sqlInsertExecutions for the
// executions of items[idx].
func executionArrays(tenant string, t time.Time, items []item, idx []int) []any {
	n := len(idx)
	var (
		ids, kinds, queues, statuses, keys, ckeys, rkeys, payloads, schedules = make([]string, n),
			make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n),
			make([]string, n), make([]string, n), make([]string, n)
		prios, climits, attempts, timeouts = make([]int, n), make([]int, n), make([]int, n), make([]int, n)
		runAts                             = make([]time.Time, n)
		traces                             = make([]*string, n)
		hits                               []int        // nil (NULL) unless one has hits
		lastHits                           []*time.Time // likewise
	)
	for j, i := range idx {
		e := items[i].exec
		ids[j], kinds[j], queues[j], statuses[j] = e.ID, e.Kind, e.Queue, string(e.Status)
		keys[j], ckeys[j], rkeys[j], payloads[j], schedules[j] = e.DedupKey, e.ConcurrencyKey, e.RateKey, string(e.Payload), e.Schedule
		prios[j], climits[j], attempts[j], timeouts[j] = e.Priority, e.ConcurrencyLimit, e.MaxAttempts, e.TimeoutSeconds
		runAts[j], traces[j] = e.RunAt, strPtr(e.TraceParent)
		if h := items[i].hits; h > 0 {
			if hits == nil {
				hits, lastHits = make([]int, n), make([]*time.Time, n)
			}
			hits[j], lastHits[j] = h, &t
		}
	}
	return []any{tenant, t, ids, kinds, queues, prios, statuses, keys, ckeys,
		climits, rkeys, payloads, attempts, timeouts, schedules, runAts, traces, hits, lastHits}
}
