package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/latch-run/latch/store/storebench"
)

// River's side, used as its docs show: a pgxpool, riverpgxv5, a Client
// with Config.Schema on a schema migrated by rivermigrate; Insert,
// InsertMany and InsertManyFast to enqueue; a Client with Queues and
// Workers to work. Its defaults are kept except where a row says otherwise.

// benchArgs is the job of the submit workloads: the same payload as
// latch's ({"url":...,"n":1}), plus the key of the unique variants.
type benchArgs struct {
	Key string `json:"key,omitempty"`
	URL string `json:"url"`
	N   int    `json:"n"`
}

func (benchArgs) Kind() string { return "bench" }

func newArgs(key string) benchArgs {
	return benchArgs{Key: key, URL: "https://example.com/hook", N: 1}
}

// startArgs is the job of the submit-to-start workload: I indexes the time
// it was submitted at.
type startArgs struct {
	I int `json:"i"`
}

func (startArgs) Kind() string { return "bench_start" }

// uniqueOpts makes River deduplicate on the job's args (which hold the key),
// in every state (River's default ByState).
var uniqueOpts = &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}}

type riverSide struct {
	cfg     *config
	schemas *schemas
	logger  *slog.Logger
}

func newRiverSide(cfg *config, s *schemas) *riverSide {
	return &riverSide{cfg: cfg, schemas: s,
		logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
}

// env is one workload's River: a migrated schema and a pool on it.
type env struct {
	schema string
	pool   *pgxpool.Pool
}

// run runs fn on a fresh schema migrated with rivermigrate, with a pool of
// conns connections, then drops the schema.
func (r *riverSide) run(ctx context.Context, conns int32, fn func(e *env) (*storebench.Result, error)) (*storebench.Result, error) {
	schema, err := r.schemas.create(ctx, "bench_river")
	if err != nil {
		return nil, err
	}
	defer r.schemas.drop(schema)
	pool, err := riverPool(ctx, r.cfg.db, conns)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: schema, Logger: r.logger})
	if err != nil {
		return nil, err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return nil, fmt.Errorf("rivermigrate: %w", err)
	}
	return fn(&env{schema: schema, pool: pool})
}

// client makes a River client on pool. With workers it works the default
// queue with maxWorkers; cooldown 0 keeps River's FetchCooldown default.
func (r *riverSide) client(e *env, pool *pgxpool.Pool, workers *river.Workers, cooldown time.Duration) (*river.Client[pgx.Tx], error) {
	cfg := &river.Config{Schema: e.schema, Logger: r.logger, FetchCooldown: cooldown}
	if workers != nil {
		cfg.Workers = workers
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: r.cfg.slots}}
	}
	return river.NewClient(riverpgxv5.New(pool), cfg)
}

// submit inserts n jobs one at a time from clients goroutines, each with
// its own args; unique adds River's unique-job options.
func (r *riverSide) submit(ctx context.Context, n, clients int, unique bool) (*storebench.Result, error) {
	return r.run(ctx, r.cfg.pool, func(e *env) (*storebench.Result, error) {
		c, err := r.client(e, e.pool, nil, 0)
		if err != nil {
			return nil, err
		}
		var opts *river.InsertOpts
		if unique {
			opts = uniqueOpts
		}
		res := &storebench.Result{Latencies: make([]time.Duration, n)}
		prefix := fmt.Sprintf("k%d-", time.Now().UnixNano())
		var next atomic.Int64
		err = fanOut(clients, func(int) error {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return nil
				}
				key := ""
				if unique {
					key = fmt.Sprint(prefix, i)
				}
				t0 := time.Now()
				ins, err := c.Insert(ctx, newArgs(key), opts)
				if err != nil {
					return err
				}
				if ins.UniqueSkippedAsDuplicate {
					return fmt.Errorf("river: insert %d was taken for a duplicate", i)
				}
				res.Latencies[i] = time.Since(t0)
			}
		}, &res.Elapsed)
		res.Ops = n
		return res, err
	})
}

