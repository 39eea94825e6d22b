package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/postgres"
)

// deadlockTracer counts the statements PostgreSQL ended with
// deadlock_detected (40P01) on a store's connections, whether the store
// then ran the operation again or not, and keeps the first victims'
// statements for the failure message.
type deadlockTracer struct {
	n       atomic.Int64
	mu      sync.Mutex
	victims []string
}

type sqlKey struct{}

func (d *deadlockTracer) seen(sql string, err error) {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "40P01" {
		return
	}
	d.n.Add(1)
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.victims) < 5 {
		d.victims = append(d.victims, fmt.Sprintf("%s\n%s", pe.Detail, sql))
	}
}

func (d *deadlockTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, sqlKey{}, data.SQL)
}

func (d *deadlockTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	sql, _ := ctx.Value(sqlKey{}).(string)
	d.seen(sql, data.Err)
}

func (d *deadlockTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (d *deadlockTracer) TraceBatchQuery(_ context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	d.seen(data.SQL, data.Err)
}

func (d *deadlockTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// TestLockOrderNoDeadlock runs, on one tenant whose max_inflight binds all
// the time, the operations whose locks meet: admissions (single, grouped
// with the others' hot statements; batches; dedup hits that hold the
// execution they answer) taking quota units on the exact path, with every
// shard locked, and counting their bytes in the storage row; completes and
// fails (results and errors counted in the storage row) giving units back,
// on the transaction path when no shard is at hand; force deletes of
// executions in flight; cancels; recorded steps; heartbeats; waits for an
// event, the publishes that resume them and start a subscription's
// executions (quota, storage), and the wakes that time them out. Two stores
// share the schema, as two servers would. Every one of these takes its
// locks in the store's one order (doc.go, "Lock order"), so PostgreSQL
// must never find a deadlock among them: the tracer sees every statement
// the server ended with deadlock_detected, retried or not.
func TestLockOrderNoDeadlock(t *testing.T) {
	if testing.Short() {
		t.Skip("a concurrent workload of a few seconds")
	}
	ctx := context.Background()
	acquireSlot(t)
	schema, _ := newSchema(t)
	tr := &deadlockTracer{}
	servers := make([]*postgres.Store, 2)
	for i := range servers {
		s, err := postgres.Open(ctx, databaseURL(t), postgres.WithMigrate(),
			postgres.WithConfig(func(c *pgxpool.Config) {
				c.MaxConns = 8
				c.ConnConfig.RuntimeParams["search_path"] = schema
				c.ConnConfig.Tracer = tr
			}))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		servers[i] = s
	}
	const tenant = "acme"
	if _, err := servers[0].CreateTenant(ctx, &store.CreateTenantParams{Name: tenant, MaxInflight: 4, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}

	var (
		mu  sync.Mutex
		ids []string // recent executions, for deletes and cancels
	)
	remember := func(id string) {
		mu.Lock()
		defer mu.Unlock()
		ids = append(ids, id)
		if len(ids) > 16 {
			ids = ids[1:]
		}
	}
	pick := func(r *rand.Rand) string {
		mu.Lock()
		defer mu.Unlock()
		if len(ids) == 0 {
			return ""
		}
		return ids[r.IntN(len(ids))]
	}
	payload := json.RawMessage(`{"bytes":"0123456789abcdef0123456789abcdef"}`)
	var unexpected atomic.Pointer[error]
	check := func(op string, err error, allowed ...error) {
		if err == nil {
			return
		}
		for _, a := range allowed {
			if errors.Is(err, a) {
				return
			}
		}
		err = fmt.Errorf("%s: %w", op, err)
		unexpected.CompareAndSwap(nil, &err)
	}

	admit := func(s *postgres.Store, r *rand.Rand) {
		n := 1 + r.IntN(2) // one item (grouped), or a batch (admitTx when quota is short)
		items := make([]store.Submission, n)
		for i := range items {
			items[i] = store.Submission{Kind: "k", Payload: payload}
			if r.IntN(2) == 0 { // a small key space: hits on executions in flight
				items[i].DedupKey = fmt.Sprintf("key-%d", r.IntN(6))
			}
		}
		res, err := s.Admit(ctx, &store.AdmitParams{Tenant: tenant, Items: items, Now: time.Now()})
		check("admit", err)
		if err != nil {
			return
		}
		for _, it := range res.Items {
			check("admit item", it.Err, store.ErrQuotaExceeded, store.ErrDedupKeyReused)
			if it.Execution != nil {
				remember(it.Execution.ID)
			}
		}
	}
	work := func(s *postgres.Store, r *rand.Rand) {
		res, err := s.Claim(ctx, &store.ClaimParams{WorkerID: "w", Tenant: tenant, Max: 1, Now: time.Now()})
		check("claim", err)
		if err != nil || len(res.Leases) == 0 {
			return
		}
		l := res.Leases[0]
		if r.IntN(4) == 0 { // a wait for an event: a publish or a wake ends it
			_, err := s.Suspend(ctx, &store.SuspendParams{ExecutionID: l.ExecutionID, Token: l.Token,
				Step: fmt.Sprintf("w%d", r.IntN(1000)), Event: "ev", Timeout: 20 * time.Millisecond, Now: time.Now()})
			check("suspend", err, store.ErrLeaseLost)
			return
		}
		if r.IntN(2) == 0 {
			_, err := s.RecordStep(ctx, &store.RecordStepParams{ExecutionID: l.ExecutionID, Token: l.Token,
				Name: fmt.Sprintf("s%d", r.IntN(3)), Result: payload, Now: time.Now()})
			check("record step", err, store.ErrLeaseLost)
		}
		if r.IntN(3) == 0 {
			_, err := s.Heartbeat(ctx, &store.HeartbeatParams{ExecutionID: l.ExecutionID, Token: l.Token, Now: time.Now()})
			check("heartbeat", err, store.ErrLeaseLost)
		}
		if r.IntN(3) == 0 {
			_, err = s.Fail(ctx, &store.FailParams{ExecutionID: l.ExecutionID, Token: l.Token,
				Error: "boom boom boom boom", Now: time.Now()})
			check("fail", err, store.ErrLeaseLost)
			return
		}
		_, err = s.Complete(ctx, &store.CompleteParams{ExecutionID: l.ExecutionID, Token: l.Token,
			Result: payload, Now: time.Now()})
		check("complete", err, store.ErrLeaseLost)
	}
	disturb := func(s *postgres.Store, r *rand.Rand) {
		id := pick(r)
		if id == "" {
			return
		}
		if r.IntN(2) == 0 {
			_, err := s.Cancel(ctx, &store.CancelParams{ID: id, Now: time.Now()})
			check("cancel", err, store.ErrNotFound)
			return
		}
		err := s.Delete(ctx, &store.DeleteParams{ID: id, Force: true, Now: time.Now()})
		check("delete", err, store.ErrNotFound)
	}

	// Publishes resume the waits (execution rows, under the event name's
	// lock) and start the subscription's executions (quota, storage);
	// Wake ends the waits past their timeout.
	if _, err := servers[0].PutSubscription(ctx, &store.PutSubscriptionParams{Subscription: store.Subscription{
		Tenant: tenant, Name: "sub", Event: "ev", Kind: "k", Enabled: true}, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	publish := func(s *postgres.Store, r *rand.Rand) {
		p := &store.PublishParams{Tenant: tenant, Name: "ev", Data: payload, Now: time.Now()}
		if r.IntN(2) == 0 {
			p.IdempotencyKey = fmt.Sprintf("pub-%d", r.IntN(1000))
		}
		res, err := s.Publish(ctx, p)
		check("publish", err)
		if err == nil {
			for _, st := range res.Started {
				check("publish start", st.Err, store.ErrQuotaExceeded)
			}
		}
	}
	wake := func(s *postgres.Store, _ *rand.Rand) {
		_, err := s.Wake(ctx, &store.WakeParams{Now: time.Now()})
		check("wake", err)
		time.Sleep(5 * time.Millisecond)
	}

	deadline := time.Now().Add(4 * time.Second)
	var wg sync.WaitGroup
	for c, do := range []func(*postgres.Store, *rand.Rand){admit, admit, admit, admit, work, work, work, work, disturb,
		publish, publish, wake} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(c), 1))
			for time.Now().Before(deadline) && tr.n.Load() == 0 {
				do(servers[c%len(servers)], r)
			}
		}()
	}
	wg.Wait()
	if n := tr.n.Load(); n > 0 {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		t.Fatalf("PostgreSQL detected %d deadlock(s) among the store's statements; the first victims:\n%s",
			n, joinLines(tr.victims))
	}
	if err := unexpected.Load(); err != nil {
		t.Fatal(*err)
	}
}

func joinLines(ss []string) string {
	out := ""
	for _, s := range ss {
		out += "---\n" + s + "\n"
	}
	return out
}
