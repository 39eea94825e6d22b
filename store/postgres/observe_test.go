package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/postgres"
)

// The dedup hits and observation tables of schema version 8, as this
// backend keeps them: what a migration does to them, and how a hit's row
// lock meets the claims and cancels of its execution (dedup.go).

const obsTP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

var obsNow = time.Date(2031, time.March, 14, 9, 0, 0, 0, time.UTC)

// obsStore opens a migrated store with a pool of n on a fresh schema and
// creates tenant acme; it returns the store and the schema.
func obsStore(t *testing.T, n int32, tenant store.CreateTenantParams) (*postgres.Store, string) {
	t.Helper()
	acquireSlot(t)
	schema, _ := newSchema(t)
	s := openSchema(t, databaseURL(t), schema, n)
	t.Cleanup(func() { s.Close() })
	if tenant.Name == "" {
		tenant.Name = "acme"
	}
	tenant.Now = obsNow
	if _, err := s.CreateTenant(t.Context(), &tenant); err != nil {
		t.Fatal(err)
	}
	return s, schema
}

func admitOne(t *testing.T, s store.Store, sub store.Submission, now time.Time) store.Admitted {
	t.Helper()
	res, err := s.Admit(context.Background(), &store.AdmitParams{Tenant: "acme", Items: []store.Submission{sub}, Now: now})
	if err != nil {
		t.Fatal("Admit:", err)
	}
	return res.Items[0]
}

func keyedSub(key string) store.Submission {
	return store.Submission{Kind: "echo", DedupKey: key, Payload: json.RawMessage(`{"n":1}`)}
}

func getExec(t *testing.T, s store.Store, id string) *store.Execution {
	t.Helper()
	x, err := s.Get(context.Background(), &store.GetParams{ID: id})
	if err != nil {
		t.Fatal("Get:", err)
	}
	return x
}

// TestMigrateObserveDownAndUp: reverting schema version 8 and applying it
// again keeps every execution; their hits start again from 0, with no trace
// context; the presence tables start empty.
func TestMigrateObserveDownAndUp(t *testing.T) {
	t.Parallel()
	acquireSlot(t)
	ctx := t.Context()
	schema, u := newSchema(t)
	s := openMigrated(t, u)
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", Now: obsNow}); err != nil {
		t.Fatal(err)
	}
	sub := keyedSub("k")
	sub.TraceParent = obsTP
	x := admitOne(t, s, sub, obsNow).Execution
	for i := 1; i <= 2; i++ {
		if a := admitOne(t, s, sub, obsNow.Add(time.Duration(i)*time.Second)); !a.Deduplicated || a.Execution.DedupHits != i {
			t.Fatalf("hit %d: %+v", i, a)
		}
	}
	if err := s.ReportServer(ctx, &store.ServerReport{ID: "s1", Now: obsNow,
		Workers:  []store.WorkerSeen{{ID: "w", LastSeenAt: obsNow}},
		Activity: []store.ActivityCount{{Tenant: "acme", Minute: obsNow, Starts: 1}}}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	for v := postgres.SchemaVersion(); v > 7; v-- { // down to version 7, the one before these columns
		st, err := postgres.Migrate(ctx, u, "down")
		if err != nil || st.Version != v-1 {
			t.Fatalf("down from %d: %+v, %v", v, st, err)
		}
	}
	var n int
	if err := admin.pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.columns
		WHERE table_schema = $1 AND column_name IN ('trace_parent', 'dedup_hits', 'last_dedup_hit_at')`,
		schema).Scan(&n); err != nil || n != 0 {
		t.Fatalf("after down: %d of the version 8 columns left (%v)", n, err)
	}
	if err := admin.pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables
		WHERE table_schema = $1 AND table_name IN ('latch_servers', 'latch_workers', 'latch_activity')`,
		schema).Scan(&n); err != nil || n != 0 {
		t.Fatalf("after down: %d of the version 8 tables left (%v)", n, err)
	}
	s = openMigrated(t, u)
	defer s.Close()
	got := getExec(t, s, x.ID)
	if got.Status != store.StatusQueued || got.DedupKey != "k" || got.DedupHits != 0 || got.LastDedupHitAt != nil || got.TraceParent != "" {
		t.Fatalf("after down and up: %+v; want the queued execution with 0 hits and no trace context", got)
	}
	if a := admitOne(t, s, sub, obsNow.Add(time.Minute)); !a.Deduplicated || a.Execution.ID != x.ID || a.Execution.DedupHits != 1 {
		t.Fatalf("hit after down and up: %+v", a)
	}
	p, err := s.Presence(ctx, &store.PresenceParams{Since: obsNow.Add(-time.Hour)})
	if err != nil || len(p.Servers)+len(p.Workers) != 0 {
		t.Fatalf("presence after down and up: %+v, %v", p, err)
	}
}