// batch inserts batchN jobs size at a time with InsertMany (returns the
// rows) or, fast, InsertManyFast (COPY FROM, returns a count).
func (r *riverSide) batch(ctx context.Context, fast bool) (*storebench.Result, error) {
	return r.run(ctx, r.cfg.pool, func(e *env) (*storebench.Result, error) {
		c, err := r.client(e, e.pool, nil, 0)
		if err != nil {
			return nil, err
		}
		res := &storebench.Result{}
		t0 := time.Now()
		for done := 0; done < r.cfg.batchN; done += r.cfg.batch {
			params := make([]river.InsertManyParams, min(r.cfg.batch, r.cfg.batchN-done))
			for i := range params {
				params[i] = river.InsertManyParams{Args: newArgs("")}
			}
			got := 0
			if fast {
				got, err = c.InsertManyFast(ctx, params)
			} else {
				var ins []*rivertype.JobInsertResult
				ins, err = c.InsertMany(ctx, params)
				got = len(ins)
			}
			if err != nil {
				return nil, err
			}
			if got != len(params) {
				return nil, fmt.Errorf("river: batch inserted %d of %d", got, len(params))
			}
			res.Ops += got
		}
		res.Elapsed = time.Since(t0)
		return res, nil
	})
}

// drain inserts drainN jobs (InsertManyFast, untimed), then starts a client
// with slots workers and a no-op worker, and measures from Start until the
// last job's completion event (River sends it once the completer has
// written the batch); the database must then show every job completed.
func (r *riverSide) drain(ctx context.Context, cooldown time.Duration) (*storebench.Result, error) {
	return r.run(ctx, r.cfg.workerPool, func(e *env) (*storebench.Result, error) {
		n := r.cfg.drainN
		workers := river.NewWorkers()
		river.AddWorker(workers, river.WorkFunc(func(context.Context, *river.Job[benchArgs]) error { return nil }))
		c, err := r.client(e, e.pool, workers, cooldown)
		if err != nil {
			return nil, err
		}
		for done := 0; done < n; done += 1000 {
			params := make([]river.InsertManyParams, min(1000, n-done))
			for i := range params {
				params[i] = river.InsertManyParams{Args: newArgs("")}
			}
			if _, err := c.InsertManyFast(ctx, params); err != nil {
				return nil, err
			}
		}
		events, cancel := c.SubscribeConfig(&river.SubscribeConfig{ChanSize: n + 1000,
			Kinds: []river.EventKind{river.EventKindJobCompleted}})
		defer cancel()
		res := &storebench.Result{Ops: n}
		t0 := time.Now()
		if err := c.Start(ctx); err != nil {
			return nil, err
		}
		defer stopRiver(c)
		timeout := time.After(10 * time.Minute)
		for got := 0; got < n; {
			select {
			case ev := <-events:
				if ev != nil && ev.Job.Kind == "bench" {
					got++
				}
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-timeout:
				return nil, fmt.Errorf("river drain: %d of %d completed", got, n)
			}
		}
		res.Elapsed = time.Since(t0)
		var completed, total int
		if err := e.pool.QueryRow(ctx, fmt.Sprintf(
			`SELECT count(*) FILTER (WHERE state = 'completed'), count(*) FROM %s.river_job`,
			pgx.Identifier{e.schema}.Sanitize())).Scan(&completed, &total); err != nil {
			return nil, err
		}
		if completed != n || total != n {
			return nil, fmt.Errorf("river drain: the database shows %d of %d jobs completed", completed, total)
		}
		return res, nil
	})
}

