package redis_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/redis"
)

// TestObserveAt1M times the observation reads and List on a namespace of
// 1,000,000 executions: 990,000 terminal (written straight in pipelines)
// and 10,000 in flight over 50 tenants and 5 queues (admitted, claimed and
// suspended through the Store: 4,000 queued, 2,000 scheduled, 3,000
// running, 1,000 suspended). It runs only with LATCH_BENCH_1M=1 and logs
// the median of 5 calls of each read:
//
//	LATCH_BENCH_1M=1 go test -run TestObserveAt1M -v -timeout 20m ./store/redis/
func TestObserveAt1M(t *testing.T) {
	if os.Getenv("LATCH_BENCH_1M") != "1" {
		t.Skip("set LATCH_BENCH_1M=1 to seed 1,000,000 executions and time the reads")
	}
	ctx := context.Background()
	url := redisURL(t)
	s := open(t, url, newPrefix(t, url))
	t.Cleanup(func() { s.Close() })
	base := time.Date(2031, time.March, 14, 9, 0, 0, 0, time.UTC)
	var tenants []string
	for i := range 50 {
		tenants = append(tenants, fmt.Sprintf("t%02d", i))
	}
	queues := []string{"q0", "q1", "q2", "q3", "q4"}
	start := time.Now()
	for _, name := range tenants {
		if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: name, MaxInflight: 1000, Now: base}); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"api", "mail"} {
			if _, err := s.PutRateLimit(ctx, &store.PutRateLimitParams{
				Limit: store.RateLimit{Tenant: name, Key: k, Rate: 10, Per: time.Second, Burst: 5}, Now: base}); err != nil {
				t.Fatal(err)
			}
		}
	}
	redis.SeedTerminal(t, s, tenants, queues, 990_000, base.Add(-time.Hour))
	t.Logf("seeded 990,000 terminal executions in %v", time.Since(start).Round(time.Millisecond))

	// 200 a tenant, 40 a queue: 32 ready now, 8 an hour on.
	for _, name := range tenants {
		var subs []store.Submission
		for i := range 200 {
			sub := store.Submission{Kind: "work", Queue: queues[i%5], Payload: json.RawMessage(`{"n":1}`),
				ConcurrencyKey: fmt.Sprintf("ck%d", i%7), ConcurrencyLimit: 1000}
			if (i/5)%5 == 4 {
				sub.RunAt = base.Add(time.Hour)
			}
			subs = append(subs, sub)
		}
		res, err := s.Admit(ctx, &store.AdmitParams{Tenant: name, Items: subs, Now: base})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range res.Items {
			if it.Err != nil {
				t.Fatal(it.Err)
			}
		}
	}
	var leases []store.Lease
	for len(leases) < 4000 {
		res, err := s.Claim(ctx, &store.ClaimParams{WorkerID: "w", Max: 100, LeaseDuration: time.Hour, Now: base})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Leases) == 0 {
			t.Fatalf("only %d claimed", len(leases))
		}
		leases = append(leases, res.Leases...)
	}
	for _, l := range leases[:1000] {
		if _, err := s.Suspend(ctx, &store.SuspendParams{ExecutionID: l.ExecutionID, Token: l.Token, Step: "wait",
			Signal: "go", Now: base}); err != nil {
			t.Fatal(err)
		}
	}
	// 10 servers of 20 workers each, and two hours of activity for each
	// tenant.
	for i := range 10 {
		r := store.ServerReport{ID: fmt.Sprintf("server-%d", i), Host: "host", Version: "v", StartedAt: base, Now: base}
		for w := range 20 {
			r.Workers = append(r.Workers, store.WorkerSeen{ID: fmt.Sprintf("w%d", w), Tenant: tenants[(i*20+w)%50], LastSeenAt: base})
		}
		if i == 0 {
			for m := range 120 {
				for _, name := range tenants {
					r.Activity = append(r.Activity, store.ActivityCount{Tenant: name,
						Minute: base.Add(-time.Duration(m) * time.Minute), Starts: 10, Failures: 1})
				}
			}
		}
		if err := s.ReportServer(ctx, &r); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("seeded everything in %v", time.Since(start).Round(time.Millisecond))

	// Sanity: the counts the seed made.
	stats, err := s.QueueStats(ctx, &store.QueueStatsParams{Now: base})
	if err != nil {
		t.Fatal(err)
	}
	var ready, scheduled, running, suspended int
	for _, q := range stats {
		ready, scheduled, running, suspended = ready+q.Ready, scheduled+q.Scheduled, running+q.Running, suspended+q.Suspended
	}
	if len(stats) != 250 || ready != 4000 || scheduled != 2000 || running != 3000 || suspended != 1000 {
		t.Fatalf("QueueStats: %d queues, ready %d scheduled %d running %d suspended %d; want 250, 4000, 2000, 3000, 1000",
			len(stats), ready, scheduled, running, suspended)
	}

	median := func(name string, n int, fn func() error) {
		t.Helper()
		var ds []time.Duration
		for range n {
			t0 := time.Now()
			if err := fn(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			ds = append(ds, time.Since(t0))
		}
		slices.Sort(ds)
		t.Logf("%-40s median of %d: %v", name, n, ds[len(ds)/2].Round(10*time.Microsecond))
	}
	discard := func(_ any, err error) error { return err }
	median("Ping (a round trip, for the machine's load)", 5, func() error { return s.Ping(ctx) })
	median("QueueStats, every tenant", 5, func() error { return discard(s.QueueStats(ctx, &store.QueueStatsParams{Now: base})) })
	median("QueueStats, one tenant", 5, func() error {
		return discard(s.QueueStats(ctx, &store.QueueStatsParams{Tenant: "t07", Now: base}))
	})
	median("ConcurrencyKeys, every tenant", 5, func() error {
		return discard(s.ConcurrencyKeys(ctx, &store.ConcurrencyKeysParams{}))
	})
	median("ConcurrencyKeys, one tenant", 5, func() error {
		return discard(s.ConcurrencyKeys(ctx, &store.ConcurrencyKeysParams{Tenant: "t07"}))
	})
	median("ListRateLimits, every tenant", 5, func() error {
		return discard(s.ListRateLimits(ctx, &store.ListRateLimitsParams{}))
	})
	median("ListRateLimits, one tenant", 5, func() error {
		return discard(s.ListRateLimits(ctx, &store.ListRateLimitsParams{Tenant: "t07"}))
	})
	since := base.Add(-2 * time.Hour)
	median("Activity, every tenant (120 minutes)", 5, func() error {
		return discard(s.Activity(ctx, &store.ActivityParams{Since: since}))
	})
	median("Activity, one tenant", 5, func() error {
		return discard(s.Activity(ctx, &store.ActivityParams{Tenant: "t07", Since: since}))
	})
	median("Presence, every tenant", 5, func() error {
		return discard(s.Presence(ctx, &store.PresenceParams{Since: since}))
	})
	median("Presence, one tenant", 5, func() error {
		return discard(s.Presence(ctx, &store.PresenceParams{Tenant: "t07", Since: since}))
	})
	list := func(p store.ListParams) func() error {
		return func() error { return discard(s.List(ctx, &p)) }
	}
	median("List first page, every tenant", 5, list(store.ListParams{}))
	median("List first page, one tenant", 5, list(store.ListParams{Tenant: "t07"}))
	median("List first page, every tenant, queued", 5, list(store.ListParams{Status: store.StatusQueued}))
	median("List first page, one tenant, queued", 5, list(store.ListParams{Tenant: "t07", Status: store.StatusQueued}))
	median("List first page, every tenant, succeeded", 5, list(store.ListParams{Status: store.StatusSucceeded}))
	median("List first page, one tenant, succeeded", 5, list(store.ListParams{Tenant: "t07", Status: store.StatusSucceeded}))
	// The worst case of a filtered List: no execution matches, so it
	// reads every one (once, not 5 times).
	median("List first page, every tenant, failed (none)", 1, list(store.ListParams{Status: store.StatusFailed}))
	median("List first page, every tenant, kind=nope", 1, list(store.ListParams{Kind: "nope"}))
	median("List first page, one tenant, kind=nope", 5, list(store.ListParams{Tenant: "t07", Kind: "nope"}))
}