// TestDedupHitWaitsForCancelAndClaim: a hit takes its execution's row lock,
// so it waits for a Cancel or a claim that holds the row; neither of them
// waits for the hit, so the waits form a chain, never a cycle: the hit
// answers once they commit, showing what they did, with its count.
//
// The Cancel is made to hold the row while it waits for the tenant's quota
// shards (held here, as concurrent admissions would), the claim while it
// waits for its concurrency key's lock (held here, as another claimer
// would). Each hit comes through the two paths a hit takes: a one-item
// Admit (its group's hit statement) and a batch (admitTx's lockHits).
func TestDedupHitWaitsForCancelAndClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, schema := obsStore(t, 8, store.CreateTenantParams{})
	shards := `SELECT 1 FROM ` + pgx.Identifier{schema, "latch_quota_shards"}.Sanitize() + ` WHERE tenant = 'acme' FOR UPDATE`

	type outcome struct {
		items []store.Admitted
		err   error
	}
	hitBoth := func(sub store.Submission, now time.Time) (one, batch chan outcome) {
		one, batch = make(chan outcome, 1), make(chan outcome, 1)
		go func() {
			r, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: []store.Submission{sub}, Now: now})
			if err != nil {
				one <- outcome{err: err}
				return
			}
			one <- outcome{items: r.Items}
		}()
		go func() {
			r, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: []store.Submission{{Kind: "other"}, sub}, Now: now})
			if err != nil {
				batch <- outcome{err: err}
				return
			}
			batch <- outcome{items: r.Items}
		}()
		return one, batch
	}
	checkHits := func(what string, one, batch chan outcome, id string, status store.Status, first int) {
		t.Helper()
		var hits []int
		for _, o := range []outcome{<-one, <-batch} {
			if o.err != nil {
				t.Fatalf("%s: Admit: %v", what, o.err)
			}
			a := o.items[len(o.items)-1]
			if a.Err != nil || !a.Deduplicated || a.Execution.ID != id {
				t.Fatalf("%s: answered %+v, want a hit on %s", what, a, id)
			}
			if a.Execution.Status != status {
				t.Errorf("%s: the hit answers %s, want %s (it waited for the lock's holder)", what, a.Execution.Status, status)
			}
			hits = append(hits, a.Execution.DedupHits)
		}
		slices.Sort(hits)
		if !slices.Equal(hits, []int{first, first + 1}) {
			t.Errorf("%s: hits answered %v, want %d and %d", what, hits, first, first+1)
		}
		if got := getExec(t, s, id); got.DedupHits != first+1 {
			t.Errorf("%s: DedupHits %d, want %d", what, got.DedupHits, first+1)
		}
	}

	// A Cancel holding the row, waiting for quota shards.
	x := admitOne(t, s, keyedSub("c"), obsNow).Execution
	tx, pid := holdLocks(t, shards)
	cancelled := make(chan error, 1)
	go func() {
		_, err := s.Cancel(ctx, &store.CancelParams{ID: x.ID, Tenant: "acme", Now: obsNow})
		cancelled <- err
	}()
	waitBlockedBy(t, pid, 1)
	one, batch := hitBoth(keyedSub("c"), obsNow.Add(time.Second))
	// The one-item hit waits for the Cancel, which waits for this
	// transaction; the batch waits for the Cancel too, or, if it took its
	// quota first, for a shard held here.
	waitBlockedBy(t, pid, 3)
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-cancelled; err != nil {
		t.Fatal("Cancel:", err)
	}
	checkHits("hits behind a Cancel", one, batch, x.ID, store.StatusCancelled, 1)

	// A claim holding the row (a candidate with a concurrency key), waiting
	// for the key's lock.
	sub := keyedSub("r")
	sub.ConcurrencyKey = "ck"
	y := admitOne(t, s, sub, obsNow).Execution
	tx, pid = holdLocks(t, fmt.Sprintf(`SELECT pg_advisory_xact_lock(%d, hashtext('acme' || E'\n' || 'ck'))`,
		postgres.LockSpaceConcurrency))
	claimed := make(chan *store.ClaimResult, 1)
	go func() {
		r, err := s.Claim(ctx, &store.ClaimParams{WorkerID: "w", Tenant: "acme", Kinds: []string{"echo"}, Max: 1, Now: obsNow})
		if err != nil {
			t.Error("Claim:", err)
		}
		claimed <- r
	}()
	waitBlockedBy(t, pid, 1)
	one, batch = hitBoth(sub, obsNow.Add(2*time.Second))
	waitBlockedBy(t, pid, 3)
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if r := <-claimed; r == nil || len(r.Leases) != 1 || r.Leases[0].ExecutionID != y.ID {
		t.Fatalf("Claim: %+v, want %s leased", r, y.ID)
	}
	checkHits("hits behind a claim", one, batch, y.ID, store.StatusRunning, 1)
}

