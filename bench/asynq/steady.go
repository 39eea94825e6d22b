package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/latch-run/latch/store/storebench"
)

// counter counts handler runs and tells when n have run.
type counter struct {
	n    int64
	runs atomic.Int64
	all  chan struct{}
}

func newCounter(n int) *counter { return &counter{n: int64(n), all: make(chan struct{})} }

func (c *counter) inc() {
	if c.runs.Add(1) == c.n {
		close(c.all)
	}
}

func (c *counter) wait(ctx context.Context, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-c.all:
		return nil
	case <-t.C:
		return fmt.Errorf("%d of %d handlers ran in %v", c.runs.Load(), c.n, timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// recorder keeps, per submit, the time just before the submit call and the
// time its handler first started, both as offsets from base.
type recorder struct {
	base      time.Time
	sent, got []atomic.Int64 // offset+1; 0 = not yet
	left      atomic.Int64
	all       chan struct{}
}

func newRecorder(n int) *recorder {
	r := &recorder{base: time.Now(), sent: make([]atomic.Int64, n), got: make([]atomic.Int64, n), all: make(chan struct{})}
	r.left.Store(int64(n))
	return r
}

func (r *recorder) started(i int) {
	if i < 0 || i >= len(r.got) {
		return
	}
	if r.got[i].CompareAndSwap(0, int64(time.Since(r.base))+1) && r.left.Add(-1) == 0 {
		close(r.all)
	}
}

func steadyCount(rate int, d time.Duration) int {
	return int(int64(rate) * int64(d) / int64(time.Second))
}

// steady calls submit(i) for each of rec's submits at rate per second, open
// loop (each call in its own goroutine at its scheduled time, so a slow
// submit does not delay the next), waits for every handler to start and
// returns the submit-to-start latencies. It is enginebench.SubmitToStart's
// loop for a peer.
func steady(ctx context.Context, rate int, rec *recorder, submit func(i int) error) (*storebench.Result, error) {
	total := len(rec.sent)
	period := time.Second / time.Duration(rate)
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
		late     atomic.Int64
	)
	t0 := time.Now()
	for i := 0; i < total; i++ {
		at := t0.Add(time.Duration(i) * period)
		if d := time.Until(at); d > 0 {
			time.Sleep(d)
		} else if d < -10*time.Millisecond {
			late.Add(1)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec.sent[i].Store(int64(time.Since(rec.base)) + 1)
			if err := submit(i); err != nil {
				errOnce.Do(func() { firstErr = fmt.Errorf("submit %d: %w", i, err) })
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	select {
	case <-rec.all:
	case <-time.After(time.Minute):
		return nil, fmt.Errorf("%d of %d submitted jobs never started", rec.left.Load(), total)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	res := &storebench.Result{Name: fmt.Sprintf("submit-to-start/rate=%d", rate), Elapsed: time.Since(t0)}
	for i := 0; i < total; i++ {
		res.Latencies = append(res.Latencies, time.Duration(rec.got[i].Load()-rec.sent[i].Load()))
	}
	res.Ops = len(res.Latencies)
	if n := late.Load(); n > 0 {
		res.Name += fmt.Sprintf(" (%d submits >10ms behind schedule)", n)
	}
	return res, nil
}
