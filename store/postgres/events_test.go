package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/postgres"
)

var eventBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// eventFixture is a tenant of a store, with helpers for flows that wait
// for events.
type eventFixture struct {
	t      *testing.T
	s      *postgres.Store
	tenant string
}

func newEventFixture(t *testing.T, poolSize int32) *eventFixture {
	t.Helper()
	s := newStore(t, poolSize).(*postgres.Store)
	f := &eventFixture{t: t, s: s, tenant: "acme"}
	if _, err := s.CreateTenant(t.Context(), &store.CreateTenantParams{Name: f.tenant, MaxInflight: 100000,
		EventRetention: time.Hour, Now: eventBase}); err != nil {
		t.Fatal(err)
	}
	return f
}

// running admits n executions of kind and claims them.
func (f *eventFixture) running(kind string, n int, now time.Time) []store.Lease {
	f.t.Helper()
	ctx := f.t.Context()
	items := make([]store.Submission, n)
	for i := range items {
		items[i] = store.Submission{Kind: kind}
	}
	if _, err := f.s.Admit(ctx, &store.AdmitParams{Tenant: f.tenant, Items: items, Now: now}); err != nil {
		f.t.Fatal(err)
	}
	res, err := f.s.Claim(ctx, &store.ClaimParams{WorkerID: "w", Tenant: f.tenant, Kinds: []string{kind}, Max: n,
		LeaseDuration: time.Hour, Now: now})
	if err != nil {
		f.t.Fatal(err)
	}
	if len(res.Leases) != n {
		f.t.Fatalf("claimed %d of %d", len(res.Leases), n)
	}
	return res.Leases
}

func (f *eventFixture) wait(l store.Lease, event, key string, timeout time.Duration, now time.Time) (*store.Execution, error) {
	return f.s.Suspend(f.t.Context(), &store.SuspendParams{ExecutionID: l.ExecutionID, Tenant: f.tenant, Token: l.Token,
		Step: "ev", Event: event, EventKey: key, Timeout: timeout, Now: now})
}

func (f *eventFixture) publish(p store.PublishParams) *store.PublishResult {
	f.t.Helper()
	if p.Tenant == "" {
		p.Tenant = f.tenant
	}
	r, err := f.s.Publish(f.t.Context(), &p)
	if err != nil {
		f.t.Fatalf("publish %s: %v", p.Name, err)
	}
	return r
}

// step answers the outcome the wait of id recorded (nil: none).
func (f *eventFixture) step(id string) json.RawMessage {
	f.t.Helper()
	page, err := f.s.Steps(f.t.Context(), &store.StepsParams{Tenant: f.tenant, ID: id})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, st := range page.Items {
		if st.Name == "ev" {
			return st.Result
		}
	}
	return nil
}

func (f *eventFixture) get(id string) *store.Execution {
	f.t.Helper()
	e, err := f.s.Get(f.t.Context(), &store.GetParams{Tenant: f.tenant, ID: id})
	if err != nil {
		f.t.Fatal(err)
	}
	return e
}

func (f *eventFixture) storedBytes() int64 {
	f.t.Helper()
	ten, err := f.s.GetTenant(f.t.Context(), &store.GetTenantParams{Name: f.tenant})
	if err != nil {
		f.t.Fatal(err)
	}
	return ten.StoredBytes
}