// TestDedupHitsExactWithClaimsAndCancels: same-key submits through every
// path a hit takes (one-item submits, which share statements; batches with
// the key once, twice, or beside a new item) race claims, completes and a
// cancel of the very execution. Every hit is answered with its own number:
// the numbers answered are exactly 1..hits, and the execution counts them
// all.
func TestDedupHitsExactWithClaimsAndCancels(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := obsStore(t, 12, store.CreateTenantParams{})
	for round := range 3 {
		key := fmt.Sprintf("k%d", round)
		x := admitOne(t, s, keyedSub(key), obsNow).Execution
		const clients, perClient = 12, 6
		var mu sync.Mutex
		var hits []int
		var wg sync.WaitGroup
		for c := range clients {
			wg.Go(func() {
				for i := range perClient {
					var items []store.Submission
					switch (c + i) % 4 {
					case 0, 1:
						items = []store.Submission{keyedSub(key)}
					case 2:
						items = []store.Submission{keyedSub(key), keyedSub(key)}
					default:
						items = []store.Submission{{Kind: "other"}, keyedSub(key)}
					}
					r, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: items, Now: obsNow.Add(time.Duration(i) * time.Millisecond)})
					if err != nil {
						t.Error("Admit:", err)
						return
					}
					mu.Lock()
					for _, a := range r.Items {
						switch {
						case a.Err != nil:
							t.Error("Admit item:", a.Err)
						case a.Execution.DedupKey == key && a.Execution.ID != x.ID:
							t.Errorf("a second execution %s for key %s", a.Execution.ID, key)
						case a.Execution.DedupKey == key:
							if !a.Deduplicated {
								t.Errorf("a hit on %s not marked Deduplicated", x.ID)
							}
							hits = append(hits, a.Execution.DedupHits)
						}
					}
					mu.Unlock()
				}
			})
		}
		wg.Go(func() {
			for range 20 {
				r, err := s.Claim(ctx, &store.ClaimParams{WorkerID: "w", Tenant: "acme", Max: 4, Now: obsNow})
				if err != nil {
					t.Error("Claim:", err)
					return
				}
				for _, l := range r.Leases {
					if l.ExecutionID == x.ID && round == 1 {
						continue // left running: the cancel below requests its cancel
					}
					if _, err := s.Complete(ctx, &store.CompleteParams{ExecutionID: l.ExecutionID, Tenant: "acme", Token: l.Token, Now: obsNow}); err != nil {
						t.Error("Complete:", err)
					}
				}
			}
		})
		wg.Go(func() {
			if round == 0 {
				return
			}
			if _, err := s.Cancel(ctx, &store.CancelParams{ID: x.ID, Tenant: "acme", Now: obsNow}); err != nil {
				t.Error("Cancel:", err)
			}
		})
		wg.Wait()
		slices.Sort(hits)
		for i, h := range hits {
			if h != i+1 {
				t.Fatalf("round %d: the %d hits answered %v, want each of 1..%d once", round, len(hits), hits, len(hits))
			}
		}
		if got := getExec(t, s, x.ID).DedupHits; got != len(hits) {
			t.Fatalf("round %d: DedupHits %d after %d hits", round, got, len(hits))
		}
		if len(hits) < clients*perClient {
			t.Fatalf("round %d: only %d hits", round, len(hits))
		}
	}
}

