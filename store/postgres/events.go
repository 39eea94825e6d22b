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
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/latch-run/latch/store"
)

// Events and subscriptions (store/events.go, doc.go "Events"). A publish
// and a wait for an event of one tenant's name decide one after the other
// on the name's advisory lock (lockSpaceEvent): a Suspend takes it after
// its fence locked the running execution and reads the events after it; a
// Publish takes it before it inserts its event and looks for the
// suspended waits. Either the wait's read sees the event, committed by the
// publish that held the lock before, or the publish's read sees the wait,
// committed by the suspend that held it before: the wake-up is never lost.
const (
	// The tenant and its event retention, the row held (FOR KEY SHARE)
	// so that a DeleteTenant waits for the publish, or the publish for
	// it, before either takes another lock.
	sqlPublishTenant = `SELECT event_retention FROM latch_tenants WHERE name = $1 FOR KEY SHARE`

	// The kept answer of a publish with idempotency key $2.
	sqlPublishAnswer = `SELECT answer, expires_at > $3 FROM latch_events WHERE tenant = $1 AND idempotency_key = $2`

	// An expired event, until Prune deletes it, keeps its bytes but not
	// its idempotency key $2: a publish with the key is a new event.
	sqlFreeEventKey = `UPDATE latch_events SET idempotency_key = NULL
WHERE tenant = $1 AND idempotency_key = $2 AND expires_at <= $3`

	// The event; a taken idempotency key inserts nothing (the unique
	// index waits for its inserter and decides).
	sqlInsertEvent = `
INSERT INTO latch_events (id, tenant, name, key, data, published_at, expires_at, size, idempotency_key)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (tenant, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
RETURNING seq`

	// The suspended waits of tenant $1 for waiting_for $2 that an event
	// of key $4 (NULL: none) published at $3 matches, locked in id order
	// (latch_executions_event_waits). A wait that ended meanwhile (a Wake,
	// a Cancel) is re-checked on its newest version and left out.
	sqlEventWaiters = `SELECT id FROM latch_executions
WHERE tenant = $1 AND waiting_for = $2 AND status = 'suspended' AND wait_since IS NOT NULL
  AND wait_since <= $3 AND (wait_key IS NULL OR wait_key = $4)
ORDER BY id FOR UPDATE`

	// The waits' steps and the bytes of their journals.
	sqlEventWaiterRooms = `SELECT e.id, e.suspend_step, latch_journal_bytes(e.id) FROM latch_executions e
WHERE e.id = ANY($1::uuid[])`

	// The waits $1 end with the event $3: each records its step (results
	// $2), a copy of the event counted in its stored bytes (and, by the
	// trigger, its tenant's: the storage row this transaction holds),
	// consumes the event and is queued again at $4, a resume.
	sqlEventResume = `
WITH v AS (
    SELECT * FROM unnest($1::uuid[], $2::text[]) AS v(id, result)
), c AS (
    INSERT INTO latch_event_consumed (execution_id, event_id) SELECT v.id, $3 FROM v
    ON CONFLICT DO NOTHING
), ins AS (
    INSERT INTO latch_steps (execution_id, name, result, recorded_at, attempt)
    SELECT e.id, e.suspend_step, v.result, $4, e.attempt FROM latch_executions e JOIN v ON v.id = e.id
    WHERE e.id = ANY($1::uuid[]) AND e.suspend_step IS NOT NULL
    ON CONFLICT (execution_id, name) DO NOTHING
    RETURNING execution_id, octet_length(result) AS n
)
UPDATE latch_executions e SET status = 'queued', run_at = $4, resume = true, has_steps = true,
    wake_at = NULL, waiting_for = NULL, suspend_step = NULL, wait_key = NULL, wait_since = NULL,
    stored_bytes = e.stored_bytes + coalesce((SELECT ins.n FROM ins WHERE ins.execution_id = e.id), 0)
FROM v WHERE e.id = v.id AND e.id = ANY($1::uuid[])`

	// The enabled subscriptions of tenant $1 on event $2, in name order.
	sqlEventSubscriptions = `SELECT ` + subscriptionColumns + ` FROM latch_subscriptions
WHERE tenant = $1 AND event = $2 AND enabled ORDER BY name`

	sqlCountEvent = `UPDATE latch_storage SET stored_bytes = stored_bytes + $2 WHERE tenant = $1`
	sqlKeepAnswer = `UPDATE latch_events SET answer = $2 WHERE id = $1`

	// A wait's oldest match (Suspend): an event of tenant $1 named $2
	// (of key $6, NULL = any), published at or after $3 (NULL: the
	// execution $4's created_at), retained at $5, that $4 has not
	// consumed (latch_event_match, migration 16: by index, whatever the
	// statistics).
	sqlEventMatch = `SELECT id, key, data, published_at FROM latch_event_match($1, $2, $6, $3, $4, $5)`

	sqlConsumeEvent = `INSERT INTO latch_event_consumed (execution_id, event_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`

	// Events whose ExpiresAt has come ($1), up to $2, with their
	// idempotency keys; their bytes leave their tenants' counts
	// (latch_prune_events, migration 16).
	sqlPruneEvents = `SELECT latch_prune_events($1, $2)`
)

