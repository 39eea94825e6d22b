package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
)

// TestMigrateObserve upgrades a file of schema version 6 holding
// executions to version 7 and on: the executions stay as they were, with no trace
// context and no dedup hits; the queue statistics count them (the index is
// built over the rows already there); and a dedup hit on one stored before
// the upgrade counts from zero.
func TestMigrateObserve(t *testing.T) {
	ctx := context.Background()
	path := testdb.SQLite(t)
	base := time.Date(2031, time.March, 14, 9, 0, 0, 0, time.UTC)
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	for len(ms) > 0 && ms[len(ms)-1].Version > 6 {
		ms = ms[:len(ms)-1] // Open below applies 7 and what follows
	}
	if len(ms) == 0 || ms[len(ms)-1].Version != 6 {
		t.Fatal("no migration 6 to upgrade from")
	}
	db, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if err := applyIfNeeded(ctx, db, m); err != nil {
			t.Fatal(err)
		}
	}
	const (
		queued  = "0190f0c0-0000-7000-8000-000000000001"
		running = "0190f0c0-0000-7000-8000-000000000002"
		done    = "0190f0c0-0000-7000-8000-000000000003"
	)
	day := int64(24 * time.Hour)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO tenants (name, max_inflight, inflight, dedup_ttl, retention, created_at) VALUES ('acme', 100, 2, ?, ?, ?)`,
			[]any{day, day, base.UnixNano()}},
		{`INSERT INTO executions (id, tenant, kind, queue, priority, status, dedup_key, payload, max_attempts,
			timeout_seconds, created_at, run_at) VALUES (?, 'acme', 'mail', 'default', 0, 'queued', 'k1', '{}', 3, 60, ?, ?)`,
			[]any{queued, base.UnixNano(), base.UnixNano()}},
		{`INSERT INTO dedup_keys (tenant, dedup_key, execution_id, expires_at) VALUES ('acme', 'k1', ?, ?)`,
			[]any{queued, base.UnixNano() + day}},
		{`INSERT INTO executions (id, tenant, kind, queue, priority, status, concurrency_key, concurrency_limit,
			payload, attempt, max_attempts, timeout_seconds, created_at, run_at, started_at, worker_id, lease_token,
			lease_expires_at, runs) VALUES (?, 'acme', 'mail', 'slow', 0, 'running', 'ck', 2, '{}', 1, 3, 60, ?, ?, ?, 'w1', 'tok', ?, 1)`,
			[]any{running, base.UnixNano(), base.UnixNano(), base.UnixNano(), base.Add(time.Minute).UnixNano()}},
		{`INSERT INTO executions (id, tenant, kind, queue, priority, status, payload, result, attempt, max_attempts,
			timeout_seconds, created_at, run_at, finished_at) VALUES (?, 'acme', 'mail', 'default', 0, 'succeeded', '{}', '1', 1, 3, 60, ?, ?, ?)`,
			[]any{done, base.UnixNano(), base.UnixNano(), base.UnixNano()}},
	} {
		if _, err := db.ExecContext(ctx, q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
	db.Close()

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, id := range []string{queued, running, done} {
		e, err := s.Get(ctx, &store.GetParams{ID: id})
		if err != nil {
			t.Fatalf("Get %s after the upgrade: %v", id, err)
		}
		if e.TraceParent != "" || e.DedupHits != 0 || e.LastDedupHitAt != nil {
			t.Errorf("execution %s after the upgrade: trace %q, %d dedup hits at %v; want none",
				id, e.TraceParent, e.DedupHits, e.LastDedupHitAt)
		}
	}
	stats, err := s.QueueStats(ctx, &store.QueueStatsParams{Now: base})
	if err != nil {
		t.Fatal(err)
	}
	if len(stats) != 2 || *stats[0] != (store.QueueStats{Tenant: "acme", Queue: "default", Ready: 1, OldestReadyAt: stats[0].OldestReadyAt}) ||
		stats[0].OldestReadyAt == nil || !stats[0].OldestReadyAt.Equal(base) ||
		*stats[1] != (store.QueueStats{Tenant: "acme", Queue: "slow", Running: 1}) {
		t.Errorf("QueueStats after the upgrade = %s; want acme/default 1 ready since %v, acme/slow 1 running", statsString(stats), base)
	}
	keys, err := s.ConcurrencyKeys(ctx, &store.ConcurrencyKeysParams{})
	if err != nil || len(keys) != 1 || *keys[0] != (store.ConcurrencyKeyUse{Tenant: "acme", Key: "ck", Running: 1, Limit: 2}) {
		t.Errorf("ConcurrencyKeys after the upgrade = %v, %v; want acme/ck 1 running of 2", keys, err)
	}
	hitAt := base.Add(time.Second)
	res, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: []store.Submission{{Kind: "mail", DedupKey: "k1"}}, Now: hitAt})
	if err != nil || res.Items[0].Err != nil || !res.Items[0].Deduplicated {
		t.Fatalf("Admit of the stored dedup key = %+v, %v; want deduplicated", res, err)
	}
	if e := res.Items[0].Execution; e.ID != queued || e.DedupHits != 1 || e.LastDedupHitAt == nil || !e.LastDedupHitAt.Equal(hitAt) {
		t.Errorf("the hit's execution = %s with %d hits at %v; want %s with 1 at %v", e.ID, e.DedupHits, e.LastDedupHitAt, queued, hitAt)
	}
	if e, err := s.Get(ctx, &store.GetParams{ID: queued}); err != nil || e.DedupHits != 1 {
		t.Errorf("Get after the hit = %+v, %v; want 1 dedup hit", e, err)
	}
}

func statsString(stats []*store.QueueStats) string {
	out := "["
	for _, q := range stats {
		out += fmt.Sprintf(" %s/%s ready=%d scheduled=%d running=%d suspended=%d", q.Tenant, q.Queue,
			q.Ready, q.Scheduled, q.Running, q.Suspended)
		if q.OldestReadyAt != nil {
			out += " oldest=" + q.OldestReadyAt.Format(time.RFC3339Nano)
		}
	}
	return out + " ]"
}

// TestDedupHitsConcurrent submits one dedup key from many goroutines at
// once: one is admitted, every other is a hit, and the count is exact.
func TestDedupHitsConcurrent(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	const n = 40
	errs := make(chan error, n)
	var hits atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme",
				Items: []store.Submission{{Kind: "mail", DedupKey: "once", Payload: []byte(`{"a":1}`)}}})
			if err == nil {
				err = res.Items[0].Err
			}
			if err == nil && res.Items[0].Deduplicated {
				hits.Add(1)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.List(ctx, &store.ListParams{Tenant: "acme"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("List = %+v, %v; want the one execution", list, err)
	}
	if e := list.Items[0]; hits.Load() != n-1 || e.DedupHits != n-1 || e.LastDedupHitAt == nil {
		t.Errorf("%d submits answered deduplicated, the execution counts %d hits (last at %v); want %d",
			hits.Load(), e.DedupHits, e.LastDedupHitAt, n-1)
	}
}

// TestDedupHitsScheduleTrigger fires a schedule twice with one
// idempotency key: the second fire is answered with the first's execution,
// its hit counted.
func TestDedupHitsScheduleTrigger(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base := time.Date(2031, time.March, 14, 9, 0, 0, 0, time.UTC)
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", Now: base}); err != nil {
		t.Fatal(err)
	}
	sc := store.Schedule{Tenant: "acme", Name: "s", Every: time.Minute, Timezone: "UTC", Kind: "sweep",
		Payload: []byte(`{}`), Overlap: store.OverlapAllow, Catchup: store.CatchupOne, Enabled: true,
		NextRunAt: base.Add(time.Minute)}
	if _, err := s.PutSchedule(ctx, &store.PutScheduleParams{Schedule: sc, Now: base}); err != nil {
		t.Fatal(err)
	}
	fire := func(at time.Time) *store.FireScheduleResult {
		t.Helper()
		r, err := s.FireSchedule(ctx, &store.FireScheduleParams{Tenant: "acme", Name: "s", Trigger: true,
			IdempotencyKey: "deploy-1", Tick: at, Now: at})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	first := fire(base)
	if first.Deduplicated || first.Execution.DedupHits != 0 || first.Execution.LastDedupHitAt != nil {
		t.Fatalf("first trigger = %+v; want a new execution without hits", first)
	}
	again := base.Add(time.Second)
	second := fire(again)
	if !second.Deduplicated || second.Execution.ID != first.Execution.ID || second.Execution.DedupHits != 1 ||
		second.Execution.LastDedupHitAt == nil || !second.Execution.LastDedupHitAt.Equal(again) {
		t.Fatalf("second trigger = %+v (execution %+v); want the first's execution with 1 hit at %v",
			second, second.Execution, again)
	}
	if e, err := s.Get(ctx, &store.GetParams{ID: first.Execution.ID}); err != nil || e.DedupHits != 1 {
		t.Errorf("Get after the hit = %+v, %v; want 1 dedup hit", e, err)
	}
}

// TestListLiveStatusPages pages through a tenant's executions of a status
// in flight (read through executions_live): newest first, every one once,
// none of another status, queue or tenant.
func TestListLiveStatusPages(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base := time.Date(2031, time.March, 14, 9, 0, 0, 0, time.UTC)
	for _, name := range []string{"acme", "globex"} {
		if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: name, Now: base}); err != nil {
			t.Fatal(err)
		}
	}
	submit := func(tenant, queue string) string {
		t.Helper()
		res, err := s.Admit(ctx, &store.AdmitParams{Tenant: tenant, Items: []store.Submission{{Kind: "k", Queue: queue}}, Now: base})
		if err != nil || res.Items[0].Err != nil {
			t.Fatalf("Admit: %+v, %v", res, err)
		}
		return res.Items[0].Execution.ID
	}
	submit("acme", "")
	if c, err := s.Claim(ctx, &store.ClaimParams{Tenant: "acme", Max: 1, Now: base}); err != nil || len(c.Leases) != 1 {
		t.Fatalf("Claim: %+v, %v", c, err) // one running: not queued
	}
	var want []string
	for i := range 7 {
		want = append(want, submit("acme", ""))
		submit("globex", "")
		if i%3 == 0 {
			submit("acme", "other")
		}
	}
	slices.Reverse(want)
	var got []string
	after := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("List does not end")
		}
		res, err := s.List(ctx, &store.ListParams{Tenant: "acme", Status: store.StatusQueued, Queue: store.DefaultQueue,
			Limit: 3, After: after})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range res.Items {
			if e.Tenant != "acme" || e.Status != store.StatusQueued || e.Queue != store.DefaultQueue {
				t.Errorf("listed %s of %s, %s in %s", e.ID, e.Tenant, e.Status, e.Queue)
			}
			got = append(got, e.ID)
		}
		if after = res.Next; after == "" {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("pages listed %v, want %v", got, want)
	}
}

// TestReportServerRefusesBadInput: a report without a server id, with a
// worker without an id, or with a negative count is refused whole.
func TestReportServerRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base := time.Date(2031, time.March, 14, 9, 0, 0, 0, time.UTC)
	// Counts are kept only for a tenant that exists.
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", Now: base}); err != nil {
		t.Fatal(err)
	}
	for what, r := range map[string]store.ServerReport{
		"no server id": {Workers: []store.WorkerSeen{{ID: "w"}}, Now: base},
		"a worker without an id": {ID: "s1", Workers: []store.WorkerSeen{{ID: "w"}, {}},
			Activity: []store.ActivityCount{{Tenant: "acme", Minute: base, Starts: 1}}, Now: base},
		"a negative count": {ID: "s1", Workers: []store.WorkerSeen{{ID: "w"}},
			Activity: []store.ActivityCount{{Tenant: "acme", Minute: base, Starts: 2}, {Tenant: "acme", Minute: base, Failures: -1}}, Now: base},
	} {
		if err := s.ReportServer(ctx, &r); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("report with %s: %v, want ErrInvalid", what, err)
		}
	}
	p, err := s.Presence(ctx, &store.PresenceParams{})
	if err != nil || len(p.Servers) != 0 || len(p.Workers) != 0 {
		t.Errorf("Presence after refused reports = %+v, %v; want nothing", p, err)
	}
	if a, err := s.Activity(ctx, &store.ActivityParams{}); err != nil || len(a) != 0 {
		t.Errorf("Activity after refused reports = %v, %v; want nothing", a, err)
	}
	// A minute given off the minute counts in the minute it falls in.
	if err := s.ReportServer(ctx, &store.ServerReport{ID: "s1", Now: base,
		Activity: []store.ActivityCount{{Tenant: "acme", Minute: base.Add(30 * time.Second), Starts: 1}}}); err != nil {
		t.Fatal(err)
	}
	if a, err := s.Activity(ctx, &store.ActivityParams{Tenant: "acme"}); err != nil || len(a) != 1 ||
		!a[0].Minute.Equal(base) || a[0].Starts != 1 {
		t.Errorf("Activity = %v, %v; want 1 start in the minute at %v", a, err, base)
	}
}
