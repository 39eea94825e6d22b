package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/store/storebench"
)

// asynqSide runs the workloads on Asynq, in a Redis DB of its own whose
// asynq:* keys are deleted before and after every workload.
type asynqSide struct {
	c   *config
	opt asynq.RedisClientOpt
	rdb *goredis.Client // for checking and deleting Asynq's keys
}

// The queue Asynq uses when none is given, and its keys (internal/base).
const (
	asynqQueue     = "default"
	asynqPending   = "asynq:{default}:pending"
	asynqActive    = "asynq:{default}:active"
	asynqProcessed = "asynq:{default}:processed"
)

type enqueueMode int

const (
	plain  enqueueMode = iota
	unique             // asynq.Unique(ttl): one lock per queue, type and payload
	taskID             // asynq.TaskID(id): refused when the id exists
)

func newAsynqSide(ctx context.Context, c *config) (*asynqSide, error) {
	opt, err := redisOptions(c.redisURL, c.asynqDB)
	if err != nil {
		return nil, err
	}
	a := &asynqSide{c: c, rdb: goredis.NewClient(opt), opt: asynq.RedisClientOpt{
		Network: opt.Network, Addr: opt.Addr, Username: opt.Username, Password: opt.Password,
		DB: c.asynqDB, TLSConfig: opt.TLSConfig,
	}}
	if err := a.rdb.Ping(ctx).Err(); err != nil {
		a.rdb.Close()
		return nil, fmt.Errorf("asynq: %w", err)
	}
	if n, err := unlinkPattern(ctx, a.rdb, "asynq:*"); err != nil {
		a.rdb.Close()
		return nil, err
	} else if n > 0 {
		log.Printf("asynq: deleted %d asynq:* keys left in DB %d", n, c.asynqDB)
	}
	return a, nil
}

func (a *asynqSide) cleanup() {
	a.flush()
	a.rdb.Close()
}

func (a *asynqSide) flush() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := unlinkPattern(ctx, a.rdb, "asynq:*"); err != nil {
		log.Printf("asynq: deleting keys: %v", err)
	}
}

// fresh returns a new client on an emptied DB; done closes it and empties
// the DB again. (A client caches which queues it registered, so every
// workload gets its own.)
func (a *asynqSide) fresh() (*asynq.Client, func()) {
	a.flush()
	cl := asynq.NewClient(a.opt)
	return cl, func() {
		cl.Close()
		a.flush()
	}
}

func (a *asynqSide) newServer(concurrency int, poll time.Duration) *asynq.Server {
	level := asynq.WarnLevel
	if a.c.verboseLogs {
		level = asynq.InfoLevel
	}
	return asynq.NewServer(a.opt, asynq.Config{
		Concurrency:       concurrency,
		TaskCheckInterval: poll, // 0: Asynq's default, 1s
		LogLevel:          level,
	})
}

func payloadN(i int) []byte {
	return []byte(`{"url":"https://example.com/hook","n":` + strconv.Itoa(i) + `}`)
}

func (a *asynqSide) options(mode enqueueMode, key string) []asynq.Option {
	switch mode {
	case unique:
		return []asynq.Option{asynq.Unique(a.c.uniqueTTL)}
	case taskID:
		return []asynq.Option{asynq.TaskID(key)}
	}
	return nil
}

// submit enqueues n tasks one at a time from clients goroutines, each with
// a distinct payload (and, for TaskID, a distinct id).
func (a *asynqSide) submit(ctx context.Context, n, clients int, mode enqueueMode) (*storebench.Result, error) {
	cl, done := a.fresh()
	defer done()
	res, err := a.enqueueN(ctx, cl, n, clients, mode)
	if err != nil {
		return nil, err
	}
	if got, err := a.rdb.LLen(ctx, asynqPending).Result(); err != nil {
		return nil, err
	} else if got != int64(n) {
		return nil, fmt.Errorf("%d tasks pending after %d enqueues", got, n)
	}
	return res, nil
}