// TestEventsPostgres covers what the backend adds to the contract: a wait
// and a publish meet whichever comes first, keys and since match, a signal
// of the wait's WaitingFor does not end it, a timeout does, the storage
// count follows the events, Prune and DeleteTenant remove them.
func TestEventsPostgres(t *testing.T) {
	t.Parallel()
	f := newEventFixture(t, 8)
	ctx := t.Context()
	now := eventBase.Add(time.Minute)
	ls := f.running("flow", 4, now)

	// A wait first, then the publish resumes it; a keyed wait is left.
	if e, err := f.wait(ls[0], "paid", "", 0, now); err != nil || e.Status != store.StatusSuspended ||
		e.WaitingFor != "event:paid" {
		t.Fatalf("wait: %+v, %v", e, err)
	}
	if e, err := f.wait(ls[1], "paid", "order-2", 0, now); err != nil || e.Status != store.StatusSuspended {
		t.Fatalf("keyed wait: %+v, %v", e, err)
	}
	// A signal named like the wait's WaitingFor does not end it.
	if r, err := f.s.Signal(ctx, &store.SignalParams{Tenant: f.tenant, ExecutionID: ls[0].ExecutionID,
		Name: "event:paid", Data: json.RawMessage(`1`), Now: now}); err != nil || r.Delivered {
		t.Fatalf("signal: %+v, %v", r, err)
	}
	before := f.storedBytes()
	data := json.RawMessage(`{"amount":5}`)
	r := f.publish(store.PublishParams{Name: "paid", Key: "order-1", Data: data, Now: now.Add(time.Second)})
	if r.Resumed != 1 || r.Replayed {
		t.Fatalf("publish: %+v", r)
	}
	want := store.EventStep(&store.Event{ID: r.EventID, Name: "paid", Key: "order-1", Data: data,
		PublishedAt: now.Add(time.Second)})
	// The event and the copy its wait recorded.
	if got, moved := f.storedBytes()-before, store.EventSize("paid", "order-1", data)+store.StoredSize(want); got != moved {
		t.Fatalf("stored bytes moved by %d, want %d", got, moved)
	}
	if got := f.step(ls[0].ExecutionID); string(got) != string(want) {
		t.Fatalf("step %s, want %s", got, want)
	}
	if e := f.get(ls[0].ExecutionID); e.Status != store.StatusQueued {
		t.Fatalf("resumed: %s", e.Status)
	}
	if e := f.get(ls[1].ExecutionID); e.Status != store.StatusSuspended {
		t.Fatalf("keyed wait of another key: %s", e.Status)
	}

	// The event first: a wait finds it (since: the execution's
	// CreatedAt), and a wait with a later since does not.
	if e, err := f.wait(ls[2], "paid", "", 0, now.Add(2*time.Second)); err != nil || e.Status != store.StatusQueued {
		t.Fatalf("late wait: %+v, %v", e, err)
	}
	if got := f.step(ls[2].ExecutionID); string(got) != string(want) {
		t.Fatalf("late wait's step %s, want %s", got, want)
	}
	_, err := f.s.Suspend(ctx, &store.SuspendParams{ExecutionID: ls[3].ExecutionID, Tenant: f.tenant, Token: ls[3].Token,
		Step: "ev", Event: "paid", Since: now.Add(2 * time.Second), Timeout: time.Minute, Now: now.Add(2 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if e := f.get(ls[3].ExecutionID); e.Status != store.StatusSuspended {
		t.Fatalf("wait since after the event: %s", e.Status)
	}
	// Its timeout ends it, TimedOut.
	if w, err := f.s.Wake(ctx, &store.WakeParams{Now: now.Add(2 * time.Minute)}); err != nil || w.Woken != 1 {
		t.Fatalf("wake: %+v, %v", w, err)
	}
	if got := f.step(ls[3].ExecutionID); string(got) != string(store.TimedOut) {
		t.Fatalf("timed out step %s", got)
	}

	// Prune releases the event at ExpiresAt.
	if _, err := f.s.Prune(ctx, &store.PruneParams{Now: now.Add(30 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if got := f.storedBytes() - before - 2*store.StoredSize(want); got == 0 {
		t.Fatal("pruned before ExpiresAt")
	}
	if _, err := f.s.Prune(ctx, &store.PruneParams{Now: now.Add(time.Hour + time.Second)}); err != nil {
		t.Fatal(err)
	}
	// The copies stay with the two executions whose waits the event ended.
	if got, kept := f.storedBytes(), before+2*store.StoredSize(want); got != kept {
		t.Fatalf("stored bytes %d after prune, want %d", got, kept)
	}

	// DeleteTenant takes the events and subscriptions with it.
	if _, err := f.s.PutSubscription(ctx, &store.PutSubscriptionParams{Subscription: store.Subscription{
		Tenant: f.tenant, Name: "on-paid", Event: "paid", Kind: "ship", Enabled: true}, Now: now}); err != nil {
		t.Fatal(err)
	}
	f.publish(store.PublishParams{Name: "paid", Now: now.Add(time.Hour + 2*time.Second)})
	if err := f.s.DeleteTenant(ctx, &store.DeleteTenantParams{Name: f.tenant, Force: true}); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := postgres.PoolOf(f.s).QueryRow(ctx, `SELECT (SELECT count(*) FROM latch_events) +
		(SELECT count(*) FROM latch_subscriptions) + (SELECT count(*) FROM latch_event_consumed)`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d rows of events, subscriptions and consumed events left after DeleteTenant", n)
	}
}

// TestPublishStartsAndStorage: a subscription's start is refused by the
// storage budget (EventStart.Err) while the publish commits; a publish
// past the budget is refused and writes nothing.
func TestPublishStartsAndStorage(t *testing.T) {
	t.Parallel()
	f := newEventFixture(t, 4)
	ctx := t.Context()
	now := eventBase.Add(time.Minute)
	data := json.RawMessage(`"0123456789"`)
	size := store.EventSize("paid", "", data)
	budget := size + 10 // the event fits, its start's payload does not
	if _, err := f.s.UpdateTenant(ctx, &store.UpdateTenantParams{Name: f.tenant, MaxStoredBytes: &budget}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"b-ship", "a-bill"} {
		if _, err := f.s.PutSubscription(ctx, &store.PutSubscriptionParams{Subscription: store.Subscription{
			Tenant: f.tenant, Name: name, Event: "paid", Kind: name, Enabled: true}, Now: now}); err != nil {
			t.Fatal(err)
		}
	}
	r := f.publish(store.PublishParams{Name: "paid", Data: data, IdempotencyKey: "k", Now: now})
	if len(r.Started) != 2 || r.Started[0].Subscription != "a-bill" || r.Started[1].Subscription != "b-ship" {
		t.Fatalf("started %+v", r.Started)
	}
	for _, st := range r.Started {
		if !errors.Is(st.Err, store.ErrStorageExceeded) || st.ExecutionID != "" {
			t.Fatalf("start %+v, want refused by the storage budget", st)
		}
	}
	if got := f.storedBytes(); got != size {
		t.Fatalf("stored bytes %d, want the event's %d", got, size)
	}
	again := f.publish(store.PublishParams{Name: "paid", Data: data, IdempotencyKey: "k", Now: now.Add(time.Second)})
	if !again.Replayed || again.EventID != r.EventID || !errors.Is(again.Started[0].Err, store.ErrStorageExceeded) {
		t.Fatalf("replay %+v", again)
	}
	_, err := f.s.Publish(ctx, &store.PublishParams{Tenant: f.tenant, Name: "paid", Data: data, Now: now})
	if !errors.Is(err, store.ErrStorageExceeded) {
		t.Fatalf("publish past the budget: %v", err)
	}
	if got := f.storedBytes(); got != size {
		t.Fatalf("stored bytes %d after a refused publish, want %d", got, size)
	}
	// Room again: the starts are admitted, under their dedup keys.
	big := int64(1 << 20)
	if _, err := f.s.UpdateTenant(ctx, &store.UpdateTenantParams{Name: f.tenant, MaxStoredBytes: &big}); err != nil {
		t.Fatal(err)
	}
	r = f.publish(store.PublishParams{Name: "paid", Data: data, Now: now})
	for _, st := range r.Started {
		if st.Err != nil || st.ExecutionID == "" {
			t.Fatalf("start %+v", st)
		}
		e := f.get(st.ExecutionID)
		if e.DedupKey != store.EventDedupKey(r.EventID, st.Subscription) || e.Kind != st.Subscription {
			t.Fatalf("started %+v", e)
		}
	}
}

// retryCounter counts the deadlocks a store met (it retries them, so the
// answers alone do not show one).
func retryCounter(s *postgres.Store) *atomic.Int64 {
	var deadlocks atomic.Int64
	postgres.OnRetry(s, func(err error) {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "40P01" {
			deadlocks.Add(1)
		}
	})
	return &deadlocks
}

// TestPublishRacesSuspend: waits for an event and publishes of it run at
// once, with signals, heartbeats, cancels and admissions of the same
// tenant, under -race. No wake-up is lost — every wait ends, at its
// Suspend or by the publish — and no transaction meets a deadlock.
func TestPublishRacesSuspend(t *testing.T) {
	t.Parallel()
	f := newEventFixture(t, 16)
	deadlocks := retryCounter(f.s)
	ctx := t.Context()
	const rounds, n = 10, 12
	for round := range rounds {
		now := eventBase.Add(time.Duration(round+1) * time.Minute)
		kind := fmt.Sprint("flow", round)
		event := fmt.Sprint("e", round%3) // earlier rounds' events stay: keys keep them apart
		key := fmt.Sprint("round", round)
		if _, err := f.s.PutSubscription(ctx, &store.PutSubscriptionParams{Subscription: store.Subscription{
			Tenant: f.tenant, Name: "sub", Event: event, Kind: "started", Enabled: true}, Now: now}); err != nil {
			t.Fatal(err)
		}
		ls := f.running(kind, n, now)
		var wg sync.WaitGroup
		errs := make(chan error, 4*n)
		for i, l := range ls {
			wg.Go(func() {
				k := key
				if i%3 == 0 {
					k = "" // any key: ends with this round's event or an earlier one of the name
				}
				if _, err := f.wait(l, event, k, 0, now); err != nil {
					errs <- err
				}
			})
			wg.Go(func() { // a signal of the wait's name is kept, not delivered
				_, err := f.s.Signal(ctx, &store.SignalParams{Tenant: f.tenant, ExecutionID: l.ExecutionID,
					Name: store.EventWaitFor(event), Now: now})
				if err != nil && !errors.Is(err, store.ErrNotActive) {
					errs <- err
				}
			})
		}
		wg.Go(func() {
			_, err := f.s.Admit(ctx, &store.AdmitParams{Tenant: f.tenant, Items: []store.Submission{{Kind: "other"}}, Now: now})
			if err != nil {
				errs <- err
			}
		})
		for range 2 {
			wg.Go(func() {
				if _, err := f.s.Publish(ctx, &store.PublishParams{Tenant: f.tenant, Name: event, Key: key,
					IdempotencyKey: key, Now: now}); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for _, l := range ls {
			if e := f.get(l.ExecutionID); e.Status != store.StatusQueued || f.step(l.ExecutionID) == nil {
				t.Fatalf("round %d: execution %s is %s after the publish: a lost wake-up", round, l.ExecutionID, e.Status)
			}
		}
		var events, started int
		if err := postgres.PoolOf(f.s).QueryRow(ctx, `SELECT (SELECT count(*) FROM latch_events WHERE key = $1),
			(SELECT count(*) FROM latch_executions WHERE kind = 'started' AND created_at = $2)`, key, now).Scan(&events, &started); err != nil {
			t.Fatal(err)
		}
		if events != 1 || started != 1 {
			t.Fatalf("round %d: %d events and %d starts of one idempotency key, want 1 and 1", round, events, started)
		}
	}
	if d := deadlocks.Load(); d != 0 {
		t.Fatalf("%d deadlocks", d)
	}
}

// TestPublishIdempotentAcrossStores: one idempotency key published at
// once through several stores (servers) of one database records one event
// and one start per subscription; every answer names that event, all but
// one Replayed.
func TestPublishIdempotentAcrossStores(t *testing.T) {
	t.Parallel()
	acquireSlot(t)
	schema, dbURL := newSchema(t)
	stores := make([]*postgres.Store, 3)
	for i := range stores {
		stores[i] = openSchema(t, dbURL, schema, 4)
		t.Cleanup(func() { stores[i].Close() })
	}
	ctx := t.Context()
	if _, err := stores[0].CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", MaxInflight: 1000, Now: eventBase}); err != nil {
		t.Fatal(err)
	}
	if _, err := stores[0].PutSubscription(ctx, &store.PutSubscriptionParams{Subscription: store.Subscription{
		Tenant: "acme", Name: "sub", Event: "paid", Kind: "ship", Enabled: true}, Now: eventBase}); err != nil {
		t.Fatal(err)
	}
	for round := range 8 {
		key := fmt.Sprint("key", round)
		answers := make([]*store.PublishResult, 3*len(stores))
		var wg sync.WaitGroup
		for i := range answers {
			wg.Go(func() {
				r, err := stores[i%len(stores)].Publish(context.Background(), &store.PublishParams{Tenant: "acme",
					Name: fmt.Sprint("paid", i%2), IdempotencyKey: key, Now: eventBase.Add(time.Minute)})
				if err != nil {
					t.Error(err)
				}
				answers[i] = r
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		fresh := 0
		for _, r := range answers {
			if !r.Replayed {
				fresh++
			}
			if r.EventID != answers[0].EventID {
				t.Fatalf("round %d: answers name events %s and %s", round, r.EventID, answers[0].EventID)
			}
		}
		var n int
		if err := postgres.PoolOf(stores[0]).QueryRow(ctx, `SELECT count(*) FROM latch_events WHERE idempotency_key = $1`,
			key).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if fresh != 1 || n != 1 {
			t.Fatalf("round %d: %d first answers and %d events of one key, want 1 and 1", round, fresh, n)
		}
	}
}

// TestMigrateDownEvents: going down from schema 16 queues a wait for an
// event again (a resume, its quota unit kept) and takes the events' bytes
// from their tenant's count; a sleep stays suspended. Up again, the
// tenant keeps the default event retention.
func TestMigrateDownEvents(t *testing.T) {
	t.Parallel()
	acquireSlot(t)
	ctx := t.Context()
	_, u := newSchema(t)
	s := openMigrated(t, u)
	now := eventBase.Add(time.Minute)
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", MaxInflight: 5, Now: eventBase}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: []store.Submission{{Kind: "flow"}, {Kind: "flow"}},
		Now: now}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Claim(ctx, &store.ClaimParams{WorkerID: "w", Max: 2, LeaseDuration: time.Hour, Now: now})
	if err != nil || len(res.Leases) != 2 {
		t.Fatalf("Claim: %+v, %v", res, err)
	}
	waiter, sleeper := res.Leases[0], res.Leases[1]
	if x, err := s.Suspend(ctx, &store.SuspendParams{ExecutionID: waiter.ExecutionID, Token: waiter.Token, Step: "ev",
		Event: "paid", Now: now}); err != nil || x.Status != store.StatusSuspended {
		t.Fatalf("Suspend: %+v, %v", x, err)
	}
	if x, err := s.Suspend(ctx, &store.SuspendParams{ExecutionID: sleeper.ExecutionID, Token: sleeper.Token, Step: "nap",
		Until: now.Add(time.Hour), Now: now}); err != nil || x.Status != store.StatusSuspended {
		t.Fatalf("Suspend: %+v, %v", x, err)
	}
	before, err := s.GetTenant(ctx, &store.GetTenantParams{Name: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Publish(ctx, &store.PublishParams{Tenant: "acme", Name: "other", Data: json.RawMessage(`"x"`),
		Now: now}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	if st, err := postgres.Migrate(ctx, u, "down"); err != nil || st.Version != postgres.SchemaVersion()-1 {
		t.Fatalf("down: %+v, %v", st, err)
	}
	s = openMigrated(t, u)
	defer s.Close()
	ten, err := s.GetTenant(ctx, &store.GetTenantParams{Name: "acme"})
	if err != nil || ten.Inflight != 2 || ten.StoredBytes != before.StoredBytes ||
		ten.EventRetention != store.DefaultEventRetention {
		t.Fatalf("tenant after down and up: %+v, %v; want 2 in flight, %d bytes, the default event retention", ten,
			err, before.StoredBytes)
	}
	if got, err := s.Get(ctx, &store.GetParams{ID: waiter.ExecutionID}); err != nil || got.Status != store.StatusQueued ||
		got.WaitingFor != "" {
		t.Fatalf("wait for an event after down and up: %+v, %v; want queued", got, err)
	}
	if got, err := s.Get(ctx, &store.GetParams{ID: sleeper.ExecutionID}); err != nil || got.Status != store.StatusSuspended {
		t.Fatalf("sleep after down and up: %+v, %v; want suspended", got, err)
	}
}
