package latch_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latch-run/latch"
)

// A flow through the Go API: a typed step, a wait that a Client.Signal
// ends, a failure, Client.Retry that keeps the journal, and the attempt
// history of it all.
func TestFlowThroughTheGoAPI(t *testing.T) {
	t.Parallel()
	c := open(t)
	ctx := t.Context()
	var charges, runs atomic.Int32
	var failed atomic.Bool
	startWorker(t, c, func(w *latch.Worker) {
		w.Handle("order", func(ctx context.Context, job *latch.Job) (any, error) {
			runs.Add(1)
			charge, err := latch.StepValue(ctx, job, "charge", func(context.Context) (string, error) {
				charges.Add(1)
				return "ch_1", nil
			})
			if err != nil {
				return nil, err
			}
			data, err := job.WaitSignal(ctx, "approval", "approve", time.Hour)
			if err != nil {
				return nil, err
			}
			if !failed.Swap(true) {
				return nil, latch.Permanent(errors.New("the webhook is down"))
			}
			return map[string]any{"charge": charge, "approval": data}, nil
		})
	})
	x, _, err := c.Submit(ctx, "acme", latch.SubmitRequest{Kind: "order"})
	if err != nil {
		t.Fatal(err)
	}
	waitSuspendedFor(t, c, x.ID, "approve")
	delivered, err := c.Signal(ctx, "acme", x.ID, "approve", map[string]string{"by": "ann"}, latch.SignalOptions{})
	if err != nil || !delivered {
		t.Fatalf("Signal: %v, %v; want delivered", delivered, err)
	}
	if got := wait(t, c, x.ID); got.Status != latch.StatusFailed {
		t.Fatalf("after the failure: %s, want failed", got.Status)
	}
	if _, err := c.Retry(ctx, "acme", x.ID); err != nil {
		t.Fatal(err)
	}
	got := wait(t, c, x.ID)
	if got.Status != latch.StatusSucceeded || string(got.Result) != `{"approval":{"by":"ann"},"charge":"ch_1"}` {
		t.Errorf("after the retry: %s %s, want succeeded with the charge and the approval", got.Status, got.Result)
	}
	if charges.Load() != 1 || runs.Load() != 3 {
		t.Errorf("charged %d times in %d runs, want once in 3", charges.Load(), runs.Load())
	}
	steps, err := c.Steps(ctx, "acme", x.ID)
	if err != nil || len(steps) != 2 || steps[0].Name != "charge" || steps[1].Name != "approval" {
		t.Errorf("Steps: %+v, %v; want charge then approval", steps, err)
	}
	attempts, err := c.Attempts(ctx, "acme", x.ID)
	if err != nil {
		t.Fatal(err)
	}
	var outcomes []string
	for _, a := range attempts {
		outcomes = append(outcomes, a.Outcome)
	}
	if len(attempts) != 3 || attempts[0].Outcome != "suspended" || attempts[1].Outcome != "failed" ||
		attempts[1].Error != "the webhook is down" || attempts[2].Outcome != "succeeded" {
		t.Errorf("attempts %v, want suspended, failed (with its error), succeeded", outcomes)
	}
	if _, err := c.Signal(ctx, "acme", x.ID, "approve", nil, latch.SignalOptions{}); !errors.Is(err, latch.ErrNotActive) {
		t.Errorf("Signal to a finished execution: %v, want ErrNotActive", err)
	}
	if _, err := c.Retry(ctx, "acme", x.ID); !errors.Is(err, latch.ErrNotFailed) {
		t.Errorf("Retry of a succeeded execution: %v, want ErrNotFailed", err)
	}
}
