package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/latch-run/latch/store"
)

// Spawn statements (children.go). $1 is the parent's id.
const (
	// The fence (sqlFence's conditions), locking the parent: $2 token, $3
	// tenant, $4 now.
	sqlSpawnLock = `SELECT tenant, cancel_requested, depth, children FROM latch_executions
WHERE id = $1 AND status = 'running' AND lease_token = $2 AND ($3 = '' OR tenant = $3)
  AND lease_expires_at >= $4
FOR UPDATE`

	// The journal's steps and bytes, and step $2 if it is recorded: its
	// result, whether it is a spawn's, and its record.
	sqlSpawnProbe = `
SELECT (SELECT count(*) FROM latch_steps WHERE execution_id = $1), ` + sqlJournalBytes + `,
    s.result, s.spawned IS NOT NULL, s.started_at, s.recorded_at, s.attempt
FROM (SELECT 1) one LEFT JOIN latch_steps s ON s.execution_id = $1 AND s.name = $2`

	// The children $2 of parent $1 in the order given, each with its
	// status now ('deleted' for one that no longer exists).
	sqlChildStatuses = `
SELECT c.id, coalesce(x.status, 'deleted') FROM unnest($2::text[]) WITH ORDINALITY AS c(id, n)
LEFT JOIN latch_executions x ON x.id = c.id::uuid AND x.parent_id = $1
ORDER BY c.n`

	// The children of $1 spawned by step $2 at $3, tenant $4, what their
	// parent's end does to them $5, their depth $6, the parent's children
	// before them $7, one row per element of the arrays $8.. in spawn
	// order. A cancelled child (its parent's cancel was requested) is
	// inserted finished.
	sqlInsertChildren = `
INSERT INTO latch_executions (id, tenant, kind, queue, priority, status, concurrency_key,
    concurrency_limit, rate_key, payload, max_attempts, timeout_seconds, created_at, run_at,
    finished_at, trace_parent, stored_bytes, parent_id, parent_step, on_parent_end, depth, child_ord)
SELECT u.id::uuid, $4, u.kind, u.queue, u.priority, u.status, nullif(u.ckey, ''),
    nullif(u.climit, 0), nullif(u.rkey, ''), u.payload, u.max_attempts, u.timeout_seconds, $3, u.run_at,
    CASE WHEN u.status = 'cancelled' THEN $3::timestamptz END, u.trace_parent, octet_length(u.payload),
    $1, $2, $5, $6, $7 + u.n
FROM unnest($8::text[], $9::text[], $10::text[], $11::int[], $12::text[], $13::text[], $14::int[],
    $15::text[], $16::text[], $17::int[], $18::int[], $19::timestamptz[], $20::text[])
    WITH ORDINALITY AS u(id, kind, queue, priority, status, ckey, climit, rkey, payload, max_attempts,
        timeout_seconds, run_at, trace_parent, n)`

	// The spawn's step $2 with result $3 at $4, its counters ($5 children,
	// $6 of them ended already), and the parent's count of children and
	// of bytes (the step's result counts in the storage budget).
	sqlSpawnRecord = `
WITH ins AS (
    INSERT INTO latch_steps (execution_id, name, result, recorded_at, attempt, spawned, ended)
    SELECT id, $2, $3, $4, attempt, $5, $6 FROM latch_executions WHERE id = $1
    RETURNING recorded_at, attempt
), p AS (
    UPDATE latch_executions SET has_steps = true, children = children + $5,
        stored_bytes = stored_bytes + octet_length($3)
    WHERE id = $1
)
SELECT recorded_at, attempt FROM ins`
)

// Spawn implements store.Store, as one transaction: the fence locks the
// parent; a recorded step answers its children; otherwise the bounds, the
// journal's room, the quota (takeQuota, as an admission takes it) and the
// storage budget are checked in that order, and the children and the
// step are written. Spawns of one parent run one after the other on its
// row lock, so its children's places (child_ord) follow spawn order.
func (s *Store) Spawn(ctx context.Context, p *store.SpawnParams) (*store.SpawnResult, error) {
	t := now(p.Now)
	if err := p.Check(t, math.MaxInt); err != nil {
		return nil, err
	}
	f, err := newFence(p.ExecutionID, p.Token, p.Tenant, t)
	if err != nil {
		return nil, err
	}
	var res *store.SpawnResult
	err = s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) (bool, error) {
		var err error
		res, err = spawnInTx(ctx, tx, f, p, t)
		return res != nil && res.Recorded, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: spawn: %w", err)
	}
	if res.Recorded {
		ids := []string{p.ExecutionID}
		for _, c := range res.Children {
			ids = append(ids, c.ID)
		}
		s.feed.Publish(ids...)
	}
	return res, nil
}