// errKeyMoved reruns a publish whose idempotency key was taken by an
// event that was pruned before its answer could be read: a serialization
// failure in all but name, retried like one.
var errKeyMoved = &pgconn.PgError{Code: codeSerializationFailure,
	Message: "latch: an event's idempotency key changed hands during the publish; run it again"}

// Publish implements store.Store, as one transaction (doc.go "Events"):
// the tenant row (FOR KEY SHARE), a kept answer, the event name's lock,
// the event's insert (its idempotency key decided by the unique index),
// the matching waits locked in id order and their steps made, the
// subscriptions' starts admitted as Admit admits (dedup keys, quota
// shards, then the storage row, with the event's bytes and the steps'
// reserved first: no room for them, ErrStorageExceeded and nothing
// written), the event's bytes counted, then the waits resumed (rows
// already held, each counting its step) and the answer kept.
func (s *Store) Publish(ctx context.Context, p *store.PublishParams) (*store.PublishResult, error) {
	if p.Tenant == "" {
		return nil, fmt.Errorf("%w: a publish names its tenant", store.ErrInvalid)
	}
	if err := p.Check(math.MaxInt); err != nil {
		return nil, err
	}
	t := micro(now(p.Now))
	data := json.RawMessage("null")
	if len(p.Data) > 0 {
		data = p.Data
	}
	var res *store.PublishResult
	var changed []string
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) (bool, error) {
		var err error
		changed = nil
		res, changed, err = publishInTx(ctx, tx, p, data, t)
		return len(changed) > 0, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: publish: %w", err)
	}
	s.feed.Publish(changed...)
	return res, nil
}

func publishInTx(ctx context.Context, tx pgx.Tx, p *store.PublishParams, data json.RawMessage, t time.Time) (
	*store.PublishResult, []string, error) {
	var retention int64
	if err := tx.QueryRow(ctx, sqlPublishTenant, p.Tenant).Scan(&retention); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, nil, fmt.Errorf("tenant %q: %w", p.Tenant, store.ErrNotFound)
		}
		return nil, nil, err
	}
	key := strPtr(p.IdempotencyKey)
	if key != nil {
		if r, err := keptAnswer(ctx, tx, p.Tenant, *key, t); r != nil || err != nil {
			return r, nil, err
		}
	}
	if err := lockPairs(ctx, tx, lockSpaceEvent, false, []string{p.Tenant}, []string{p.Name}); err != nil {
		return nil, nil, err
	}
	ev := &store.Event{ID: uuid.Must(uuid.NewV7()).String(), Tenant: p.Tenant, Name: p.Name, Key: p.Key,
		Data: data, PublishedAt: t, ExpiresAt: micro(t.Add(time.Duration(retention)))}
	size := store.EventSize(p.Name, p.Key, p.Data)
	var seq int64
	err := tx.QueryRow(ctx, sqlInsertEvent, ev.ID, p.Tenant, p.Name, strPtr(p.Key), string(data), ev.PublishedAt,
		ev.ExpiresAt, size, key).Scan(&seq)
	if errors.Is(err, pgx.ErrNoRows) { // a concurrent publish of the key committed first
		r, err := keptAnswer(ctx, tx, p.Tenant, *key, t)
		if r == nil && err == nil {
			err = errKeyMoved
		}
		return r, nil, err
	}
	if err != nil {
		return nil, nil, err
	}

	// The waits, locked before anything that waits for quota or storage.
	rows, err := tx.Query(ctx, sqlEventWaiters, p.Tenant, store.EventWaitFor(p.Name), ev.PublishedAt, strPtr(p.Key))
	if err != nil {
		return nil, nil, err
	}
	waiters, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, nil, err
	}
	// Their steps, each a copy of the event that counts in the budget
	// with it.
	var ids []uuid.UUID
	var results []string
	reserve := size
	if len(waiters) > 0 {
		if ids, results, err = eventSteps(ctx, tx, waiters, ev); err != nil {
			return nil, nil, err
		}
		for _, r := range results {
			reserve += int64(len(r))
		}
	}

	// The subscriptions' starts, admitted as Admit admits, the event's
	// bytes and its copies reserved first.
	subs, err := scanSubscriptions(tx.Query(ctx, sqlEventSubscriptions, p.Tenant, p.Name))
	if err != nil {
		return nil, nil, err
	}
	items := make([]item, len(subs))
	for i, sub := range subs {
		items[i] = prepare(p.Tenant, sub.StartSubmission(ev, p.TraceParent), t)
	}
	a, err := bindAdmission(ctx, tx, p.Tenant, items, t, false)
	if err != nil {
		return nil, nil, err
	}
	a.reserve = reserve
	admitted, _, err := a.finish(ctx, tx)
	if err != nil {
		return nil, nil, err
	}
	if _, err := tx.Exec(ctx, sqlCountEvent, p.Tenant, size); err != nil {
		return nil, nil, err
	}
	res := &store.PublishResult{EventID: ev.ID, Started: make([]store.EventStart, len(subs))}
	var changed []string
	for i, sub := range subs {
		st := store.EventStart{Subscription: sub.Name, Err: admitted.Items[i].Err}
		if x := admitted.Items[i].Execution; x != nil {
			st.ExecutionID = x.ID
			changed = append(changed, x.ID)
		}
		res.Started[i] = st
	}

	// The waits end with the event: rows this transaction holds, their
	// copies counted in the room reserved for them.
	if len(ids) > 0 {
		if _, err := tx.Exec(ctx, sqlEventResume, ids, results, ev.ID, t); err != nil {
			return nil, nil, err
		}
		res.Resumed = len(ids)
		for _, id := range ids {
			changed = append(changed, id.String())
		}
	}
	if _, err := tx.Exec(ctx, sqlKeepAnswer, ev.ID, string(store.MarshalPublishAnswer(res))); err != nil {
		return nil, nil, err
	}
	return res, changed, nil
}

