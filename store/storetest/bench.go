package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/storebench"
)

// Benchmarks runs store/storebench's workloads as Go benchmarks on stores
// made by open; a backend's bench test calls it. Each reports ops/s besides ns/op.
func Benchmarks(b *testing.B, open func(b *testing.B) store.Store) {
	ctx := context.Background()
	setup := func(b *testing.B) (store.Store, string) {
		s := open(b)
		tenant, err := storebench.Setup(ctx, s, b.N*64+1000)
		if err != nil {
			b.Fatal(err)
		}
		return s, tenant
	}
	report := func(b *testing.B, r *storebench.Result, err error) {
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(r.PerSecond(), "ops/s")
		if r.Steps > 0 {
			b.ReportMetric(r.StepsPerSecond(), "steps/s")
		}
		if len(r.Latencies) > 0 {
			b.ReportMetric(float64(r.Percentile(0.5).Microseconds()), "p50-µs")
			b.ReportMetric(float64(r.Percentile(0.99).Microseconds()), "p99-µs")
		}
	}
	for _, clients := range []int{1, 16} {
		b.Run(map[int]string{1: "Submit/sequential", 16: "Submit/clients=16"}[clients], func(b *testing.B) {
			s, tenant := setup(b)
			b.ResetTimer()
			r, err := storebench.Submit(ctx, s, tenant, b.N, clients)
			report(b, r, err)
		})
	}
	b.Run("SubmitBatch/size=100", func(b *testing.B) {
		s, tenant := setup(b)
		b.ResetTimer()
		r, err := storebench.SubmitBatch(ctx, s, tenant, b.N, 100)
		report(b, r, err)
	})
	b.Run("Drain/slots=16", func(b *testing.B) {
		s, tenant := setup(b)
		if _, err := storebench.SubmitBatch(ctx, s, tenant, b.N, 500); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		r, err := storebench.Drain(ctx, s, 16, 10)
		if err == nil && r.Ops != b.N {
			b.Fatalf("drained %d of %d", r.Ops, b.N)
		}
		report(b, r, err)
	})
	b.Run("Flow/slots=16", func(b *testing.B) {
		s, tenant := setup(b)
		b.ResetTimer()
		r, err := storebench.Flow(ctx, s, tenant, b.N, 16, 10)
		if err == nil && r.Ops != b.N {
			b.Fatalf("ran %d of %d flows", r.Ops, b.N)
		}
		report(b, r, err)
	})
	b.Run(fmt.Sprintf("FanOut/children=%d", store.MaxSpawnItems), func(b *testing.B) {
		s, tenant := setup(b)
		fanOut(b, s, tenant, store.MaxSpawnItems)
	})
	for _, backlog := range []int{0, backlogKinds} {
		b.Run(fmt.Sprintf("ClaimKindBacklog/backlog=%d", backlog), func(b *testing.B) {
			s, tenant := setup(b)
			claimKindBacklog(b, s, tenant, backlog)
		})
	}
	b.Run("Contended/clients=64", func(b *testing.B) {
		s, tenant := setup(b)
		b.ResetTimer()
		r, err := storebench.Contended(ctx, s, tenant, max(b.N/64, 1), 64)
		report(b, r, err)
	})
}

// claimKindBacklog: another tenant holds backlog ready executions of a
// kind no worker handles; each op submits one echo, claims it as an
// in-process worker does (filtered to its kinds) and completes it.
// claim-p50-µs is the claim's median; examined/op, for a store that counts
// (ClaimExaminer), the ready-index entries each claim read.
func claimKindBacklog(b *testing.B, s store.Store, tenant string, backlog int) {
	ctx := context.Background()
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "backlog"}); err != nil {
		b.Fatal(err)
	}
	for done := 0; done < backlog; done += 500 {
		items := make([]store.Submission, min(500, backlog-done))
		for i := range items {
			items[i] = store.Submission{Kind: "nobody", Priority: 9}
		}
		if _, err := s.Admit(ctx, &store.AdmitParams{Tenant: "backlog", Items: items}); err != nil {
			b.Fatal(err)
		}
	}
	ex, counts := s.(ClaimExaminer)
	var before int64
	if counts {
		before = ex.ClaimExamined()
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		if _, err := s.Admit(ctx, &store.AdmitParams{Tenant: tenant, Items: []store.Submission{{Kind: "echo"}}}); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		c, err := s.Claim(ctx, &store.ClaimParams{WorkerID: "bench", Kinds: []string{"echo", "sleep", "http"}, Max: 1,
			LeaseDuration: time.Minute})
		lat = append(lat, time.Since(t0))
		if err != nil || len(c.Leases) != 1 {
			b.Fatalf("claim: %v, %v", c, err)
		}
		l := c.Leases[0]
		if _, err := s.Complete(ctx, &store.CompleteParams{ExecutionID: l.ExecutionID, Token: l.Token}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "claim-p50-µs")
	if counts {
		b.ReportMetric(float64(ex.ClaimExamined()-before)/float64(b.N), "examined/op")
	}
}

// fanOut: each op is one parent spawning n children and waiting for all of
// them, 16 workers claiming 10 at a time (storebench.FanOut). ns/op is
// spawn to resumed parent; spawn-ms the Spawn call; drain-ms the children's
// claims and completes up to the last child's end; children/s n over
// the whole fan-out.
func fanOut(b *testing.B, s store.Store, tenant string, n int) {
	var spawn, drain, total time.Duration
	b.ResetTimer()
	for range b.N {
		ft, err := storebench.FanOut(context.Background(), s, tenant, n, 16, 10)
		if err != nil {
			b.Fatal(err)
		}
		spawn += ft.Spawn
		drain += ft.Drain
		total += ft.Total
	}
	b.StopTimer()
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(per(spawn), "spawn-ms")
	b.ReportMetric(per(drain), "drain-ms")
	b.ReportMetric(float64(n*b.N)/total.Seconds(), "children/s")
}
