package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/engine/enginebench"
	"github.com/latch-run/latch/store/redis"
	"github.com/latch-run/latch/store/storebench"
)

// latchSide runs the workloads on latch's Redis store. Every workload gets
// a fresh store namespace (key prefix) in the latch DB, deleted after it.
type latchSide struct {
	url string          // the latch DB's URL
	rdb *goredis.Client // for deleting namespaces
}

func newLatchSide(ctx context.Context, c *config) (*latchSide, error) {
	u, err := dbURL(c.redisURL, c.latchDB)
	if err != nil {
		return nil, err
	}
	opt, err := redisOptions(c.redisURL, c.latchDB)
	if err != nil {
		return nil, err
	}
	l := &latchSide{url: u, rdb: goredis.NewClient(opt)}
	if err := l.rdb.Ping(ctx).Err(); err != nil {
		l.rdb.Close()
		return nil, fmt.Errorf("latch: %w", err)
	}
	return l, nil
}

func (l *latchSide) cleanup() { l.rdb.Close() }

// fresh opens a store on a new namespace (prefix) with a tenant for n
// executions; done closes it and deletes the namespace's keys.
func (l *latchSide) fresh(ctx context.Context, n int) (s *redis.Store, tenant, prefix string, done func(), err error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix = "latchbench-" + hex.EncodeToString(b[:])
	s, err = redis.Open(ctx, l.url, redis.WithPrefix(prefix))
	if err != nil {
		return nil, "", "", nil, err
	}
	done = func() {
		s.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := unlinkPattern(ctx, l.rdb, "{"+prefix+"}:*"); err != nil {
			log.Printf("latch: deleting namespace %s: %v", prefix, err)
		}
	}
	if tenant, err = storebench.Setup(ctx, s, n); err != nil {
		done()
		return nil, "", "", nil, err
	}
	return s, tenant, prefix, done, nil
}

// submit: storebench.Submit, each submit with its own dedup key.
func (l *latchSide) submit(ctx context.Context, n, clients int) (*storebench.Result, error) {
	s, tenant, _, done, err := l.fresh(ctx, n)
	if err != nil {
		return nil, err
	}
	defer done()
	return storebench.Submit(ctx, s, tenant, n, clients)
}

// submitBatch: storebench.SubmitBatch.
func (l *latchSide) submitBatch(ctx context.Context, n, size int) (*storebench.Result, error) {
	s, tenant, _, done, err := l.fresh(ctx, n)
	if err != nil {
		return nil, err
	}
	defer done()
	return storebench.SubmitBatch(ctx, s, tenant, n, size)
}

// contended: storebench.Contended.
func (l *latchSide) contended(ctx context.Context, rounds, clients int) (*storebench.Result, error) {
	s, tenant, _, done, err := l.fresh(ctx, rounds*clients)
	if err != nil {
		return nil, err
	}
	defer done()
	// A first round, not recorded, opens the connections (as Asynq's side
	// does): with few rounds, the p99 would otherwise be that one round.
	if _, err := storebench.Contended(ctx, s, tenant, 1, clients); err != nil {
		return nil, err
	}
	return storebench.Contended(ctx, s, tenant, rounds, clients)
}

// drain: enginebench.WorkerDrain, an engine.Worker with slots slots and a
// no-op handler started once the n executions are queued.
func (l *latchSide) drain(ctx context.Context, n, slots int) (*storebench.Result, error) {
	s, tenant, _, done, err := l.fresh(ctx, n)
	if err != nil {
		return nil, err
	}
	defer done()
	return enginebench.WorkerDrain(ctx, s, tenant, n, slots)
}

// latency: enginebench.SubmitToStart, submitting through one Store and
// working from a second one on the same namespace, so that the wake-up
// travels through Redis as between an API server and a worker process.
// A first run of warmup is discarded.
func (l *latchSide) latency(ctx context.Context, rate int, dur, warmup time.Duration, slots int) (*storebench.Result, error) {
	s, tenant, prefix, done, err := l.fresh(ctx, steadyCount(rate, dur+warmup)+1)
	if err != nil {
		return nil, err
	}
	defer done()
	work, err := redis.Open(ctx, l.url, redis.WithPrefix(prefix))
	if err != nil {
		return nil, err
	}
	defer work.Close()
	if warmup > 0 {
		if _, err := enginebench.SubmitToStart(ctx, s, work, tenant, rate, warmup, slots); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	return enginebench.SubmitToStart(ctx, s, work, tenant, rate, dur, slots)
}
