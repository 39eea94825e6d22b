// Package enginebench holds the workloads that run latch's real worker
// (engine.Worker) on a store, rather than bare Claim and Complete calls:
// what an operator sees from `latch serve`. `latch bench` and the
// comparisons under bench/ run them after store/storebench's workloads,
// whose Result they report in.
package enginebench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/latch-run/latch/engine"
	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/storebench"
)

// Each workload uses a kind of its own, so executions left in the store by other
// workloads or runs are neither claimed nor waited for.

// WorkerDrain queues n executions for tenant (in batches of 500, untimed),
// then starts an engine.Worker with slots handler slots and a no-op handler
// and measures from its start until the store has acknowledged the n-th
// Complete. It then checks with List that every one of them succeeded.
func WorkerDrain(ctx context.Context, s store.Store, tenant string, n, slots int) (*storebench.Result, error) {
	kind := fmt.Sprintf("bench-drain-%d", time.Now().UnixNano())
	for done := 0; done < n; done += 500 {
		items := make([]store.Submission, min(500, n-done))
		for i := range items {
			items[i] = store.Submission{Kind: kind, Payload: payload}
		}
		if err := admitAll(ctx, s, tenant, items); err != nil {
			return nil, err
		}
	}
	cs := NewCompletions(n)
	w := engine.NewWorker(engine.WorkerConfig{
		Store:  cs.Wrap(s),
		Slots:  slots,
		Logger: slog.New(slog.DiscardHandler),
	})
	w.Handle(kind, func(context.Context, *engine.Job) (json.RawMessage, error) { return nil, nil })
	res := &storebench.Result{Name: fmt.Sprintf("worker-drain/slots=%d", slots), Ops: n}
	t0 := time.Now()
	if err := w.Start(ctx); err != nil {
		return nil, err
	}
	err := cs.Wait(ctx, 10*time.Minute)
	if err != nil {
		err = fmt.Errorf("worker drain: %w", err)
	}
	res.Elapsed = cs.At().Sub(t0)
	if err2 := stopWorker(w); err == nil {
		err = err2
	}
	if err != nil {
		return nil, err
	}
	if got, err := countStatus(ctx, s, tenant, kind, store.StatusSucceeded); err != nil {
		return nil, err
	} else if got != n {
		return nil, fmt.Errorf("worker drain: %d of %d executions succeeded in the store", got, n)
	}
	return res, nil
}

// SubmitToStart runs an engine.Worker with slots slots on work and submits
// to submit at a steady rate per second for d, each submit with its own
// dedup key and from its own goroutine (open loop: a slow submit does not
// delay the next). A latency is the time from just before a submit to the
// start of its handler. Pass two Stores opened on one database for the
// path between processes (the wake-up travels through the backend), or
// the same Store twice for the in-process one.
func SubmitToStart(ctx context.Context, submit, work store.Store, tenant string, rate int, d time.Duration, slots int) (*storebench.Result, error) {
	if rate <= 0 || d <= 0 {
		return nil, errors.New("enginebench: submit-to-start needs a rate and a duration")
	}
	n := max(int(d.Seconds()*float64(rate)), 1)
	kind := fmt.Sprintf("bench-start-%d", time.Now().UnixNano())
	base := time.Now()
	sent := make([]atomic.Int64, n) // since base
	started := make([]atomic.Bool, n)
	stores := "two-stores"
	if submit == work {
		stores = "one-store"
	}
	res := &storebench.Result{Name: fmt.Sprintf("submit-to-start/rate=%d/%s", rate, stores), Latencies: make([]time.Duration, 0, n)}
	var mu sync.Mutex
	all := make(chan struct{})
	w := engine.NewWorker(engine.WorkerConfig{
		Store:  work,
		Slots:  slots,
		Logger: slog.New(slog.DiscardHandler),
	})
	w.Handle(kind, func(_ context.Context, j *engine.Job) (json.RawMessage, error) {
		at := time.Since(base)
		var p struct{ I int }
		if err := json.Unmarshal(j.Payload, &p); err != nil || p.I < 0 || p.I >= n {
			return nil, engine.Permanent(fmt.Errorf("bad payload %s", j.Payload))
		}
		if started[p.I].Swap(true) {
			return nil, nil // a second start of one execution: count the first only
		}
		mu.Lock()
		res.Latencies = append(res.Latencies, at-time.Duration(sent[p.I].Load()))
		if len(res.Latencies) == n {
			close(all)
		}
		mu.Unlock()
		return nil, nil
	})
	if err := w.Start(ctx); err != nil {
		return nil, err
	}
	prefix := fmt.Sprintf("sts-%d-", time.Now().UnixNano())
	errs := make(chan error, 1)
	interval := time.Second / time.Duration(rate)
	t0 := time.Now()
	for i := 0; i < n; i++ {
		time.Sleep(time.Until(t0.Add(time.Duration(i) * interval)))
		sent[i].Store(int64(time.Since(base)))
		go func() {
			err := admitAll(ctx, submit, tenant, []store.Submission{{
				Kind: kind, Payload: fmt.Appendf(nil, `{"i":%d}`, i), DedupKey: fmt.Sprint(prefix, i)}})
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		}()
	}
	var err error
	select {
	case <-all:
	case err = <-errs:
	case <-ctx.Done():
		err = ctx.Err()
	case <-time.After(d + time.Minute):
		mu.Lock()
		err = fmt.Errorf("submit-to-start: only %d of %d executions started", len(res.Latencies), n)
		mu.Unlock()
	}
	res.Elapsed = time.Since(t0)
	if err2 := stopWorker(w); err == nil {
		err = err2
	}
	if err != nil {
		return nil, err
	}
	res.Ops = n
	return res, nil
}

// payload is what every submitted execution carries (as storebench's).
var payload = []byte(`{"url":"https://example.com/hook","n":1}`)

// admitAll admits items and fails on the first refused one.
func admitAll(ctx context.Context, s store.Store, tenant string, items []store.Submission) error {
	r, err := s.Admit(ctx, &store.AdmitParams{Tenant: tenant, Items: items})
	if err != nil {
		return err
	}
	for _, it := range r.Items {
		if it.Err != nil {
			return it.Err
		}
	}
	return nil
}

func stopWorker(w *engine.Worker) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return w.Stop(ctx)
}

// countStatus counts tenant's executions of kind in status.
func countStatus(ctx context.Context, s store.Store, tenant, kind string, status store.Status) (int, error) {
	n, after := 0, ""
	for {
		page, err := s.List(ctx, &store.ListParams{Tenant: tenant, Kind: kind, Status: status,
			Limit: store.MaxListLimit, After: after})
		if err != nil {
			return 0, err
		}
		n += len(page.Items)
		if page.Next == "" {
			return n, nil
		}
		after = page.Next
	}
}