// TestQueueStatsPlans: QueueStats and ConcurrencyKeys read the executions
// in flight from their partial indexes, never the whole table (which holds
// every finished execution too). The plans are read with statistics that
// know the finished executions are most of the table.
func TestQueueStatsPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, schema := obsStore(t, 4, store.CreateTenantParams{})
	tbl := pgx.Identifier{schema, "latch_executions"}.Sanitize()
	// 20000 finished executions, 20 of each status in flight.
	if _, err := admin.pool.Exec(ctx, `INSERT INTO `+tbl+` (id, tenant, kind, queue, priority, status, payload,
		max_attempts, timeout_seconds, created_at, run_at, finished_at, concurrency_key, concurrency_limit)
		SELECT gen_random_uuid(), 'acme', 'echo', 'q' || (i % 3), 0,
			CASE WHEN i <= 80 THEN (ARRAY['queued','scheduled','running','suspended'])[1 + i % 4] ELSE 'succeeded' END,
			'{}', 1, 60, now(), now(), CASE WHEN i > 80 THEN now() END,
			CASE WHEN i <= 80 THEN 'k' || (i % 5) END, 2
		FROM generate_series(1, 20000) AS i`); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.pool.Exec(ctx, `ANALYZE `+tbl); err != nil {
		t.Fatal(err)
	}
	stats, err := s.QueueStats(ctx, &store.QueueStatsParams{Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, q := range stats {
		total += q.Ready + q.Scheduled + q.Running + q.Suspended
	}
	if total != 80 {
		t.Fatalf("QueueStats counted %d executions in flight, want 80", total)
	}
	for name, sql := range postgres.ObservePlanQueries() {
		var plan []string
		tx, err := admin.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// As the store's connections run (postgres.go).
		if _, err := tx.Exec(ctx, `SET LOCAL search_path = `+pgx.Identifier{schema}.Sanitize()+
			`; SET LOCAL plan_cache_mode = force_generic_plan`); err != nil {
			t.Fatal(err)
		}
		rows, err := tx.Query(ctx, `EXPLAIN `+sql.SQL, sql.Args...)
		if err == nil {
			plan, err = pgx.CollectRows(rows, pgx.RowTo[string])
		}
		_ = tx.Rollback(ctx)
		if err != nil {
			t.Fatalf("%s: EXPLAIN: %v", name, err)
		}
		t.Logf("%s:\n%s", name, strings.Join(plan, "\n"))
		for _, line := range plan {
			if strings.Contains(line, "Seq Scan on latch_executions") {
				t.Errorf("%s reads the whole table:\n%s", name, strings.Join(plan, "\n"))
				break
			}
		}
	}
}

// TestDedupHitsInBatches: a batch that cannot be admitted in one statement
// (its key is taken) runs as a transaction (admitTx), which counts its hits
// when it locks them: two items with the key are two hits, numbered in
// order; an item that reuses the key with another payload is refused and
// counts nothing, and changes nothing of the execution.
func TestDedupHitsInBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := obsStore(t, 4, store.CreateTenantParams{})
	x := admitOne(t, s, keyedSub("k"), obsNow).Execution
	at := obsNow.Add(time.Minute)
	r, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Now: at,
		Items: []store.Submission{{Kind: "other"}, keyedSub("k"), keyedSub("k")}})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{1, 2} {
		a := r.Items[i+1]
		if a.Err != nil || !a.Deduplicated || a.Execution.ID != x.ID || a.Execution.DedupHits != want ||
			a.Execution.LastDedupHitAt == nil || !a.Execution.LastDedupHitAt.Equal(at) {
			t.Fatalf("batch item %d: %+v, want hit %d at %s", i+1, a, want, at)
		}
	}
	reuse := keyedSub("k")
	reuse.Payload = json.RawMessage(`{"n":2}`)
	r, err = s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Now: at.Add(time.Minute),
		Items: []store.Submission{{Kind: "other"}, reuse}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Items[0].Err != nil || !errors.Is(r.Items[1].Err, store.ErrDedupKeyReused) {
		t.Fatalf("batch with a reuse: %+v", r.Items)
	}
	if got := getExec(t, s, x.ID); got.DedupHits != 2 || !got.LastDedupHitAt.Equal(at) {
		t.Fatalf("after a refused reuse: DedupHits %d at %v, want 2 at %s", got.DedupHits, got.LastDedupHitAt, at)
	}
}

