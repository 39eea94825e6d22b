package redis_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/redis"
)

// TestQueueStatsFromIndexes: QueueStats counts each status from the queue
// statistics' keys and the running set, at the Now it is given, and they
// follow every change of status (CheckConsistency checks the keys after
// each step of the whole suite).
func TestQueueStatsFromIndexes(t *testing.T) {
	ctx := context.Background()
	s := newStore(t).(*redis.Store)
	base := time.Date(2031, time.March, 14, 9, 0, 0, 0, time.UTC)
	for _, name := range []string{"acme", "globex"} {
		if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: name, Now: base}); err != nil {
			t.Fatal(err)
		}
	}
	admit := func(tenant string, now time.Time, subs ...store.Submission) []*store.Execution {
		t.Helper()
		res, err := s.Admit(ctx, &store.AdmitParams{Tenant: tenant, Items: subs, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		var out []*store.Execution
		for _, it := range res.Items {
			if it.Err != nil {
				t.Fatal(it.Err)
			}
			out = append(out, it.Execution)
		}
		return out
	}
	pl := json.RawMessage(`{}`)
	acme := admit("acme", base.Add(-2*time.Minute), store.Submission{Kind: "k", Queue: "mail", Payload: pl})
	acme = append(acme, admit("acme", base,
		store.Submission{Kind: "k", Queue: "mail", Payload: pl, Priority: 5},
		store.Submission{Kind: "k", Queue: "mail", Payload: pl, RunAt: base.Add(time.Hour)},
		store.Submission{Kind: "k", Queue: "sms", Payload: pl},
		store.Submission{Kind: "k", Queue: "sms", Payload: pl},
	)...)
	admit("globex", base, store.Submission{Kind: "k", Queue: "mail", Payload: pl})

	// The higher priority one of acme's mail runs; one of sms suspends.
	claim := func(queue string) store.Lease {
		t.Helper()
		res, err := s.Claim(ctx, &store.ClaimParams{WorkerID: "w", Tenant: "acme", Queues: []string{queue}, Max: 1, Now: base})
		if err != nil || len(res.Leases) != 1 {
			t.Fatalf("claim of %s: %+v, %v", queue, res, err)
		}
		return res.Leases[0]
	}
	if l := claim("mail"); l.ExecutionID != acme[1].ID {
		t.Fatalf("claimed %s, want %s", l.ExecutionID, acme[1].ID)
	}
	l := claim("sms")
	if _, err := s.Suspend(ctx, &store.SuspendParams{ExecutionID: l.ExecutionID, Token: l.Token, Step: "w",
		Signal: "go", Now: base}); err != nil {
		t.Fatal(err)
	}

	stats := func(tenant string, now time.Time) []*store.QueueStats {
		t.Helper()
		got, err := s.QueueStats(ctx, &store.QueueStatsParams{Tenant: tenant, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	at := func(d time.Duration) *time.Time { v := base.Add(d); return &v }
	want := []*store.QueueStats{
		{Tenant: "acme", Queue: "mail", Ready: 1, OldestReadyAt: at(-2 * time.Minute), Scheduled: 1, Running: 1},
		{Tenant: "acme", Queue: "sms", Ready: 1, OldestReadyAt: at(0), Suspended: 1},
		{Tenant: "globex", Queue: "mail", Ready: 1, OldestReadyAt: at(0)},
	}
	if got := stats("", base); !reflect.DeepEqual(want, got) {
		t.Errorf("QueueStats at base:\n got %s\nwant %s", showStats(got), showStats(want))
	}
	if got := stats("globex", base); !reflect.DeepEqual(want[2:], got) {
		t.Errorf("QueueStats of globex:\n got %s\nwant %s", showStats(got), showStats(want[2:]))
	}
	// Two hours on, the scheduled one is ready: counted so before any
	// claim or Promote has moved it.
	later := []*store.QueueStats{
		{Tenant: "acme", Queue: "mail", Ready: 2, OldestReadyAt: at(-2 * time.Minute), Running: 1},
		want[1],
	}
	if got := stats("acme", base.Add(2*time.Hour)); !reflect.DeepEqual(later, got) {
		t.Errorf("QueueStats of acme two hours on:\n got %s\nwant %s", showStats(got), showStats(later))
	}
	// Cancelling and deleting leave nothing behind; a queue with nothing
	// left is not listed.
	for _, e := range []*store.Execution{acme[0], acme[2]} {
		if _, err := s.Cancel(ctx, &store.CancelParams{ID: e.ID, Now: base}); err != nil {
			t.Fatal(err)
		}
	}
	want[0] = &store.QueueStats{Tenant: "acme", Queue: "mail", Running: 1}
	if got := stats("", base); !reflect.DeepEqual(want, got) {
		t.Errorf("QueueStats after the cancels:\n got %s\nwant %s", showStats(got), showStats(want))
	}
	if err := s.DeleteTenant(ctx, &store.DeleteTenantParams{Name: "acme", Force: true, Now: base}); err != nil {
		t.Fatal(err)
	}
	if got := stats("", base); !reflect.DeepEqual(want[2:], got) {
		t.Errorf("QueueStats after acme's delete:\n got %s\nwant %s", showStats(got), showStats(want[2:]))
	}
}

// TestDedupHitsAbsentField: an execution never hit carries no dedup-hit
// field (nor a trace field without a traceparent), which reads as zero
// and none: executions written before the fields existed read the same.
func TestDedupHitsAbsentField(t *testing.T) {
	ctx := context.Background()
	s := newStore(t).(*redis.Store)
	base := time.Date(2031, time.March, 14, 9, 0, 0, 0, time.UTC)
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", Now: base}); err != nil {
		t.Fatal(err)
	}
	sub := store.Submission{Kind: "k", Payload: json.RawMessage(`{}`), DedupKey: "d"}
	res, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: []store.Submission{sub}, Now: base})
	if err != nil || res.Items[0].Err != nil {
		t.Fatal(err, res.Items[0].Err)
	}
	id := res.Items[0].Execution.ID
	fields := redis.ExecFields(t, s, id)
	for _, f := range []string{"dhits", "dhit_at", "trace"} {
		if _, ok := fields[f]; ok {
			t.Errorf("a new execution has field %s", f)
		}
	}
	e, err := s.Get(ctx, &store.GetParams{ID: id})
	if err != nil || e.DedupHits != 0 || e.LastDedupHitAt != nil || e.TraceParent != "" {
		t.Fatalf("Get: %+v, %v; want no dedup hit and no trace", e, err)
	}
	// Two hits in one call: each item shows its own count.
	later := base.Add(time.Minute)
	res, err = s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: []store.Submission{sub, sub}, Now: later})
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range res.Items {
		if it.Err != nil || !it.Deduplicated || it.Execution.DedupHits != i+1 ||
			it.Execution.LastDedupHitAt == nil || !it.Execution.LastDedupHitAt.Equal(later) {
			t.Errorf("item %d: %+v deduplicated %v, %v; want hit %d at %v", i, it.Execution, it.Deduplicated, it.Err, i+1, later)
		}
	}
}