// submitToStart works with one client (pool workerPool) and inserts with
// another (pool pool) at a steady rate for duration, each insert from its
// own goroutine; a latency is from just before Insert to Work.
func (r *riverSide) submitToStart(ctx context.Context, cooldown time.Duration) (*storebench.Result, error) {
	return r.run(ctx, r.cfg.pool, func(e *env) (*storebench.Result, error) {
		n := max(int(r.cfg.duration.Seconds()*float64(r.cfg.rate)), 1)
		base := time.Now()
		sent := make([]atomic.Int64, n)
		started := make([]atomic.Bool, n)
		res := &storebench.Result{Latencies: make([]time.Duration, 0, n)}
		var mu sync.Mutex
		all := make(chan struct{})
		workers := river.NewWorkers()
		river.AddWorker(workers, river.WorkFunc(func(_ context.Context, j *river.Job[startArgs]) error {
			at := time.Since(base)
			i := j.Args.I
			if i < 0 || i >= n || started[i].Swap(true) {
				return nil
			}
			mu.Lock()
			res.Latencies = append(res.Latencies, at-time.Duration(sent[i].Load()))
			if len(res.Latencies) == n {
				close(all)
			}
			mu.Unlock()
			return nil
		}))
		wpool, err := riverPool(ctx, r.cfg.db, r.cfg.workerPool)
		if err != nil {
			return nil, err
		}
		defer wpool.Close()
		worker, err := r.client(e, wpool, workers, cooldown)
		if err != nil {
			return nil, err
		}
		inserter, err := r.client(e, e.pool, nil, cooldown)
		if err != nil {
			return nil, err
		}
		if err := worker.Start(ctx); err != nil {
			return nil, err
		}
		defer stopRiver(worker)
		errs := make(chan error, 1)
		interval := time.Second / time.Duration(r.cfg.rate)
		t0 := time.Now()
		for i := 0; i < n; i++ {
			time.Sleep(time.Until(t0.Add(time.Duration(i) * interval)))
			sent[i].Store(int64(time.Since(base)))
			go func() {
				if _, err := inserter.Insert(ctx, startArgs{I: i}, nil); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}()
		}
		select {
		case <-all:
		case err = <-errs:
		case <-ctx.Done():
			err = ctx.Err()
		case <-time.After(r.cfg.duration + time.Minute):
			mu.Lock()
			err = fmt.Errorf("river submit-to-start: only %d of %d jobs started", len(res.Latencies), n)
			mu.Unlock()
		}
		res.Elapsed = time.Since(t0)
		res.Ops = n
		return res, err
	})
}

// contended inserts, in rounds, contenders unique jobs with one args (one
// key) at once; every insert of a round must return the same job.
func (r *riverSide) contended(ctx context.Context) (*storebench.Result, error) {
	return r.run(ctx, r.cfg.pool, func(e *env) (*storebench.Result, error) {
		c, err := r.client(e, e.pool, nil, 0)
		if err != nil {
			return nil, err
		}
		res := &storebench.Result{}
		var mu sync.Mutex
		t0 := time.Now()
		for round := 0; round < r.cfg.rounds; round++ {
			args := newArgs(fmt.Sprintf("contended-%d-%d", time.Now().UnixNano(), round))
			ids := make([]int64, r.cfg.contenders)
			var el time.Duration
			err := fanOut(r.cfg.contenders, func(i int) error {
				t := time.Now()
				ins, err := c.Insert(ctx, args, uniqueOpts)
				if err != nil {
					return err
				}
				d := time.Since(t)
				mu.Lock()
				res.Latencies = append(res.Latencies, d)
				mu.Unlock()
				ids[i] = ins.Job.ID
				return nil
			}, &el)
			if err != nil {
				return nil, err
			}
			for _, id := range ids {
				if id != ids[0] {
					return nil, fmt.Errorf("river: round %d: one unique key gave jobs %d and %d", round, ids[0], id)
				}
			}
			res.Ops += r.cfg.contenders
		}
		res.Elapsed = time.Since(t0)
		return res, nil
	})
}

func stopRiver(c *river.Client[pgx.Tx]) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Stop(ctx); err != nil && !errors.Is(err, context.Canceled) {
		slog.Warn("river: stop", "err", err)
	}
}

// fanOut runs fn(0..n-1) at once and times the whole.
func fanOut(n int, fn func(i int) error, elapsed *time.Duration) error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	t0 := time.Now()
	for i := range n {
		wg.Go(func() { errs[i] = fn(i) })
	}
	wg.Wait()
	*elapsed = time.Since(t0)
	return errors.Join(errs...)
}
