package latch_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/latch-run/latch"
	"github.com/latch-run/latch/store"
)

// lowBounds lowers an execution's flow bounds to 3 steps and 1 kept
// signal, so that a test reaches them in a few calls.
type lowBounds struct{ store.Store }

func (s lowBounds) RecordStep(ctx context.Context, p *store.RecordStepParams) (*store.RecordStepResult, error) {
	p.MaxSteps = 3
	return s.Store.RecordStep(ctx, p)
}

func (s lowBounds) Suspend(ctx context.Context, p *store.SuspendParams) (*store.Execution, error) {
	p.MaxSteps = 3
	return s.Store.Suspend(ctx, p)
}

func (s lowBounds) Signal(ctx context.Context, p *store.SignalParams) (*store.SignalResult, error) {
	p.MaxBuffered = 1
	return s.Store.Signal(ctx, p)
}

// A flow that records a step past its journal's bound gets
// ErrTooManySteps, and returning it fails the execution on its first
// attempt, with attempts left: it is not retried.
func TestFlowStepPastTheBoundFailsTheRun(t *testing.T) {
	t.Parallel()
	c := latch.NewClient(lowBounds{open(t).Store()})
	ctx := t.Context()
	var runs atomic.Int32
	stepErr := make(chan error, 4)
	startWorker(t, c, func(w *latch.Worker) {
		w.Handle("loop", func(ctx context.Context, job *latch.Job) (any, error) {
			runs.Add(1)
			for i := 0; ; i++ {
				if _, err := job.Step(ctx, fmt.Sprint("item ", i), func(context.Context) (any, error) { return i, nil }); err != nil {
					stepErr <- err
					return nil, err
				}
			}
		})
	})
	x, _, err := c.Submit(ctx, "acme", latch.SubmitRequest{Kind: "loop", MaxAttempts: 5})
	if err != nil {
		t.Fatal(err)
	}
	got := wait(t, c, x.ID)
	if got.Status != latch.StatusFailed || got.Attempt != 1 || runs.Load() != 1 {
		t.Errorf("%s after %d attempts (%d runs), want failed after 1: a full journal is not retried",
			got.Status, got.Attempt, runs.Load())
	}
	if err := <-stepErr; !errors.Is(err, latch.ErrTooManySteps) {
		t.Errorf("Step past the bound: %v, want a Permanent ErrTooManySteps", err)
	}
	if !strings.Contains(got.Error, "too many steps") || !strings.Contains(got.Error, `"item 3"`) {
		t.Errorf("error %q does not name the bound and the step", got.Error)
	}
	if steps, err := c.Steps(ctx, "acme", x.ID); err != nil || len(steps) != 3 {
		t.Errorf("Steps: %d, %v; want the 3 recorded", len(steps), err)
	}
}

// Client.Signal reports a full buffer as ErrSignalBufferFull.
func TestSignalPastTheBufferBound(t *testing.T) {
	t.Parallel()
	c := latch.NewClient(lowBounds{open(t).Store()})
	ctx := t.Context()
	x, _, err := c.Submit(ctx, "acme", latch.SubmitRequest{Kind: "flow"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Signal(ctx, "acme", x.ID, "go", 1, latch.SignalOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Signal(ctx, "acme", x.ID, "go", 2, latch.SignalOptions{}); !errors.Is(err, latch.ErrSignalBufferFull) {
		t.Errorf("a second signal to keep with room for one: %v, want ErrSignalBufferFull", err)
	}
}