func showStats(st []*store.QueueStats) string {
	var b strings.Builder
	for _, q := range st {
		oldest := "nil"
		if q.OldestReadyAt != nil {
			oldest = q.OldestReadyAt.Format(time.RFC3339Nano)
		}
		fmt.Fprintf(&b, "{%s/%s ready %d oldest %s scheduled %d running %d suspended %d} ",
			q.Tenant, q.Queue, q.Ready, oldest, q.Scheduled, q.Running, q.Suspended)
	}
	return b.String()
}

// TestReadFunctionsWriteNothing: the observation reads are functions
// flagged no-writes (the server runs them while it refuses writes, and
// fails one that writes); the operations that change state are not.
func TestReadFunctionsWriteNothing(t *testing.T) {
	url := redisURL(t)
	s := open(t, url, newPrefix(t, url))
	t.Cleanup(func() { s.Close() })
	opt, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := goredis.NewClient(opt)
	defer rdb.Close()
	libs, err := rdb.FunctionList(context.Background(), goredis.FunctionListQuery{LibraryNamePattern: redis.Library()}).Result()
	if err != nil || len(libs) != 1 {
		t.Fatalf("FUNCTION LIST %s: %v, %v", redis.Library(), libs, err)
	}
	flags := map[string][]string{}
	for _, f := range libs[0].Functions {
		flags[strings.TrimPrefix(f.Name, redis.Library()+"_")] = f.Flags
	}
	for _, op := range []string{"queue_stats", "presence", "activity", "list_rate_limits", "concurrency_keys"} {
		if !slices.Contains(flags[op], "no-writes") {
			t.Errorf("function %s: flags %v, want no-writes", op, flags[op])
		}
	}
	for _, op := range []string{"admit", "claim", "complete", "report_server", "prune"} {
		if len(flags[op]) != 0 {
			t.Errorf("function %s: flags %v, want none", op, flags[op])
		}
	}
}