func (a *asynqSide) enqueueN(ctx context.Context, cl *asynq.Client, n, clients int, mode enqueueMode) (*storebench.Result, error) {
	res := &storebench.Result{Name: fmt.Sprintf("submit/clients=%d", clients), Ops: n, Latencies: make([]time.Duration, n)}
	var next atomic.Int64
	prefix := fmt.Sprintf("k%d-", time.Now().UnixNano())
	err := fanOut(clients, func(int) error {
		for {
			i := int(next.Add(1)) - 1
			if i >= n {
				return nil
			}
			t0 := time.Now()
			if _, err := cl.EnqueueContext(ctx, asynq.NewTask("bench", payloadN(i)), a.options(mode, prefix+strconv.Itoa(i))...); err != nil {
				return err
			}
			res.Latencies[i] = time.Since(t0)
		}
	}, &res.Elapsed)
	return res, err
}

// drain enqueues n tasks, then starts a server with concurrency slots and a
// no-op handler, and measures from Start until Redis says every task is
// done (nothing pending or active, the processed counter at n).
func (a *asynqSide) drain(ctx context.Context, n, slots int, retention time.Duration) (*storebench.Result, error) {
	cl, done := a.fresh()
	defer done()
	var opts []asynq.Option
	if retention > 0 {
		opts = append(opts, asynq.Retention(retention))
	}
	var next atomic.Int64
	var el time.Duration
	if err := fanOut(16, func(int) error {
		for {
			i := int(next.Add(1)) - 1
			if i >= n {
				return nil
			}
			if _, err := cl.EnqueueContext(ctx, asynq.NewTask("bench", payloadN(i)), opts...); err != nil {
				return err
			}
		}
	}, &el); err != nil {
		return nil, err
	}
	if got, err := a.rdb.LLen(ctx, asynqPending).Result(); err != nil || got != int64(n) {
		return nil, fmt.Errorf("before draining: %d pending, want %d (%v)", got, n, err)
	}
	ctr := newCounter(n)
	mux := asynq.NewServeMux()
	mux.HandleFunc("bench", func(context.Context, *asynq.Task) error {
		ctr.inc()
		return nil
	})
	srv := a.newServer(slots, 0)
	t0 := time.Now()
	if err := srv.Start(mux); err != nil {
		return nil, err
	}
	defer srv.Shutdown()
	if err := ctr.wait(ctx, 5*time.Minute); err != nil {
		return nil, err
	}
	if err := a.waitDone(ctx, n, 30*time.Second); err != nil {
		return nil, err
	}
	el = time.Since(t0)
	if retention > 0 {
		insp := asynq.NewInspector(a.opt)
		defer insp.Close()
		qi, err := insp.GetQueueInfo(asynqQueue)
		if err != nil {
			return nil, err
		}
		if qi.Completed != n {
			return nil, fmt.Errorf("%d completed tasks kept, want %d", qi.Completed, n)
		}
	}
	return &storebench.Result{Name: fmt.Sprintf("drain/slots=%d", slots), Ops: n, Elapsed: el}, nil
}

