package soak

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/latch-run/latch/engine"
)

// handle is the soak's handler and its witness. Before anything else it
// journals the start of (execution, attempt) with the time, so the checks
// see every start the workers made (I2, I7); it counts what runs at once
// per concurrency key and per schedule (I4, I6); then it works as the
// payload says, honouring cancellation, and fails when planned.
func (r *runner) handle(ctx context.Context, j *engine.Job) (json.RawMessage, error) {
	now := time.Now()
	var p payload
	if err := json.Unmarshal(j.Payload, &p); err != nil {
		r.found.add("errors", "execution %s has a payload the soak did not write: %s", j.ID, j.Payload)
		return nil, engine.Permanent(err)
	}
	r.jn.start(now, j.ID, j.Attempt, p.Class, p.Sched)
	r.starts.Add(1)
	if j.Attempt == 1 && p.T != 0 {
		r.startLat.add(now.Sub(time.Unix(0, p.T)))
	}
	work := time.Duration(p.Work) * time.Millisecond
	switch p.Class {
	case classConc:
		defer r.gauge.enter("I4", ConcurrencyKey, ConcurrencyLimit, j.ID)()
	case classSched:
		defer r.gauge.enter("I6", "schedule "+p.Sched, 1, j.ID)()
		work = scheduleWork()
	}
	if work > 0 {
		t := time.NewTimer(work)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, context.Cause(ctx)
		}
	}
	if j.Attempt <= p.Fail {
		return nil, engine.RetryAfter(errors.New("soak: planned failure"), 50*time.Millisecond)
	}
	return nil, nil
}

// gauge counts the handlers running at once per key, as the witness sees
// them: a handler counts from its start until it returns, which lies
// within its claim and the write that ends its attempt, so the gauge never
// sees more at once than the store has running.
type gauge struct {
	found *findings
	mu    sync.Mutex
	now   map[string]int
	most  map[string]int
}

func newGauge(found *findings) *gauge {
	return &gauge{found: found, now: map[string]int{}, most: map[string]int{}}
}

// enter counts one more handler of key and returns the function that
// counts it out. Past limit it records a breach of check.
func (g *gauge) enter(check, key string, limit int, id string) func() {
	g.mu.Lock()
	g.now[key]++
	n := g.now[key]
	g.most[key] = max(g.most[key], n)
	g.mu.Unlock()
	if n > limit {
		g.found.add(check, "%d handlers of %s ran at once (limit %d) when %s started at %s",
			n, key, limit, id, time.Now().Format("15:04:05.000"))
	}
	return func() {
		g.mu.Lock()
		g.now[key]--
		g.mu.Unlock()
	}
}

// peak returns the most handlers of key ever seen at once.
func (g *gauge) peak(key string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.most[key]
}
