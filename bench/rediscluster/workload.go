package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/latch-run/latch/engine"
	"github.com/latch-run/latch/engine/enginebench"
	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/redis"
	goredis "github.com/redis/go-redis/v9"
)

// config is the workload's size.
type config struct {
	Tenants int           `json:"tenants"`
	N       int           `json:"n"`
	Clients int           `json:"clients"`
	Slots   int           `json:"slots"`
	Layout  string        `json:"layout"` // "tenant" (a slot per tenant, the default) or "single" (one slot)
	Timeout time.Duration `json:"-"`      // per phase
}

// phaseResult is one phase of one round on one cluster.
type phaseResult struct {
	Cluster    string       `json:"cluster"`
	Primaries  int          `json:"primaries"`
	Round      int          `json:"round"`
	Phase      string       `json:"phase"` // submit or drain
	Ops        int          `json:"ops"`
	Seconds    float64      `json:"seconds"`
	PerSecond  float64      `json:"per_second"`
	P50US      float64      `json:"p50_us,omitempty"` // submit latency
	P99US      float64      `json:"p99_us,omitempty"`
	CPUPerOpUS float64      `json:"redis_cpu_us_per_op"` // summed over the primaries
	Nodes      []nodeResult `json:"nodes"`
}

// nodeResult is one primary's share of a phase.
type nodeResult struct {
	Addr       string  `json:"addr"`
	Slots      int     `json:"slots"`
	CPUSeconds float64 `json:"cpu_seconds"`
	CPUPerOpUS float64 `json:"cpu_us_per_op"`
	CPUShare   float64 `json:"cpu_share"`
	Calls      int64   `json:"calls"`
	CallsShare float64 `json:"calls_share"`
	KeysAdded  int64   `json:"keys_added"`
	Keys       int64   `json:"keys"` // after the phase

	keysTotal int64 // the cluster's keys after the phase (report.go, ranked)
}

// round runs the workload once on c under a fresh prefix: T tenants, then
// the submit phase (N one-item Admits from Clients goroutines, round-robin
// over the tenants, each with its own dedup key), then the drain phase (one
// engine.Worker of Slots slots claiming for every tenant until the store has
// acknowledged N Completes). Around each phase it reads INFO of every
// primary. Then it checks that each submitted execution was started once
// and is succeeded under its tenant, and deletes the prefix's keys.
func round(ctx context.Context, c *cluster, cfg config, n int, log io.Writer) (_ []phaseResult, err error) {
	if cfg.Tenants < 1 || cfg.N < 1 || cfg.Clients < 1 || cfg.Slots < 1 {
		return nil, errors.New("tenants, n, clients and slots must be at least 1")
	}
	prefix := fmt.Sprintf("latchbench-%d", time.Now().UnixNano())
	q := url.Values{"prefix": {prefix}}
	if cfg.Layout != "" {
		q.Set("layout", cfg.Layout)
	}
	st, err := redis.OpenStore(ctx, "redis-cluster://"+strings.Join(c.seeds, ",")+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	defer st.Close()
	defer func() {
		t0 := time.Now()
		if err2 := deleteKeys(context.WithoutCancel(ctx), c.primaries, prefix); err == nil {
			err = err2
		}
		fmt.Fprintf(log, " (keys deleted in %.1fs)", time.Since(t0).Seconds())
	}()
	pr := newProbe(c.primaries)
	defer pr.close()

	tenants := make([]string, cfg.Tenants)
	for i := range tenants {
		tenants[i] = fmt.Sprintf("tenant-%02d", i)
		if _, err := st.CreateTenant(ctx, &store.CreateTenantParams{Name: tenants[i], MaxInflight: cfg.N}); err != nil {
			return nil, fmt.Errorf("create tenant %s: %w", tenants[i], err)
		}
	}
	kind := "bench"
	res := func(phase string, ops int, el time.Duration, before, after []nodeStats) phaseResult {
		nodes, cpu := phaseNodes(c.primaries, before, after, ops)
		return phaseResult{Cluster: c.name, Primaries: len(c.primaries), Round: n, Phase: phase, Ops: ops,
			Seconds: el.Seconds(), PerSecond: float64(ops) / el.Seconds(), CPUPerOpUS: cpu, Nodes: nodes}
	}

	before, err := pr.read(ctx)
	if err != nil {
		return nil, err
	}
	ids, lat, el, err := submit(ctx, st, tenants, kind, cfg)
	if err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	after, err := pr.read(ctx)
	if err != nil {
		return nil, err
	}
	sub := res("submit", cfg.N, el, before, after)
	sub.P50US, sub.P99US = percentileUS(lat, 0.5), percentileUS(lat, 0.99)

	before = after
	starts, el, err := drain(ctx, st, kind, ids, cfg)
	if err != nil {
		return nil, fmt.Errorf("drain: %w", err)
	}
	if after, err = pr.read(ctx); err != nil {
		return nil, err
	}
	dr := res("drain", cfg.N, el, before, after)
	t0 := time.Now()
	if err := verify(ctx, st, tenants, kind, ids, starts); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, " (checked in %.1fs)", time.Since(t0).Seconds())
	return []phaseResult{sub, dr}, nil
}