// waitDone polls Asynq's keys until nothing is pending or active and the
// queue's processed counter is at least n.
func (a *asynqSide) waitDone(ctx context.Context, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		p := a.rdb.Pipeline()
		pending := p.LLen(ctx, asynqPending)
		active := p.LLen(ctx, asynqActive)
		processed := p.Get(ctx, asynqProcessed)
		if _, err := p.Exec(ctx); err != nil && !errors.Is(err, goredis.Nil) {
			return err
		}
		proc, _ := processed.Int()
		if pending.Val() == 0 && active.Val() == 0 && proc >= n {
			return nil
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("asynq: %d pending, %d active, %d processed, want %d processed",
				pending.Val(), active.Val(), proc, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// latency runs the submit-to-start workload on Asynq with TaskCheckInterval
// poll (0 = its default), as latch's side does: a discarded run of warmup,
// then the measured run of dur, each with a server of its own.
func (a *asynqSide) latency(ctx context.Context, rate int, dur, warmup time.Duration, slots int, poll time.Duration) (*storebench.Result, error) {
	cl, done := a.fresh()
	defer done()
	if warmup > 0 {
		if _, err := a.latencyRun(ctx, cl, rate, warmup, slots, poll); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	return a.latencyRun(ctx, cl, rate, dur, slots, poll)
}

// latencyRun starts a server and enqueues at a steady rate for d, recording
// the time from just before Enqueue to the handler's start, then checks in
// Redis that every task is done.
func (a *asynqSide) latencyRun(ctx context.Context, cl *asynq.Client, rate int, d time.Duration, slots int, poll time.Duration) (*storebench.Result, error) {
	n := max(steadyCount(rate, d), 1)
	processed, err := a.rdb.Get(ctx, asynqProcessed).Int()
	if err != nil && !errors.Is(err, goredis.Nil) {
		return nil, err
	}
	rec := newRecorder(n)
	mux := asynq.NewServeMux()
	mux.HandleFunc("bench", func(_ context.Context, t *asynq.Task) error {
		i, err := strconv.Atoi(string(t.Payload()))
		if err != nil {
			return fmt.Errorf("%v: %w", err, asynq.SkipRetry)
		}
		rec.started(i)
		return nil
	})
	srv := a.newServer(slots, poll)
	if err := srv.Start(mux); err != nil {
		return nil, err
	}
	defer srv.Shutdown()
	res, err := steady(ctx, rate, rec, func(i int) error {
		_, err := cl.EnqueueContext(ctx, asynq.NewTask("bench", []byte(strconv.Itoa(i))))
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := a.waitDone(ctx, processed+n, 30*time.Second); err != nil {
		return nil, err
	}
	return res, nil
}

// contended runs rounds of clients concurrent enqueues of one task (one
// payload, and for TaskID one id) with mode's uniqueness feature. Exactly
// one per round must be accepted; the others get ErrDuplicateTask or
// ErrTaskIDConflict, and their latency counts as well.
func (a *asynqSide) contended(ctx context.Context, rounds, clients int, mode enqueueMode) (*storebench.Result, error) {
	cl, done := a.fresh()
	defer done()
	res := &storebench.Result{Name: fmt.Sprintf("contended-same-key/clients=%d", clients)}
	var mu sync.Mutex
	t0 := time.Now()
	// Round -1, not recorded, opens the client's connections (as latch's
	// side does): with few rounds, the p99 would otherwise be that round.
	for r := -1; r < rounds; r++ {
		if r == 0 {
			res.Latencies, res.Ops, t0 = res.Latencies[:0], 0, time.Now()
		}
		key := fmt.Sprintf("contended-%d-%d", time.Now().UnixNano(), r)
		payload := []byte(`{"key":"` + key + `"}`)
		var accepted atomic.Int64
		var el time.Duration
		err := fanOut(clients, func(int) error {
			t := time.Now()
			_, err := cl.EnqueueContext(ctx, asynq.NewTask("bench", payload), a.options(mode, key)...)
			d := time.Since(t)
			switch {
			case err == nil:
				accepted.Add(1)
			case errors.Is(err, asynq.ErrDuplicateTask), errors.Is(err, asynq.ErrTaskIDConflict):
			default:
				return err
			}
			mu.Lock()
			res.Latencies = append(res.Latencies, d)
			mu.Unlock()
			return nil
		}, &el)
		if err != nil {
			return nil, err
		}
		if n := accepted.Load(); n != 1 {
			return nil, fmt.Errorf("round %d: %d of %d enqueues of one key accepted", r, n, clients)
		}
		res.Ops += clients
	}
	res.Elapsed = time.Since(t0)
	return res, nil
}

func fanOut(n int, fn func(i int) error, elapsed *time.Duration) error {
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
	return errors.Join(errs...)
}