// keptAnswer is the answer kept with the tenant's retained event of
// idempotency key at t, nil when none. An expired event that Prune has not
// deleted yet gives its key up here (sqlFreeEventKey).
func keptAnswer(ctx context.Context, tx pgx.Tx, tenant, key string, t time.Time) (*store.PublishResult, error) {
	var answer *string
	var kept bool
	err := tx.QueryRow(ctx, sqlPublishAnswer, tenant, key, t).Scan(&answer, &kept)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !kept {
		_, err := tx.Exec(ctx, sqlFreeEventKey, tenant, key, t)
		return nil, err
	}
	if answer == nil { // only while its publish is uncommitted, which no other statement sees
		return nil, fmt.Errorf("postgres: event of idempotency key %q has no answer", key)
	}
	return store.UnmarshalPublishAnswer([]byte(*answer))
}

// eventSteps answers the steps the waits record for ev, each
// EventStepWithin the room of its journal.
func eventSteps(ctx context.Context, tx pgx.Tx, waiters []uuid.UUID, ev *store.Event) ([]uuid.UUID, []string, error) {
	rows, err := tx.Query(ctx, sqlEventWaiterRooms, waiters)
	if err != nil {
		return nil, nil, err
	}
	var ids []uuid.UUID
	var results []string
	var id uuid.UUID
	var step string
	var size int64
	_, err = pgx.ForEachRow(rows, []any{&id, &step, &size}, func() error {
		ids = append(ids, id)
		results = append(results, string(store.EventStepWithin(step, ev, store.MaxJournalBytes-int(size))))
		return nil
	})
	return ids, results, err
}

// suspendEvent is Suspend's wait for an event, with the row locked: under
// the event name's lock, the oldest retained match this execution has not
// consumed is consumed (its step recorded and counted in the storage
// budget, queued again at once), or the execution is suspended waiting for
// it. A step past the budget ends the transaction with ErrStorageExceeded
// before anything else is written: it rolls back, the lease kept and the
// event unconsumed.
func suspendEvent(ctx context.Context, tx pgx.Tx, f fence, tenant string, p *store.SuspendParams, t time.Time,
	run, size int) (*store.Execution, error) {
	if err := lockPairs(ctx, tx, lockSpaceEvent, false, []string{tenant}, []string{p.Event}); err != nil {
		return nil, err
	}
	var since *time.Time
	if !p.Since.IsZero() {
		v := micro(p.Since)
		since = &v
	}
	ev := store.Event{Tenant: tenant, Name: p.Event}
	var data string
	err := tx.QueryRow(ctx, sqlEventMatch, tenant, p.Event, since, f.id, t, strPtr(p.EventKey)).
		Scan(&ev.ID, &ev.Key, &data, &ev.PublishedAt)
	switch {
	case err == nil:
		ev.Data, ev.PublishedAt = json.RawMessage(data), ev.PublishedAt.UTC()
		result := store.EventStepWithin(p.Step, &ev, p.ByteBound()-size)
		// Counted while the row is still running, so that the trigger
		// holds it to the budget (the queuing update that follows ends
		// the attempt without a result, which it does not refuse).
		if err := charge(ctx, tx, f.id, store.StoredSize(result)); err != nil {
			return nil, err
		}
		if _, err := tx.Exec(ctx, sqlConsumeEvent, f.id, ev.ID); err != nil {
			return nil, err
		}
		return scanExecution(tx.QueryRow(ctx, sqlSuspendQueue, f.id, t, true, p.Step, string(result), nil, run))
	case !errors.Is(err, pgx.ErrNoRows):
		return nil, err
	}
	var wakeAt *time.Time
	if p.Timeout > 0 {
		w := micro(t.Add(p.Timeout))
		wakeAt = &w
	}
	return scanExecution(tx.QueryRow(ctx, sqlSuspendWait, f.id, wakeAt, store.EventWaitFor(p.Event), p.Step, t, run,
		nil, strPtr(p.EventKey), since, true))
}