// TestReportServerRules: a report without a server id, with a worker
// without an id, or with an activity count below 0 or without a tenant is
// refused whole (ErrInvalid, nothing written); counts given at any time of
// a minute land in that minute, and a tenant's counts given twice in one
// report add up; workers and counts of a tenant that does not exist are
// left out.
func TestReportServerRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := obsStore(t, 4, store.CreateTenantParams{})
	for name, r := range map[string]store.ServerReport{
		"no server id":    {Now: obsNow},
		"a worker no id":  {ID: "s1", Now: obsNow, Workers: []store.WorkerSeen{{Tenant: "acme"}}},
		"negative starts": {ID: "s1", Now: obsNow, Activity: []store.ActivityCount{{Tenant: "acme", Minute: obsNow, Starts: -1}}},
		"no tenant":       {ID: "s1", Now: obsNow, Activity: []store.ActivityCount{{Minute: obsNow, Starts: 1}}},
	} {
		r.Workers = append(r.Workers, store.WorkerSeen{ID: "w-ok", LastSeenAt: obsNow})
		if err := s.ReportServer(ctx, &r); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("report with %s: %v, want ErrInvalid", name, err)
		}
	}
	if p, err := s.Presence(ctx, &store.PresenceParams{Since: obsNow.Add(-time.Hour)}); err != nil || len(p.Servers)+len(p.Workers) != 0 {
		t.Fatalf("refused reports wrote %+v (%v)", p, err)
	}
	if err := s.ReportServer(ctx, &store.ServerReport{ID: "s1", Now: obsNow,
		Workers: []store.WorkerSeen{{ID: "w", Tenant: "nobody", LastSeenAt: obsNow}, {ID: "w", Tenant: "acme", LastSeenAt: obsNow}},
		Activity: []store.ActivityCount{
			{Tenant: "acme", Minute: obsNow.Add(10 * time.Second), Starts: 2},
			{Tenant: "acme", Minute: obsNow.Add(50 * time.Second), Starts: 1, Failures: 1},
			{Tenant: "nobody", Minute: obsNow, Starts: 7},
		}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Activity(ctx, &store.ActivityParams{Since: obsNow.Add(-time.Hour)})
	if err != nil || len(got) != 1 || !got[0].Minute.Equal(obsNow) || got[0].Starts != 3 || got[0].Failures != 1 {
		t.Fatalf("Activity: %+v, %v; want one minute at %s with 3 starts and 1 failure", got, err, obsNow)
	}
	p, err := s.Presence(ctx, &store.PresenceParams{Since: obsNow.Add(-time.Hour)})
	if err != nil || len(p.Workers) != 1 || p.Workers[0].Tenant != "acme" {
		t.Fatalf("Presence: %+v, %v; want acme's worker only", p, err)
	}
}
