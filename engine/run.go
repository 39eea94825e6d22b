package engine

import (
	"time"

	"github.com/latch-run/latch/store"
)

// Outcome is how a Worker's attempt ended, as the worker saw it: what it
// wrote, and what the store made of the write.
type Outcome string

// The outcomes of an attempt.
const (
	// OutcomeSucceeded: Complete was written.
	OutcomeSucceeded Outcome = "succeeded"
	// OutcomeRetried: Fail was written and the execution runs again
	// (queued or scheduled): a retryable error, a panic or a timeout with
	// attempts left.
	OutcomeRetried Outcome = "retried"
	// OutcomeFailed: Fail was written and the execution is failed: a
	// Permanent error, an invalid result, no handler, or no attempt left.
	OutcomeFailed Outcome = "failed"
	// OutcomeCancelled: a user cancelled the execution while it ran, and
	// the attempt ended it cancelled.
	OutcomeCancelled Outcome = "cancelled"
	// OutcomeSuspended: the handler's flow suspended (Job.Sleep or
	// Job.WaitSignal); the execution runs again when it resumes, and the
	// attempt is not counted as a failure.
	OutcomeSuspended Outcome = "suspended"
	// OutcomeReleased: the worker stopped hard and gave the lease back; the
	// execution runs again at once.
	OutcomeReleased Outcome = "released"
	// OutcomeLeaseLost: the lease expired or the execution was deleted
	// before the outcome was written; nothing was written.
	OutcomeLeaseLost Outcome = "lease_lost"
	// OutcomeUnrecorded: the store refused the write, or it kept failing
	// until the lease ended; the rescuer recovers the execution when the
	// lease expires.
	OutcomeUnrecorded Outcome = "unrecorded"
)

// Run is one attempt a Worker ran, reported to WorkerConfig.OnRun once its
// outcome is written (or given up on).
type Run struct {
	ExecutionID string
	Tenant      string
	Kind        string
	Queue       string
	Attempt     int // 1 for the first attempt
	Outcome     Outcome
	// Duration is the handler's run time, measured in real time: from its
	// start until it returned, or until the worker gave up on it (a hard
	// stop's abandon). The write that records the outcome is not in it.
	Duration time.Duration
}

// failOutcome is the outcome of a Fail the store answered with status.
func failOutcome(status store.Status) Outcome {
	switch status {
	case store.StatusCancelled:
		return OutcomeCancelled
	case store.StatusFailed:
		return OutcomeFailed
	default:
		return OutcomeRetried
	}
}