// submit admits cfg.N executions one Admit each from cfg.Clients
// goroutines, execution i for tenant i mod T with dedup key k-i and payload
// {"i":i}, and returns their ids, each submit's latency and the phase's
// wall time.
func submit(ctx context.Context, st store.Store, tenants []string, kind string, cfg config) ([]string, []time.Duration, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	ids := make([]string, cfg.N)
	lat := make([]time.Duration, cfg.N)
	var next atomic.Int64
	errs := make(chan error, cfg.Clients)
	var wg sync.WaitGroup
	t0 := time.Now()
	for range cfg.Clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= cfg.N {
					return
				}
				t := time.Now()
				r, err := st.Admit(ctx, &store.AdmitParams{Tenant: tenants[i%len(tenants)], Items: []store.Submission{{
					Kind: kind, Payload: fmt.Appendf(nil, `{"i":%d}`, i), DedupKey: fmt.Sprint("k-", i)}}})
				if err == nil {
					err = r.Items[0].Err
				}
				if err != nil {
					errs <- fmt.Errorf("execution %d: %w", i, err)
					cancel()
					return
				}
				lat[i] = time.Since(t)
				ids[i] = r.Items[0].Execution.ID
			}
		})
	}
	wg.Wait()
	el := time.Since(t0)
	close(errs)
	if err := <-errs; err != nil {
		return nil, nil, 0, err
	}
	return ids, lat, el, nil
}

// drain runs one engine.Worker with cfg.Slots slots and a handler that
// notes which execution it started, from its start until the store has
// acknowledged len(ids) Completes, and returns how often each execution
// was started and that time.
func drain(ctx context.Context, st store.Store, kind string, ids []string, cfg config) ([]atomic.Int32, time.Duration, error) {
	starts := make([]atomic.Int32, len(ids))
	var wrong atomic.Value // the first start that does not match its submit
	cs := enginebench.NewCompletions(len(ids))
	w := engine.NewWorker(engine.WorkerConfig{
		Store:    cs.Wrap(st),
		WorkerID: "bench",
		Slots:    cfg.Slots,
		Logger:   slog.New(slog.DiscardHandler),
	})
	w.Handle(kind, func(_ context.Context, j *engine.Job) (json.RawMessage, error) {
		var p struct{ I int }
		if err := json.Unmarshal(j.Payload, &p); err != nil || p.I < 0 || p.I >= len(ids) || ids[p.I] != j.ID {
			wrong.CompareAndSwap(nil, fmt.Sprintf("execution %s with payload %s", j.ID, j.Payload))
			return nil, engine.Permanent(errors.New("not an execution this run submitted"))
		}
		starts[p.I].Add(1)
		return nil, nil
	})
	t0 := time.Now()
	if err := w.Start(ctx); err != nil {
		return nil, 0, err
	}
	err := cs.Wait(ctx, cfg.Timeout)
	var el time.Duration
	if err == nil {
		el = cs.At().Sub(t0)
	}
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer scancel()
	if err2 := w.Stop(sctx); err == nil {
		err = err2
	}
	if s, _ := wrong.Load().(string); err == nil && s != "" {
		err = errors.New("the worker started " + s)
	}
	return starts, el, err
}

// verify checks that every execution the run submitted was started exactly
// once and is succeeded, listed under its own tenant, and that no tenant
// lists another succeeded execution of kind.
func verify(ctx context.Context, st store.Store, tenants []string, kind string, ids []string, starts []atomic.Int32) error {
	for i := range starts {
		if n := starts[i].Load(); n != 1 {
			return fmt.Errorf("execution %d (%s) was started %d times, want once", i, ids[i], n)
		}
	}
	for t, name := range tenants {
		var want []string
		for i := t; i < len(ids); i += len(tenants) {
			want = append(want, ids[i])
		}
		var got []string
		for after := ""; ; {
			page, err := st.List(ctx, &store.ListParams{Tenant: name, Kind: kind, Status: store.StatusSucceeded,
				Limit: store.MaxListLimit, After: after})
			if err != nil {
				return err
			}
			for _, e := range page.Items {
				got = append(got, e.ID)
			}
			if page.Next == "" {
				break
			}
			after = page.Next
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			return fmt.Errorf("tenant %s lists %d succeeded executions, want its %d submitted ones", name, len(got), len(want))
		}
	}
	return nil
}

// deleteKeys deletes every key of the prefix from each primary (SCAN MATCH
// *prefix*, UNLINK), whatever the keys' layout, so rounds do not pile up.
func deleteKeys(ctx context.Context, nodes []node, prefix string) error {
	for _, n := range nodes {
		rdb := goredis.NewClient(&goredis.Options{Addr: n.Addr})
		err := func() error {
			iter := rdb.Scan(ctx, 0, "*"+prefix+"*", 1000).Iterator()
			var batch []string
			for iter.Next(ctx) {
				batch = append(batch, iter.Val())
			}
			if err := iter.Err(); err != nil {
				return err
			}
			// One UNLINK per key: on a cluster a multi-key command must stay in one slot.
			for _, chunk := range slices.Collect(slices.Chunk(batch, 500)) {
				p := rdb.Pipeline()
				for _, k := range chunk {
					p.Unlink(ctx, k)
				}
				if _, err := p.Exec(ctx); err != nil {
					return err
				}
			}
			return nil
		}()
		rdb.Close()
		if err != nil {
			return fmt.Errorf("delete the keys of %s on %s: %w", prefix, n.Addr, err)
		}
	}
	return nil
}

func percentileUS(l []time.Duration, q float64) float64 {
	if len(l) == 0 {
		return 0
	}
	s := slices.Clone(l)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := min(max(int(q*float64(len(s))+0.5)-1, 0), len(s)-1)
	return float64(s[i].Microseconds())
}