func spawnInTx(ctx context.Context, tx pgx.Tx, f fence, p *store.SpawnParams, t time.Time) (*store.SpawnResult, error) {
	var (
		tenant          string
		cancel          bool
		depth, children int
	)
	err := tx.QueryRow(ctx, sqlSpawnLock, f.id, f.token, f.tenant, t).Scan(&tenant, &cancel, &depth, &children)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("execution %s: %w", p.ExecutionID, store.ErrLeaseLost)
	}
	if err != nil {
		return nil, err
	}
	var (
		steps, size int
		result      *string
		isSpawn     bool
		st          stepRow
		recordedAt  *time.Time
		attempt     *int
	)
	if err := tx.QueryRow(ctx, sqlSpawnProbe, f.id, p.Step).Scan(&steps, &size, &result, &isSpawn,
		&st.startedAt, &recordedAt, &attempt); err != nil {
		return nil, err
	}
	if result != nil {
		ids, ok := store.ParseSpawnStep(json.RawMessage(*result))
		if !isSpawn || !ok {
			return nil, fmt.Errorf("%w: step %q of execution %s is recorded and is not a spawn", store.ErrInvalid,
				p.Step, p.ExecutionID)
		}
		st.name, st.result, st.recordedAt, st.attempt = p.Step, *result, *recordedAt, *attempt
		refs, err := childStatuses(ctx, tx, f.id, ids)
		if err != nil {
			return nil, err
		}
		return &store.SpawnResult{Step: st.step(), Children: refs}, nil
	}
	n := len(p.Items)
	switch {
	case n > p.ItemBound():
		return nil, fmt.Errorf("a spawn of %d children passes the bound of %d: %w", n, p.ItemBound(),
			store.ErrTooManyChildren)
	case children+n > p.ChildBound():
		return nil, fmt.Errorf("execution %s has %d children, %d more pass the bound of %d: %w", p.ExecutionID,
			children, n, p.ChildBound(), store.ErrTooManyChildren)
	case depth+1 > p.DepthBound():
		return nil, fmt.Errorf("execution %s has depth %d, its children would pass the bound of %d: %w",
			p.ExecutionID, depth, p.DepthBound(), store.ErrTooManyChildren)
	}
	ends := p.Ends()
	items := make([]item, n)
	ids := make([]string, n)
	live, cancelled := 0, 0
	var payloads int64
	for i := range p.Items {
		e := newExecution(tenant, &p.Items[i], t)
		if cancel && ends == store.ParentEndCancel {
			e.Status = store.StatusCancelled
			cancelled++
		} else {
			live++
		}
		items[i], ids[i] = item{exec: e}, e.ID
		payloads += e.StoredBytes
	}
	stepResult := store.SpawnStep(ids)
	switch {
	case steps >= p.StepBound():
		return nil, fmt.Errorf("execution %s holds %d steps, its bound %d: %w", p.ExecutionID, steps,
			p.StepBound(), store.ErrTooManySteps)
	case size+store.StepSize(p.Step, stepResult) > p.ByteBound():
		return nil, fmt.Errorf("execution %s holds %d bytes of steps, a step of %d passes its bound %d: %w",
			p.ExecutionID, size, store.StepSize(p.Step, stepResult), p.ByteBound(), store.ErrJournalTooLarge)
	}
	got, err := takeQuota(ctx, tx, tenant, live)
	if err != nil {
		return nil, err
	}
	if got < live {
		return nil, fmt.Errorf("tenant %q is at its max_inflight, %d children need %d: %w", tenant, live, live-got,
			store.ErrQuotaExceeded)
	}
	room, err := storageRoom(ctx, tx, tenant)
	if err != nil {
		return nil, err
	}
	if need := payloads + store.StoredSize(stepResult); need > room {
		return nil, fmt.Errorf("tenant %q: a spawn of %d bytes with %d left of its storage budget: %w", tenant, need,
			room, store.ErrStorageExceeded)
	}
	if _, err := tx.Exec(ctx, sqlInsertChildren, childArrays(f.id, p.Step, t, tenant, ends, depth+1, children, items)...); err != nil {
		return nil, fmt.Errorf("postgres: spawn: insert: %w", err)
	}
	var at time.Time
	var att int
	if err := tx.QueryRow(ctx, sqlSpawnRecord, f.id, p.Step, string(stepResult), t, n, cancelled).Scan(&at, &att); err != nil {
		return nil, fmt.Errorf("postgres: spawn: record: %w", interpretError(err))
	}
	res := &store.SpawnResult{Recorded: true,
		Step: store.Step{Name: p.Step, Result: stepResult, RecordedAt: at.UTC(), Attempt: att}}
	for _, it := range items {
		res.Children = append(res.Children, store.ChildRef{ID: it.exec.ID, Status: it.exec.Status})
	}
	return res, nil
}

// childStatuses answers the children ids of parent with their statuses now.
func childStatuses(ctx context.Context, tx pgx.Tx, parent uuid.UUID, ids []string) ([]store.ChildRef, error) {
	rows, err := tx.Query(ctx, sqlChildStatuses, parent, ids)
	if err != nil {
		return nil, err
	}
	refs := make([]store.ChildRef, 0, len(ids))
	var id, status string
	_, err = pgx.ForEachRow(rows, []any{&id, &status}, func() error {
		refs = append(refs, store.ChildRef{ID: id, Status: store.Status(status)})
		return nil
	})
	return refs, err
}

// childArrays are the arguments of sqlInsertChildren.
func childArrays(parent uuid.UUID, step string, t time.Time, tenant string, ends store.ParentEnd, depth, before int,
	items []item) []any {
	n := len(items)
	var (
		ids, kinds, queues, statuses, ckeys, rkeys, payloads, traces = make([]string, n), make([]string, n),
			make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n),
			make([]*string, n)
		prios, climits, attempts, timeouts = make([]int, n), make([]int, n), make([]int, n), make([]int, n)
		runAts                             = make([]time.Time, n)
	)
	for i, it := range items {
		e := it.exec
		ids[i], kinds[i], queues[i], statuses[i] = e.ID, e.Kind, e.Queue, string(e.Status)
		ckeys[i], rkeys[i], payloads[i], traces[i] = e.ConcurrencyKey, e.RateKey, string(e.Payload), strPtr(e.TraceParent)
		prios[i], climits[i], attempts[i], timeouts[i] = e.Priority, e.ConcurrencyLimit, e.MaxAttempts, e.TimeoutSeconds
		runAts[i] = e.RunAt
	}
	return []any{parent, step, t, tenant, string(ends), depth, before, ids, kinds, queues, prios, statuses, ckeys,
		climits, rkeys, payloads, attempts, timeouts, runAts, traces}
}
