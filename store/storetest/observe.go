package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// tp is a valid W3C traceparent of the suite.
const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// testObserve covers what operators read (docs/console.md): the trace
// context and dedup hits an execution carries, queue statistics, server
// reports, activity minutes, and the rate limits and concurrency keys in
// use.
func testObserve(t *testing.T, ns NewStore) {
	t.Run("TraceParentKeptAndLeased", func(t *testing.T) {
		e := start(t, ns)
		sub := job("echo")
		sub.TraceParent = tp
		x := e.submit(acme, base, sub)
		if x.TraceParent != tp {
			t.Errorf("Admit answer TraceParent = %q, want %q", x.TraceParent, tp)
		}
		if got := e.get(x.ID).TraceParent; got != tp {
			t.Errorf("Get TraceParent = %q, want %q", got, tp)
		}
		if got := e.list(store.ListParams{Tenant: acme}); len(got) != 1 || got[0].TraceParent != tp {
			t.Errorf("List does not carry the TraceParent: %s", showItems(got))
		}
		if l := e.claimOne(acme, base); l.TraceParent != tp {
			t.Errorf("Lease TraceParent = %q, want %q", l.TraceParent, tp)
		}
		plain := e.submit(acme, base, job("echo"))
		if plain.TraceParent != "" || e.get(plain.ID).TraceParent != "" {
			t.Error("an execution submitted without a trace context has one")
		}
		if l := e.claimOne(acme, base); l.TraceParent != "" {
			t.Errorf("Lease of an execution without a trace context: TraceParent %q", l.TraceParent)
		}
	})

	t.Run("InvalidTraceParentRefused", func(t *testing.T) {
		e := start(t, ns)
		for _, bad := range []string{"00-0", "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
			"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", tp + " "} {
			sub := job("echo")
			sub.TraceParent = bad
			it := e.admitOne(acme, base, sub)
			wantErr(t, fmt.Sprintf("TraceParent %q", bad), it.Err, store.ErrInvalid)
		}
		e.wantInflight(acme, 0)
	})

	t.Run("DedupHitsCountEachHit", func(t *testing.T) {
		e := start(t, ns)
		sub := keyed("echo", "order-1", `{"n":1}`)
		first := e.submit(acme, base, sub)
		if first.DedupHits != 0 || first.LastDedupHitAt != nil {
			t.Errorf("a new execution has DedupHits %d, LastDedupHitAt %v", first.DedupHits, show(first.LastDedupHitAt))
		}
		for i := 1; i <= 3; i++ {
			now := at(time.Duration(i) * time.Minute)
			again := e.dedup(acme, now, sub, first.ID)
			if again.DedupHits != i {
				t.Errorf("hit %d answered DedupHits %d", i, again.DedupHits)
			}
			wantTimePtr(t, fmt.Sprint("hit ", i, " LastDedupHitAt"), again.LastDedupHitAt, now)
		}
		got := e.get(first.ID)
		if got.DedupHits != 3 {
			t.Errorf("Get DedupHits = %d, want 3", got.DedupHits)
		}
		wantTimePtr(t, "Get LastDedupHitAt", got.LastDedupHitAt, at(3*time.Minute))

		// A refused reuse is no hit.
		it := e.admitOne(acme, at(time.Hour), keyed("echo", "order-1", `{"n":2}`))
		wantErr(t, "reused key", it.Err, store.ErrDedupKeyReused)
		if got := e.get(first.ID); got.DedupHits != 3 {
			t.Errorf("a refused reuse counted a hit: DedupHits %d", got.DedupHits)
		}

		// In one batch, the second item with the key is a hit on the first.
		items := e.admit(acme, at(time.Hour), keyed("echo", "b", `{}`), keyed("echo", "b", `{}`))
		if !items[1].Deduplicated || items[1].Execution.DedupHits != 1 {
			t.Errorf("second item of a batch: Deduplicated %v, DedupHits %d, want a hit counted",
				items[1].Deduplicated, items[1].Execution.DedupHits)
		}
		if got := e.get(items[0].Execution.ID); got.DedupHits != 1 {
			t.Errorf("batch's execution DedupHits = %d, want 1", got.DedupHits)
		}
	})

	t.Run("DedupHitsExactUnderConcurrency", func(t *testing.T) {
		e := start(t, ns)
		const n = 32
		sub := keyed("echo", "hot", `{"x":1}`)
		res := make([]store.Admitted, n)
		errs := make([]error, n)
		together(n, func(i int) {
			r, err := e.s.Admit(e.ctx, &store.AdmitParams{Tenant: acme, Items: []store.Submission{sub}, Now: base})
			if err != nil {
				errs[i] = err
				return
			}
			res[i] = r.Items[0]
		})
		var id string
		var hits []int
		for i := range n {
			e.must(errs[i], "Admit")
			e.must(res[i].Err, "Admit item")
			if res[i].Deduplicated {
				hits = append(hits, res[i].Execution.DedupHits)
				continue
			}
			if id != "" {
				t.Fatalf("two executions for one key: %s and %s", id, res[i].Execution.ID)
			}
			id = res[i].Execution.ID
		}
		slices.Sort(hits)
		for i, h := range hits {
			if h != i+1 {
				t.Fatalf("the %d hits answered counts %v, want each of 1..%d once", len(hits), hits, n-1)
			}
		}
		if got := e.get(id).DedupHits; got != n-1 {
			t.Errorf("DedupHits = %d after %d concurrent submits, want %d", got, n, n-1)
		}
	})

	t.Run("ScheduleTriggerRepeatIsAHit", func(t *testing.T) {
		e := start(t, ns)
		e.putSchedule(sched("s", store.OverlapAllow), base)
		fire := func(now time.Time) *store.FireScheduleResult {
			res, err := e.s.FireSchedule(e.ctx, &store.FireScheduleParams{
				Tenant: acme, Name: "s", Tick: now, Trigger: true, IdempotencyKey: "req-1", Now: now})
			e.must(err, "FireSchedule")
			return res
		}
		first := fire(base)
		if first.Execution == nil || first.Deduplicated {
			t.Fatalf("first trigger: %+v", first)
		}
		again := fire(at(time.Second))
		if !again.Deduplicated || again.Execution.ID != first.Execution.ID || again.Execution.DedupHits != 1 {
			t.Fatalf("repeated trigger: Deduplicated %v onto %s with DedupHits %d, want a hit on %s",
				again.Deduplicated, again.Execution.ID, again.Execution.DedupHits, first.Execution.ID)
		}
		wantTimePtr(t, "LastDedupHitAt", e.get(first.Execution.ID).LastDedupHitAt, at(time.Second))
	})

	t.Run("QueueStats", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		if got := e.queueStats("", base); len(got) != 0 {
			t.Errorf("QueueStats of an empty store: %s", showItems(got))
		}
		e.run(acme, base, job("echo")) // running
		l := e.run(acme, at(time.Second), job("flow"))
		_, err := e.sleep(l, at(time.Second), "nap", at(time.Hour)) // suspended
		e.must(err, "Suspend")
		done := e.run(acme, at(2*time.Second), job("echo"))
		_, err = e.complete(done, at(3*time.Second), nil) // terminal: not counted
		e.must(err, "Complete")
		e.submit(acme, at(10*time.Second), job("echo"))
		e.submit(acme, at(20*time.Second), job("echo"))
		due := job("echo")
		due.RunAt = at(2 * time.Minute)
		e.submit(acme, at(30*time.Second), due) // scheduled, due at 5m
		later := job("echo")
		later.RunAt = at(time.Hour)
		e.submit(acme, at(30*time.Second), later) // scheduled
		mail := job("echo")
		mail.Queue = "mail"
		e.submit(acme, at(40*time.Second), mail)
		e.submit(globex, at(50*time.Second), job("echo"))

		now := at(5 * time.Minute)
		all := []*store.QueueStats{
			{Tenant: acme, Queue: store.DefaultQueue, Ready: 3, OldestReadyAt: ptr(at(10 * time.Second)),
				Scheduled: 1, Running: 1, Suspended: 1},
			{Tenant: acme, Queue: "mail", Ready: 1, OldestReadyAt: ptr(at(40 * time.Second))},
			{Tenant: globex, Queue: store.DefaultQueue, Ready: 1, OldestReadyAt: ptr(at(50 * time.Second))},
		}
		wantQueueStats(t, "every tenant", e.queueStats("", now), all)
		wantQueueStats(t, "acme", e.queueStats(acme, now), all[:2])
		wantQueueStats(t, "globex", e.queueStats(globex, now), all[2:])

		// Before the scheduled one is due it counts as scheduled.
		early := e.queueStats(acme, at(time.Minute))
		if len(early) == 0 || early[0].Ready != 2 || early[0].Scheduled != 2 {
			t.Errorf("at 1m acme/default: %s, want Ready 2 and Scheduled 2", showItems(early))
		}
		// A queue with nothing left in flight disappears.
		l = e.claim(store.ClaimParams{Tenant: globex, Now: now})[0]
		_, err = e.complete(l, now, nil)
		e.must(err, "Complete")
		wantQueueStats(t, "globex drained", e.queueStats(globex, now), nil)
	})

	t.Run("ServerReportsAndPresence", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		e.report(store.ServerReport{ID: "s1", Host: "host-a", Version: "v1", StartedAt: base.Add(-time.Hour), Now: base,
			Workers: []store.WorkerSeen{{ID: "w1", LastSeenAt: base}, {ID: "w2", Tenant: acme, LastSeenAt: base}}})
		e.report(store.ServerReport{ID: "s2", Host: "host-b", Version: "v1", StartedAt: base, Now: at(5 * time.Second),
			Workers: []store.WorkerSeen{{ID: "w1", Tenant: globex, LastSeenAt: at(5 * time.Second)}}})
		// A later report moves the server on; a worker's time never goes back.
		e.report(store.ServerReport{ID: "s1", Host: "host-a", Version: "v2", StartedAt: base.Add(-time.Hour), Now: at(10 * time.Second),
			Workers: []store.WorkerSeen{{ID: "w1", LastSeenAt: at(10 * time.Second)}, {ID: "w2", Tenant: acme, LastSeenAt: at(-time.Second)}}})

		p := e.presence("", at(-time.Hour))
		wantServers(t, "every server", p.Servers, []*store.Server{
			{ID: "s1", Host: "host-a", Version: "v2", StartedAt: base.Add(-time.Hour), LastSeenAt: at(10 * time.Second)},
			{ID: "s2", Host: "host-b", Version: "v1", StartedAt: base, LastSeenAt: at(5 * time.Second)},
		})
		wantWorkers(t, "every worker", p.Workers, []*store.WorkerSeen{
			{ID: "w1", ServerID: "s1", LastSeenAt: at(10 * time.Second)},
			{ID: "w2", Tenant: acme, ServerID: "s1", LastSeenAt: base},
			{ID: "w1", Tenant: globex, ServerID: "s2", LastSeenAt: at(5 * time.Second)},
		})
		p = e.presence(acme, at(-time.Hour))
		if p.Servers != nil {
			t.Errorf("a tenant's presence shows servers: %s", showItems(p.Servers))
		}
		wantWorkers(t, "acme's workers", p.Workers, []*store.WorkerSeen{{ID: "w2", Tenant: acme, ServerID: "s1", LastSeenAt: base}})
		p = e.presence("", at(7*time.Second))
		wantServers(t, "servers seen since 7s", p.Servers, []*store.Server{
			{ID: "s1", Host: "host-a", Version: "v2", StartedAt: base.Add(-time.Hour), LastSeenAt: at(10 * time.Second)}})
		wantWorkers(t, "workers seen since 7s", p.Workers, []*store.WorkerSeen{{ID: "w1", ServerID: "s1", LastSeenAt: at(10 * time.Second)}})

		// Prune forgets what was not seen for PresenceKept.
		e.prune(at(store.PresenceKept-time.Second), 0) // w2, the oldest, was seen at 0s
		if p := e.presence("", at(-time.Hour)); len(p.Servers) != 2 || len(p.Workers) != 3 {
			t.Errorf("Prune before PresenceKept forgot: %s %s", showItems(p.Servers), showItems(p.Workers))
		}
		e.prune(at(5*time.Second+store.PresenceKept+time.Second), 0)
		p = e.presence("", at(-time.Hour))
		wantServers(t, "after Prune", p.Servers, []*store.Server{
			{ID: "s1", Host: "host-a", Version: "v2", StartedAt: base.Add(-time.Hour), LastSeenAt: at(10 * time.Second)}})
		wantWorkers(t, "after Prune", p.Workers, []*store.WorkerSeen{{ID: "w1", ServerID: "s1", LastSeenAt: at(10 * time.Second)}})
	})

	t.Run("ActivityIsSummed", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		m0, m1 := base, at(time.Minute)
		e.report(store.ServerReport{ID: "s1", Now: at(10 * time.Second), Activity: []store.ActivityCount{
			{Tenant: acme, Minute: m0, Starts: 3, Failures: 1}, {Tenant: globex, Minute: m0, Starts: 2}}})
		e.report(store.ServerReport{ID: "s2", Now: at(70 * time.Second), Activity: []store.ActivityCount{
			{Tenant: acme, Minute: m0, Starts: 1}, {Tenant: acme, Minute: m1, Starts: 4, Failures: 2}}})
		e.report(store.ServerReport{ID: "s1", Now: at(75 * time.Second), Activity: []store.ActivityCount{
			{Tenant: acme, Minute: m0, Starts: 2}}})

		wantActivity(t, "every tenant", e.activity("", at(-time.Hour)),
			[]*store.ActivityMinute{{Minute: m0, Starts: 8, Failures: 1}, {Minute: m1, Starts: 4, Failures: 2}})
		wantActivity(t, "acme", e.activity(acme, at(-time.Hour)),
			[]*store.ActivityMinute{{Minute: m0, Starts: 6, Failures: 1}, {Minute: m1, Starts: 4, Failures: 2}})
		wantActivity(t, "globex", e.activity(globex, at(-time.Hour)), []*store.ActivityMinute{{Minute: m0, Starts: 2}})
		wantActivity(t, "since m1", e.activity("", m1), []*store.ActivityMinute{{Minute: m1, Starts: 4, Failures: 2}})

		e.prune(m0.Add(store.ActivityKept-time.Second), 0)
		if got := e.activity("", at(-time.Hour)); len(got) != 2 {
			t.Errorf("Prune before ActivityKept dropped minutes: %s", showItems(got))
		}
		e.prune(m0.Add(store.ActivityKept+time.Second), 0)
		wantActivity(t, "after Prune", e.activity("", at(-time.Hour)),
			[]*store.ActivityMinute{{Minute: m1, Starts: 4, Failures: 2}})
	})

	t.Run("DeleteTenantTakesItsWorkersAndActivity", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		e.report(store.ServerReport{ID: "s1", Now: base,
			Workers:  []store.WorkerSeen{{ID: "wa", Tenant: acme, LastSeenAt: base}, {ID: "wg", Tenant: globex, LastSeenAt: base}},
			Activity: []store.ActivityCount{{Tenant: acme, Minute: base, Starts: 5}, {Tenant: globex, Minute: base, Starts: 1}}})
		e.must(e.s.DeleteTenant(e.ctx, &store.DeleteTenantParams{Name: acme, Now: base}), "DeleteTenant")
		wantWorkers(t, "after DeleteTenant", e.presence("", at(-time.Hour)).Workers,
			[]*store.WorkerSeen{{ID: "wg", Tenant: globex, ServerID: "s1", LastSeenAt: base}})
		wantActivity(t, "after DeleteTenant", e.activity("", at(-time.Hour)), []*store.ActivityMinute{{Minute: base, Starts: 1}})
		e.createTenant(store.CreateTenantParams{Name: acme})
		if got := e.activity(acme, at(-time.Hour)); len(got) != 0 {
			t.Errorf("a tenant created again under the name inherits activity: %s", showItems(got))
		}
	})

	// A server's report may be written after its tenant was deleted (it
	// was pending when the delete ran), even after a tenant of the same
	// name was created: it records nothing for a tenant that does not
	// exist, and no worker seen before the tenant's creation (its
	// generation), while the new tenant's own reports count.
	t.Run("LateReportDoesNotReachTheNextTenantOfTheName", func(t *testing.T) {
		e := start(t, ns)
		e.report(store.ServerReport{ID: "s1", Now: at(10 * time.Second),
			Workers:  []store.WorkerSeen{{ID: "old-worker", Tenant: acme, LastSeenAt: at(10 * time.Second)}},
			Activity: []store.ActivityCount{{Tenant: acme, Minute: base, Starts: 2}}})
		e.must(e.s.DeleteTenant(e.ctx, &store.DeleteTenantParams{Name: acme, Force: true, Now: at(30 * time.Second)}), "DeleteTenant")
		pending := store.ServerReport{ID: "s1", Now: at(40 * time.Second),
			Workers:  []store.WorkerSeen{{ID: "old-worker", Tenant: acme, LastSeenAt: at(25 * time.Second)}},
			Activity: []store.ActivityCount{{Tenant: acme, Minute: base, Starts: 1, Failures: 1}}}
		e.report(pending) // after the delete
		e.createTenant(store.CreateTenantParams{Name: acme, Now: at(3 * time.Minute)})
		pending.Now, pending.Activity = at(3*time.Minute+time.Second), nil
		e.report(pending) // its workers, after the next tenant of the name was created
		if got := e.presence(acme, at(-time.Hour)).Workers; len(got) != 0 {
			t.Errorf("the new acme shows the old one's workers: %s", showItems(got))
		}
		if got := e.activity(acme, at(-time.Hour)); len(got) != 0 {
			t.Errorf("the new acme shows the old one's activity: %s", showItems(got))
		}
		now := at(4 * time.Minute)
		e.report(store.ServerReport{ID: "s1", Now: now,
			Workers:  []store.WorkerSeen{{ID: "new-worker", Tenant: acme, LastSeenAt: now}},
			Activity: []store.ActivityCount{{Tenant: acme, Minute: at(3 * time.Minute), Starts: 1}}})
		wantWorkers(t, "the new acme's workers", e.presence(acme, at(-time.Hour)).Workers,
			[]*store.WorkerSeen{{ID: "new-worker", Tenant: acme, ServerID: "s1", LastSeenAt: now}})
		wantActivity(t, "the new acme's activity", e.activity(acme, at(-time.Hour)),
			[]*store.ActivityMinute{{Minute: at(3 * time.Minute), Starts: 1}})
	})

	t.Run("ListRateLimits", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		if got := e.listRateLimits(""); len(got) != 0 {
			t.Errorf("no limits yet, listed %s", showItems(got))
		}
		for _, l := range []store.RateLimit{
			{Tenant: globex, Key: "k1", Rate: 5, Per: time.Second, Burst: 1},
			{Tenant: acme, Key: "k2", Rate: 1, Per: time.Minute, Burst: 3},
			{Tenant: acme, Key: "k1", Rate: 2, Per: time.Second, Burst: 1},
		} {
			_, err := e.s.PutRateLimit(e.ctx, &store.PutRateLimitParams{Limit: l, Now: base})
			e.must(err, "PutRateLimit")
		}
		names := func(ls []*store.RateLimit) (out []string) {
			for _, l := range ls {
				out = append(out, fmt.Sprintf("%s/%s %d/%s/%d", l.Tenant, l.Key, l.Rate, l.Per, l.Burst))
			}
			return out
		}
		if got, want := names(e.listRateLimits("")), []string{"acme/k1 2/1s/1", "acme/k2 1/1m0s/3", "globex/k1 5/1s/1"}; !slices.Equal(got, want) {
			t.Errorf("ListRateLimits = %v, want %v", got, want)
		}
		if got, want := names(e.listRateLimits(globex)), []string{"globex/k1 5/1s/1"}; !slices.Equal(got, want) {
			t.Errorf("ListRateLimits globex = %v, want %v", got, want)
		}
	})

	t.Run("ConcurrencyKeysInUse", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		withKey := func(key string, limit int) store.Submission {
			s := job("echo")
			s.ConcurrencyKey, s.ConcurrencyLimit = key, limit
			return s
		}
		e.submit(acme, base, withKey("c", 2))
		e.submit(acme, base, withKey("c", 2))
		e.submit(acme, base, withKey("d", 1))
		e.submit(globex, base, withKey("c", 3))
		acmeLeases := e.claim(store.ClaimParams{Tenant: acme, Max: 10, Now: base})
		if len(acmeLeases) != 3 {
			t.Fatalf("claimed %d of acme's, want 3", len(acmeLeases))
		}
		e.claimOne(globex, base)
		e.submit(acme, base, withKey("d", 1)) // held back by d
		e.claimNone(acme, base)
		e.submit(acme, base, withKey("e", 1)) // queued, not running: not in use

		want := []*store.ConcurrencyKeyUse{
			{Tenant: acme, Key: "c", Running: 2, Limit: 2},
			{Tenant: acme, Key: "d", Running: 1, Limit: 1},
			{Tenant: globex, Key: "c", Running: 1, Limit: 3},
		}
		wantKeys(t, "every tenant", e.concurrencyKeys(""), want)
		wantKeys(t, "globex", e.concurrencyKeys(globex), want[2:])
		for _, l := range acmeLeases {
			_, err := e.complete(l, at(time.Second), nil)
			e.must(err, "Complete")
		}
		wantKeys(t, "after acme's completes", e.concurrencyKeys(acme), nil)
	})

	t.Run("ClaimCountsRateLimitDeferrals", func(t *testing.T) {
		e := start(t, ns)
		_, err := e.s.PutRateLimit(e.ctx, &store.PutRateLimitParams{
			Limit: store.RateLimit{Tenant: acme, Key: "r", Rate: 1, Per: time.Minute, Burst: 1}, Now: base})
		e.must(err, "PutRateLimit")
		for range 3 {
			s := job("echo")
			s.RateKey = "r"
			e.submit(acme, base, s)
		}
		res, err := e.s.Claim(e.ctx, &store.ClaimParams{WorkerID: "w", Tenant: acme, Max: 10, LeaseDuration: leaseFor, Now: base})
		e.must(err, "Claim")
		if len(res.Leases) != 1 || res.Deferred != 2 {
			t.Errorf("Claim: %d leases, Deferred %d; want 1 lease and 2 deferred", len(res.Leases), res.Deferred)
		}
		res, err = e.s.Claim(e.ctx, &store.ClaimParams{WorkerID: "w", Tenant: acme, Max: 10, LeaseDuration: leaseFor, Now: base})
		e.must(err, "Claim")
		if len(res.Leases) != 0 || res.Deferred != 0 {
			t.Errorf("Claim again: %d leases, Deferred %d; want none (the deferred wait for their turn)", len(res.Leases), res.Deferred)
		}
	})
}
