package storetest

import (
	"context"
	"testing"

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
	b.Run("Contended/clients=64", func(b *testing.B) {
		s, tenant := setup(b)
		b.ResetTimer()
		r, err := storebench.Contended(ctx, s, tenant, max(b.N/64, 1), 64)
		report(b, r, err)
	})
}
