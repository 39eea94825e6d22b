package redis_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
)

// TestRouterWorkload measures a multi-tenant submit and drain through the
// tenant router on the cluster named by LATCH_SHARD_WORKLOAD_URL (a
// cluster of the measurer's own: it is not the test cluster, and the test
// is skipped without it): 16 tenants, each with a submitter admitting
// LATCH_SHARD_WORKLOAD_N (default 1000) executions one at a time, then 16
// workers claiming (Max 8, every tenant) and completing until all are
// done. It logs each phase's throughput and each primary's Redis CPU
// (INFO cpu, used_cpu_sys + used_cpu_user) per operation.
// LATCH_SHARD_WORKLOAD_SINGLE=1 runs it on the single-slot layout instead.
func TestRouterWorkload(t *testing.T) {
	url := os.Getenv("LATCH_SHARD_WORKLOAD_URL")
	if url == "" {
		t.Skip("SKIP: set LATCH_SHARD_WORKLOAD_URL to a cluster of your own to measure")
	}
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("LATCH_SHARD_WORKLOAD_N")); err == nil && v > 0 {
		n = v
	}
	const tenants, workers = 16, 16
	ctx := context.Background()
	prefix := testdb.Name("wl")
	// LATCH_SHARD_WORKLOAD_SINGLE=1: the single-slot layout (layout=single),
	// for the router's own cost.
	var r store.Store
	if os.Getenv("LATCH_SHARD_WORKLOAD_SINGLE") != "" {
		r = open(t, url, prefix)
	} else {
		r = openRouter(t, url, prefix)
	}
	defer r.Close()
	cc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: clusterAddrs(t, url)})
	defer cc.Close()
	defer func() { // remove the namespace's keys
		_ = cc.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error {
			iter := c.Scan(ctx, 0, "*"+prefix+"*", 1000).Iterator()
			for iter.Next(ctx) {
				c.Unlink(ctx, iter.Val())
			}
			return iter.Err()
		})
	}()
	for i := range tenants {
		if _, err := r.CreateTenant(ctx, &store.CreateTenantParams{Name: fmt.Sprintf("t%02d", i), MaxInflight: n + 1}); err != nil {
			t.Fatal(err)
		}
	}
	cpu := func() map[string]float64 {
		m := map[string]float64{}
		var mu sync.Mutex
		_ = cc.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error {
			info, err := c.Info(ctx, "cpu").Result()
			if err != nil {
				return err
			}
			var s float64
			for _, line := range strings.Split(info, "\n") {
				k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
				if ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
					f, _ := strconv.ParseFloat(v, 64)
					s += f
				}
			}
			mu.Lock()
			m[c.Options().Addr] = s
			mu.Unlock()
			return nil
		})
		return m
	}
	report := func(phase string, ops int, took time.Duration, before, after map[string]float64) {
		var parts []string
		total := 0.0
		for addr, a := range after {
			d := a - before[addr]
			total += d
			parts = append(parts, fmt.Sprintf("%s %.1f µs/op", addr, d/float64(ops)*1e6))
		}
		t.Logf("%s: %d ops in %v = %.0f ops/s; Redis CPU %.1f µs/op in all (%s)", phase, ops, took.Round(time.Millisecond),
			float64(ops)/took.Seconds(), total/float64(ops)*1e6, strings.Join(parts, ", "))
	}

	before, start := cpu(), time.Now()
	var wg sync.WaitGroup
	for i := range tenants {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				res, err := r.Admit(ctx, &store.AdmitParams{Tenant: fmt.Sprintf("t%02d", i), Items: []store.Submission{{Kind: "k"}}})
				if err != nil || res.Items[0].Err != nil {
					t.Errorf("admit: %v %v", err, res)
					return
				}
			}
		}()
	}
	wg.Wait()
	report("submit", tenants*n, time.Since(start), before, cpu())

	before, start = cpu(), time.Now()
	var done atomic.Int64
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done.Load() < int64(tenants*n) {
				res, err := r.Claim(ctx, &store.ClaimParams{WorkerID: fmt.Sprint("w", w), Max: 8, LeaseDuration: time.Minute})
				if err != nil {
					t.Errorf("claim: %v", err)
					return
				}
				for _, l := range res.Leases {
					if _, err := r.Complete(ctx, &store.CompleteParams{ExecutionID: l.ExecutionID, Tenant: l.Tenant, Token: l.Token}); err != nil {
						t.Errorf("complete: %v", err)
						return
					}
					done.Add(1)
				}
				if len(res.Leases) == 0 {
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	report("drain (claim+complete per execution)", tenants*n, time.Since(start), before, cpu())
}
