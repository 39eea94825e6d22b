// Package storebench holds the workloads latch measures every backend with:
// submits one at a time and from concurrent clients, batch submits, draining
// with many claiming slots, and contended same-key submits. `go test -bench`
// in each backend (through storetest.Benchmarks) and `latch bench` run the
// same workloads, so the figures in docs/benchmarks.md come from one
// definition. It calls nothing but the store.Store interface: the workloads
// that run latch's worker are engine/enginebench's.
package storebench

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/latch-run/latch/store"
)

// Result is one workload's outcome.
type Result struct {
	Name      string
	Ops       int           // operations completed (executions submitted or run)
	Steps     int           // flow steps recorded (the Flow workload)
	Elapsed   time.Duration // wall time of the whole workload
	Latencies []time.Duration
}

// PerSecond is the throughput.
func (r *Result) PerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Elapsed.Seconds()
}

// StepsPerSecond is the flow steps recorded per second.
func (r *Result) StepsPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Steps) / r.Elapsed.Seconds()
}

// Percentile returns the q-th latency percentile (0 < q <= 1), 0 without samples.
func (r *Result) Percentile(q float64) time.Duration {
	if len(r.Latencies) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), r.Latencies...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func (r *Result) String() string {
	s := fmt.Sprintf("%-34s %8d ops in %8.3fs  %10.0f ops/s", r.Name, r.Ops, r.Elapsed.Seconds(), r.PerSecond())
	if r.Steps > 0 {
		s += fmt.Sprintf("  %8.0f steps/s", r.StepsPerSecond())
	}
	if len(r.Latencies) > 0 {
		s += fmt.Sprintf("  p50 %-9v p99 %v", r.Percentile(0.5).Round(time.Microsecond), r.Percentile(0.99).Round(time.Microsecond))
	}
	return s
}

// Setup creates a tenant large enough for n executions and returns its name.
func Setup(ctx context.Context, s store.Store, n int) (string, error) {
	name := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	_, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: name, MaxInflight: max(n*2, 1)})
	return name, err
}

var payload = []byte(`{"url":"https://example.com/hook","n":1}`)

// Submit admits n executions, each with its own dedup key, from clients
// concurrent clients one at a time.
func Submit(ctx context.Context, s store.Store, tenant string, n, clients int) (*Result, error) {
	res := &Result{Name: fmt.Sprintf("submit/clients=%d", clients), Latencies: make([]time.Duration, n)}
	var next atomic.Int64
	prefix := fmt.Sprintf("k%d-", time.Now().UnixNano())
	err := fanOut(clients, func() error {
		for {
			i := int(next.Add(1)) - 1
			if i >= n {
				return nil
			}
			t0 := time.Now()
			r, err := s.Admit(ctx, &store.AdmitParams{Tenant: tenant, Items: []store.Submission{{
				Kind: "bench", Payload: payload, DedupKey: fmt.Sprint(prefix, i)}}})
			if err != nil {
				return err
			}
			if err := r.Items[0].Err; err != nil {
				return err
			}
			res.Latencies[i] = time.Since(t0)
		}
	}, &res.Elapsed)
	res.Ops = n
	return res, err
}

// SubmitBatch admits n executions in batches of size.
func SubmitBatch(ctx context.Context, s store.Store, tenant string, n, size int) (*Result, error) {
	res := &Result{Name: fmt.Sprintf("submit-batch/size=%d", size)}
	t0 := time.Now()
	for done := 0; done < n; done += size {
		items := make([]store.Submission, min(size, n-done))
		for i := range items {
			items[i] = store.Submission{Kind: "bench", Payload: payload}
		}
		r, err := s.Admit(ctx, &store.AdmitParams{Tenant: tenant, Items: items})
		if err != nil {
			return nil, err
		}
		for _, it := range r.Items {
			if it.Err != nil {
				return nil, it.Err
			}
		}
		res.Ops += len(items)
	}
	res.Elapsed = time.Since(t0)
	return res, nil
}

// Drain claims and completes every ready execution of the store with slots
// concurrent workers claiming up to batch at a time, until none is left.
// Latencies holds every Complete's latency.
func Drain(ctx context.Context, s store.Store, slots, batch int) (*Result, error) {
	res := &Result{Name: fmt.Sprintf("drain/slots=%d", slots)}
	var done atomic.Int64
	lat := make([][]time.Duration, slots)
	err := fanOutN(slots, func(w int) error {
		for {
			c, err := s.Claim(ctx, &store.ClaimParams{WorkerID: "bench", Max: batch, LeaseDuration: time.Minute})
			if err != nil {
				return err
			}
			if len(c.Leases) == 0 {
				return nil
			}
			for _, l := range c.Leases {
				t0 := time.Now()
				if _, err := s.Complete(ctx, &store.CompleteParams{ExecutionID: l.ExecutionID, Token: l.Token}); err != nil {
					return err
				}
				lat[w] = append(lat[w], time.Since(t0))
				done.Add(1)
			}
		}
	}, &res.Elapsed)
	res.Ops = int(done.Load())
	for _, l := range lat {
		res.Latencies = append(res.Latencies, l...)
	}
	return res, err
}

// Contended sends rounds of clients concurrent submits that share one dedup
// key per round and records each submit's latency. Every submit of a round
// must get the same execution id.
func Contended(ctx context.Context, s store.Store, tenant string, rounds, clients int) (*Result, error) {
	res := &Result{Name: fmt.Sprintf("contended-same-key/clients=%d", clients)}
	var mu sync.Mutex
	t0 := time.Now()
	for r := 0; r < rounds; r++ {
		key := fmt.Sprintf("contended-%d-%d", time.Now().UnixNano(), r)
		ids := make([]string, clients)
		var el time.Duration
		err := fanOutN(clients, func(i int) error {
			t := time.Now()
			a, err := s.Admit(ctx, &store.AdmitParams{Tenant: tenant, Items: []store.Submission{{
				Kind: "bench", Payload: payload, DedupKey: key}}})
			if err != nil {
				return err
			}
			if a.Items[0].Err != nil {
				return a.Items[0].Err
			}
			d := time.Since(t)
			mu.Lock()
			res.Latencies = append(res.Latencies, d)
			mu.Unlock()
			ids[i] = a.Items[0].Execution.ID
			return nil
		}, &el)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			if id != ids[0] {
				return nil, fmt.Errorf("round %d: one dedup key gave two ids %s and %s", r, ids[0], id)
			}
		}
		res.Ops += clients
	}
	res.Elapsed = time.Since(t0)
	return res, nil
}

func fanOut(n int, fn func() error, elapsed *time.Duration) error {
	return fanOutN(n, func(int) error { return fn() }, elapsed)
}

func fanOutN(n int, fn func(i int) error, elapsed *time.Duration) error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	t0 := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(i)
		}()
	}
	wg.Wait()
	*elapsed = time.Since(t0)
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
