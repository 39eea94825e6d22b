package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/google/uuid"

	"github.com/latch-run/latch/store"
)

// Events (I14, store/events.go) live in events while retained, in publish
// order (seq); event_consumed keeps the events each execution consumed; a
// suspended wait for an event keeps its key and since in wait_key and
// wait_since. SQLite's one writer orders a publish and a suspend: each is
// one transaction, so either the suspend sees the event or the publish
// sees the suspended wait.

// Publish implements store.Store, in one transaction: the repeat of an
// idempotency key, the storage budget (the event and its copy in each
// wait it ends), the event, the waits it ends and the subscriptions'
// starts.
func (s *Store) Publish(ctx context.Context, p *store.PublishParams) (*store.PublishResult, error) {
	// The data's size is the API's to bound (its configured limit), not
	// the store's.
	if err := p.Check(math.MaxInt); err != nil {
		return nil, err
	}
	t := now(p.Now)
	var res *store.PublishResult
	var changed []string
	err := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		res, changed = nil, nil
		var retention, maxStored, stored int64
		err := tx.QueryRowContext(ctx, `SELECT event_retention, max_stored_bytes, stored_bytes FROM tenants WHERE name = ?`,
			p.Tenant).Scan(&retention, &maxStored, &stored)
		if errors.Is(err, sql.ErrNoRows) {
			return false, fmt.Errorf("tenant %q: %w", p.Tenant, store.ErrNotFound)
		}
		if err != nil {
			return false, fmt.Errorf("sqlite: publish: %w", err)
		}
		if p.IdempotencyKey != "" {
			prev, err := publishRepeat(ctx, tx, p.Tenant, p.IdempotencyKey, t)
			if prev != nil || err != nil {
				res = prev
				return false, err
			}
		}
		data := jsonOrNull(p.Data)
		size := store.EventSize(p.Name, p.Key, p.Data)
		ev := &store.Event{ID: uuid.Must(uuid.NewV7()).String(), Tenant: p.Tenant, Name: p.Name, Key: p.Key,
			Data: data, PublishedAt: t, ExpiresAt: t.Add(time.Duration(retention))}
		// The waits it ends and their copies of it are known before
		// anything is written: the event and every copy must fit together.
		waits, err := eventWaits(ctx, tx, ev)
		if err != nil {
			return false, err
		}
		var copies int64
		for _, w := range waits {
			copies += store.StoredSize(w.result)
		}
		if stored+size+copies > maxStored {
			return false, fmt.Errorf("tenant %q stores %d of %d bytes; the event has %d, its copies in the %d waits it ends %d: %w",
				p.Tenant, stored, maxStored, size, len(waits), copies, store.ErrStorageExceeded)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO events (id, tenant, name, key, data, published_at, expires_at,
			size, idempotency_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			ev.ID, ev.Tenant, ev.Name, nullString(ev.Key), string(data), ns(ev.PublishedAt), ns(ev.ExpiresAt),
			size, nullString(p.IdempotencyKey)); err != nil {
			return false, fmt.Errorf("sqlite: publish: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tenants SET stored_bytes = stored_bytes + ? WHERE name = ?`,
			size+copies, p.Tenant); err != nil {
			return false, fmt.Errorf("sqlite: publish: %w", err)
		}
		res = &store.PublishResult{EventID: ev.ID, Started: []store.EventStart{}}
		for _, w := range waits {
			if _, err := tx.ExecContext(ctx, `UPDATE executions SET stored_bytes = stored_bytes + ? WHERE id = ?`,
				store.StoredSize(w.result), w.id); err != nil {
				return false, fmt.Errorf("sqlite: publish: %w", err)
			}
			if err := consumeEvent(ctx, tx, &w, ev, t); err != nil {
				return false, err
			}
			changed = append(changed, w.id)
		}
		res.Resumed = len(waits)
		started, err := startSubscriptions(ctx, tx, ev, p.TraceParent, t)
		if err != nil {
			return false, err
		}
		res.Started = started
		for _, st := range started {
			if st.ExecutionID != "" {
				changed = append(changed, st.ExecutionID)
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE events SET answer = ? WHERE id = ?`,
			string(store.MarshalPublishAnswer(res)), ev.ID); err != nil {
			return false, fmt.Errorf("sqlite: publish: %w", err)
		}
		return len(changed) > 0, nil
	})
	if err != nil {
		return nil, err
	}
	s.feed.Publish(changed...)
	return res, nil
}

// sqlPublishRepeat reads the event of a tenant's idempotency key.
const sqlPublishRepeat = `SELECT seq, expires_at, size, answer FROM events INDEXED BY events_idempotency
	WHERE tenant = ? AND idempotency_key = ? AND idempotency_key IS NOT NULL`

// sqlExpiredEvents reads events whose ExpiresAt has come, soonest first.
const sqlExpiredEvents = `SELECT seq, tenant, size FROM events INDEXED BY events_expiry
	WHERE expires_at <= ? ORDER BY expires_at LIMIT ?`

// publishRepeat answers the publish of the tenant's idempotency key kept
// with a retained event, or nil. An event past its ExpiresAt that Prune
// has not deleted yet is gone already: it is deleted here, its bytes
// released, and the key is free.
func publishRepeat(ctx context.Context, tx *sql.Tx, tenant, key string, t time.Time) (*store.PublishResult, error) {
	var seq, expires, size int64
	var answer string
	err := tx.QueryRowContext(ctx, sqlPublishRepeat, tenant, key).Scan(&seq, &expires, &size, &answer)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: publish: %w", err)
	}
	if expires > ns(t) {
		return store.UnmarshalPublishAnswer([]byte(answer))
	}
	return nil, deleteEvent(ctx, tx, seq, tenant, size)
}

// deleteEvent deletes one event and releases its bytes.
func deleteEvent(ctx context.Context, tx *sql.Tx, seq int64, tenant string, size int64) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM events WHERE seq = ?`, seq); err != nil {
		return fmt.Errorf("sqlite: delete event: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE tenants SET stored_bytes = stored_bytes - ? WHERE name = ?`,
		size, tenant); err != nil {
		return fmt.Errorf("sqlite: delete event: %w", err)
	}
	return nil
}

// sqlEventWaits reads the suspended waits of a tenant for an event name
// (executions_event_waits) that an event of a key and a publish time
// matches.
const sqlEventWaits = `SELECT id, suspend_step, attempt FROM executions INDEXED BY executions_event_waits
	WHERE tenant = ? AND waiting_for = ? AND status = 'suspended' AND wait_since IS NOT NULL
	AND wait_since <= ? AND (wait_key IS NULL OR wait_key = ?) ORDER BY id`

// eventWait is a wait an event ends: the execution, the step its wait
// records and the attempt it records it in, and the step's result, the
// execution's copy of the event.
type eventWait struct {
	id, step string
	attempt  int
	result   json.RawMessage
}

// eventWaits reads every suspended wait ev matches, each with its copy of
// ev: EventStepWithin the journal's room (store.MaxJournalBytes). It
// writes nothing.
func eventWaits(ctx context.Context, tx *sql.Tx, ev *store.Event) ([]eventWait, error) {
	rows, err := tx.QueryContext(ctx, sqlEventWaits, ev.Tenant, store.EventWaitFor(ev.Name), ns(ev.PublishedAt), ev.Key)
	if err != nil {
		return nil, fmt.Errorf("sqlite: publish: waits: %w", err)
	}
	var waits []eventWait
	for rows.Next() {
		var w eventWait
		var step sql.NullString
		if err := rows.Scan(&w.id, &step, &w.attempt); err != nil {
			rows.Close()
			return nil, fmt.Errorf("sqlite: publish: waits: %w", err)
		}
		w.step = step.String
		waits = append(waits, w)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: publish: waits: %w", err)
	}
	for i := range waits {
		if waits[i].result, err = eventCopy(ctx, tx, waits[i].id, waits[i].step, ev, store.MaxJournalBytes); err != nil {
			return nil, err
		}
	}
	return waits, nil
}

// eventCopy is the step execution id records as step when ev ends its
// wait: EventStepWithin the room its journal leaves of byteBound.
func eventCopy(ctx context.Context, tx *sql.Tx, id, step string, ev *store.Event, byteBound int) (json.RawMessage, error) {
	have, err := journalSize(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	return store.EventStepWithin(step, ev, byteBound-have), nil
}

// consumeEvent ends w's wait (or its suspend) with ev: its copy recorded
// as its step, ev consumed, the execution queued again at t. The caller
// counts the copy's bytes.
func consumeEvent(ctx context.Context, tx *sql.Tx, w *eventWait, ev *store.Event, t time.Time) error {
	st := store.Step{Name: w.step, Result: w.result, RecordedAt: t, Attempt: w.attempt}
	if _, _, err := recordStep(ctx, tx, w.id, &st, journalBounds{}); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO event_consumed (execution_id, event_id) VALUES (?, ?)`,
		w.id, ev.ID); err != nil {
		return fmt.Errorf("sqlite: consume event: %w", err)
	}
	return resumeAt(ctx, tx, w.id, t)
}

// sqlOldestEvent reads the oldest retained event of a tenant's name
// published at or after a time that an execution has not consumed
// (events_match: it skips at most the events the execution consumed, one
// per step); sqlOldestKeyedEvent the same of one key (events_match_key).
const (
	sqlOldestEvent = `SELECT id, key, data, published_at FROM events e INDEXED BY events_match
	WHERE tenant = ?1 AND name = ?2 AND published_at >= ?3 AND expires_at > ?4
	AND NOT EXISTS (SELECT 1 FROM event_consumed c WHERE c.execution_id = ?5 AND c.event_id = e.id)
	ORDER BY published_at, seq LIMIT 1`
	sqlOldestKeyedEvent = `SELECT id, key, data, published_at FROM events e INDEXED BY events_match_key
	WHERE tenant = ?1 AND name = ?2 AND published_at >= ?3 AND expires_at > ?4 AND key = ?6
	AND NOT EXISTS (SELECT 1 FROM event_consumed c WHERE c.execution_id = ?5 AND c.event_id = e.id)
	ORDER BY published_at, seq LIMIT 1`
)

// suspendEvent is Suspend's wait for an event, after the fence and the
// journal's room for the step: the oldest match consumed at once (its
// copy counted in the storage budget), or the
// execution suspended until a Publish or Wake ends the wait.
func suspendEvent(ctx context.Context, tx *sql.Tx, id string, l *leased, p *store.SuspendParams, t time.Time) error {
	since := p.Since
	if since.IsZero() {
		var created int64
		if err := tx.QueryRowContext(ctx, `SELECT created_at FROM executions WHERE id = ?`, id).Scan(&created); err != nil {
			return fmt.Errorf("sqlite: suspend: %w", err)
		}
		since = fromNS(created)
	}
	ev := &store.Event{Tenant: l.tenant, Name: p.Event}
	var key sql.NullString
	var data string
	var published int64
	query, args := sqlOldestEvent, []any{l.tenant, p.Event, ns(since), ns(t), id}
	if p.EventKey != "" {
		query, args = sqlOldestKeyedEvent, append(args, p.EventKey)
	}
	err := tx.QueryRowContext(ctx, query, args...).Scan(&ev.ID, &key, &data, &published)
	switch {
	case err == nil:
		ev.Key, ev.Data, ev.PublishedAt = key.String, json.RawMessage(data), fromNS(published)
		w := eventWait{id: id, step: p.Step, attempt: l.attempt}
		if w.result, err = eventCopy(ctx, tx, id, p.Step, ev, p.ByteBound()); err != nil {
			return err
		}
		// The copy counts before anything is written: past the budget the
		// suspend is refused, the event left unconsumed.
		if err := charge(ctx, tx, id, store.StoredSize(w.result), false); err != nil {
			return err
		}
		return consumeEvent(ctx, tx, &w, ev, t)
	case !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("sqlite: suspend: %w", err)
	}
	// The step a Wake may record must fit now (a publish's is never
	// refused: it drops the event's data when it does not fit).
	if err := byteRoom(ctx, tx, id, store.StepSize(p.Step, store.TimedOut), p.ByteBound()); err != nil {
		return err
	}
	var wake sql.NullInt64
	if p.Timeout > 0 {
		wake = sql.NullInt64{Int64: ns(t.Add(p.Timeout)), Valid: true}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE executions SET status = 'suspended', resume = 0,
		wake_at = ?, waiting_for = ?, suspend_step = ?, wait_key = ?, wait_since = ?,
		lease_token = NULL, worker_id = NULL, lease_expires_at = NULL WHERE id = ?`,
		wake, store.EventWaitFor(p.Event), p.Step, nullString(p.EventKey), ns(since), id); err != nil {
		return fmt.Errorf("sqlite: suspend: %w", err)
	}
	return nil
}

// sqlEventSubscriptions reads a tenant's enabled subscriptions on an event
// name in name order (subscriptions_event).
const sqlEventSubscriptions = `SELECT ` + subscriptionColumns + ` FROM subscriptions INDEXED BY subscriptions_event
	WHERE tenant = ? AND event = ? AND enabled = 1 ORDER BY name`

// startSubscriptions admits, for each enabled subscription of ev's tenant
// on its name, in name order, its StartSubmission as Admit would; a start
// refused by the quota or the storage budget is answered in its
// EventStart.
func startSubscriptions(ctx context.Context, tx *sql.Tx, ev *store.Event, traceParent string, t time.Time) ([]store.EventStart, error) {
	rows, err := tx.QueryContext(ctx, sqlEventSubscriptions, ev.Tenant, ev.Name)
	if err != nil {
		return nil, fmt.Errorf("sqlite: publish: subscriptions: %w", err)
	}
	var subs []*store.Subscription
	for rows.Next() {
		sub, err := scanSubscription(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("sqlite: publish: subscriptions: %w", err)
		}
		subs = append(subs, sub)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: publish: subscriptions: %w", err)
	}
	out := []store.EventStart{}
	if len(subs) == 0 {
		return out, nil
	}
	q, err := loadQuota(ctx, tx, ev.Tenant)
	if err != nil {
		return nil, err
	}
	added, stored := 0, q.stored
	for _, sub := range subs {
		item, err := admitOne(ctx, tx, ev.Tenant, sub.StartSubmission(ev, traceParent), t, &q, added)
		if err != nil {
			return nil, err
		}
		start := store.EventStart{Subscription: sub.Name, Err: item.Err}
		if item.Execution != nil {
			start.ExecutionID = item.Execution.ID
			if !item.Deduplicated {
				added++
			}
		}
		out = append(out, start)
	}
	if added > 0 || q.stored != stored {
		if err := addInflight(ctx, tx, ev.Tenant, added, q.stored-stored); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// subscriptionColumns are what scanSubscription reads, in its order.
const subscriptionColumns = `tenant, name, event, kind, queue, priority, max_attempts, timeout_seconds,
	concurrency_key, concurrency_limit, enabled, created_at, updated_at`

func scanSubscription(row interface{ Scan(...any) error }) (*store.Subscription, error) {
	var s store.Subscription
	var created, updated int64
	if err := row.Scan(&s.Tenant, &s.Name, &s.Event, &s.Kind, &s.Queue, &s.Priority, &s.MaxAttempts,
		&s.TimeoutSeconds, &s.ConcurrencyKey, &s.ConcurrencyLimit, &s.Enabled, &created, &updated); err != nil {
		return nil, err
	}
	s.CreatedAt, s.UpdatedAt = fromNS(created), fromNS(updated)
	return &s, nil
}

// PutSubscription implements store.Store: the count of the tenant's
// subscriptions and the insert are one transaction.
func (s *Store) PutSubscription(ctx context.Context, p *store.PutSubscriptionParams) (*store.PutSubscriptionResult, error) {
	sub := p.Subscription
	if err := sub.Check(); err != nil {
		return nil, err
	}
	t := fromNS(ns(now(p.Now)))
	var res *store.PutSubscriptionResult
	err := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		res = nil
		if _, err := getTenant(ctx, tx, sub.Tenant); err != nil {
			return false, err
		}
		prev, err := getSubscription(ctx, tx, sub.Tenant, sub.Name)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return false, err
		}
		out := sub
		out.CreatedAt, out.UpdatedAt = t, t
		if prev != nil {
			out.CreatedAt = prev.CreatedAt
		} else {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM subscriptions WHERE tenant = ?`, sub.Tenant).Scan(&n); err != nil {
				return false, fmt.Errorf("sqlite: put subscription: %w", err)
			}
			if n >= p.SubscriptionBound() {
				return false, fmt.Errorf("tenant %q has %d subscriptions, its bound %d: %w",
					sub.Tenant, n, p.SubscriptionBound(), store.ErrTooManySubscriptions)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO subscriptions (`+subscriptionColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (tenant, name) DO UPDATE SET event = excluded.event, kind = excluded.kind,
			queue = excluded.queue, priority = excluded.priority, max_attempts = excluded.max_attempts,
			timeout_seconds = excluded.timeout_seconds, concurrency_key = excluded.concurrency_key,
			concurrency_limit = excluded.concurrency_limit, enabled = excluded.enabled,
			updated_at = excluded.updated_at`,
			out.Tenant, out.Name, out.Event, out.Kind, out.Queue, out.Priority, out.MaxAttempts, out.TimeoutSeconds,
			out.ConcurrencyKey, out.ConcurrencyLimit, out.Enabled, ns(out.CreatedAt), ns(out.UpdatedAt)); err != nil {
			return false, fmt.Errorf("sqlite: put subscription: %w", err)
		}
		res = &store.PutSubscriptionResult{Subscription: &out, Created: prev == nil}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func getSubscription(ctx context.Context, q querier, tenant, name string) (*store.Subscription, error) {
	sub, err := scanSubscription(q.QueryRowContext(ctx, `SELECT `+subscriptionColumns+` FROM subscriptions
		WHERE tenant = ? AND name = ?`, tenant, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("subscription %q of tenant %q: %w", name, tenant, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: get subscription: %w", err)
	}
	return sub, nil
}

// GetSubscription implements store.Store.
func (s *Store) GetSubscription(ctx context.Context, p *store.GetSubscriptionParams) (*store.Subscription, error) {
	return interpreted(getSubscription(ctx, s.read, p.Tenant, p.Name))
}

// ListSubscriptions implements store.Store: a range of the primary key
// (tenant, name) from After.
func (s *Store) ListSubscriptions(ctx context.Context, p *store.ListSubscriptionsParams) ([]*store.Subscription, error) {
	query := `SELECT ` + subscriptionColumns + ` FROM subscriptions WHERE `
	var args []any
	if p.Tenant != "" {
		query += `tenant = ? AND `
		args = append(args, p.Tenant)
	}
	query += `(tenant, name) > (?, ?) ORDER BY tenant, name LIMIT ?`
	args = append(args, p.After.Tenant, p.After.Name, p.ListLimit())
	rows, err := s.read.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list subscriptions: %w", interpretError(err))
	}
	defer rows.Close()
	out := []*store.Subscription{}
	for rows.Next() {
		sub, err := scanSubscription(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list subscriptions: %w", interpretError(err))
		}
		out = append(out, sub)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list subscriptions: %w", interpretError(err))
	}
	return out, nil
}

// DeleteSubscription implements store.Store.
func (s *Store) DeleteSubscription(ctx context.Context, p *store.DeleteSubscriptionParams) error {
	return s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		r, err := tx.ExecContext(ctx, `DELETE FROM subscriptions WHERE tenant = ? AND name = ?`, p.Tenant, p.Name)
		if err != nil {
			return false, fmt.Errorf("sqlite: delete subscription: %w", err)
		}
		if n, err := r.RowsAffected(); err != nil || n == 0 {
			return false, fmt.Errorf("subscription %q of tenant %q: %w", p.Name, p.Tenant, store.ErrNotFound)
		}
		return false, nil
	})
}

// pruneEvents deletes up to limit events whose ExpiresAt is not after t,
// with their idempotency keys, releasing their bytes.
func pruneEvents(ctx context.Context, tx *sql.Tx, t time.Time, limit int) error {
	rows, err := tx.QueryContext(ctx, sqlExpiredEvents, ns(t), limit)
	if err != nil {
		return fmt.Errorf("sqlite: prune events: %w", err)
	}
	type gone struct {
		seq, size int64
		tenant    string
	}
	var list []gone
	for rows.Next() {
		var g gone
		if err := rows.Scan(&g.seq, &g.tenant, &g.size); err != nil {
			rows.Close()
			return fmt.Errorf("sqlite: prune events: %w", err)
		}
		list = append(list, g)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlite: prune events: %w", err)
	}
	for _, g := range list {
		if err := deleteEvent(ctx, tx, g.seq, g.tenant, g.size); err != nil {
			return err
		}
	}
	return nil
}
