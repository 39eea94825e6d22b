package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/latch-run/latch/engine/enginebench"
	"github.com/latch-run/latch/store/storebench"
)

// runBench runs the storebench and enginebench workloads against a store and prints one
// line per workload: throughput and, where measured, latency percentiles.
func runBench(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("bench")
	storeURL := fs.String("store", envOr("LATCH_STORE", "sqlite:latch-bench.db"), "store URL (LATCH_STORE)")
	n := fs.IntP("n", "n", 20000, "executions per workload")
	clients := fs.Int("clients", 16, "concurrent submitting clients")
	batch := fs.Int("batch", 100, "items per batch submit")
	slots := fs.Int("slots", 16, "concurrent claimers when draining")
	workerSlots := fs.Int("worker-slots", 100, "slots of the engine worker (worker drain, submit-to-start)")
	rate := fs.Int("rate", 500, "submits per second of submit-to-start")
	duration := durationFlag(fs, "duration", 10*time.Second, "how long submit-to-start submits")
	if err := parse(ctx, fs, args, 0, 0); err != nil {
		return err
	}
	s, err := openStore(ctx, *storeURL)
	if err != nil {
		return err
	}
	defer s.Close()
	// Submit-to-start runs twice: with the worker on the submitting Store,
	// as `latch serve` runs its in-process workers, and on a Store of its
	// own, as a worker in another process would be: its wake-ups then come
	// through the backend (none on SQLite: it polls).
	work, err := openStore(ctx, *storeURL)
	if err != nil {
		return err
	}
	defer work.Close()
	tenant, err := storebench.Setup(ctx, s, *n*6+64*10+int(duration.Seconds()*float64(*rate)))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "latch bench: store %s, %d executions per workload\n", *storeURL, *n)
	steps := []func() (*storebench.Result, error){
		func() (*storebench.Result, error) { return storebench.Submit(ctx, s, tenant, *n/4, 1) },
		func() (*storebench.Result, error) { return storebench.Submit(ctx, s, tenant, *n, *clients) },
		func() (*storebench.Result, error) { return storebench.SubmitBatch(ctx, s, tenant, *n, *batch) },
		func() (*storebench.Result, error) { return storebench.Drain(ctx, s, *slots, 10) },
		func() (*storebench.Result, error) { return storebench.Flow(ctx, s, tenant, *n, *slots, 10) },
		func() (*storebench.Result, error) { return storebench.Contended(ctx, s, tenant, 20, 64) },
		func() (*storebench.Result, error) { return enginebench.WorkerDrain(ctx, s, tenant, *n, *workerSlots) },
		func() (*storebench.Result, error) {
			return enginebench.SubmitToStart(ctx, s, s, tenant, *rate, *duration, *workerSlots)
		},
		func() (*storebench.Result, error) {
			return enginebench.SubmitToStart(ctx, s, work, tenant, *rate, *duration, *workerSlots)
		},
	}
	for _, step := range steps {
		r, err := step()
		if err != nil {
			return err
		}
		fmt.Fprintln(out, r)
	}
	return nil
}
