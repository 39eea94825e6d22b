package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/latch-run/latch/internal/fault"
	"github.com/latch-run/latch/store"
)

// Bounds of the writes that settle an attempt.
const (
	minWriteTimeout = time.Second     // even when the lease is (nearly) over
	maxWriteBackoff = 2 * time.Second // between retries of a failed write
)

// attempt is one claimed lease being run by a Worker.
type attempt struct {
	w     *Worker
	lease *store.Lease
	log   *slog.Logger
	// expires is the lease's current expiry by the store's clock, in Unix
	// nanoseconds: heartbeats move it, and a flow's writes from the
	// handler's goroutine read it.
	expires atomic.Int64

	returned bool  // the handler returned: its slot is free (handlerReturned)
	flow     *flow // the job's journal and suspension

	span trace.Span // the run's span; nil with tracing off (trace.go)
}

// outcome is what a handler returned.
type outcome struct {
	result json.RawMessage
	err    error
}

// execute runs one attempt from claim to settlement. It is the only
// goroutine that talks to the store about this lease.
func (w *Worker) execute(lease *store.Lease) {
	a := &attempt{
		w:     w,
		lease: lease,
		log: w.log.With("execution_id", lease.ExecutionID, "tenant", lease.Tenant,
			"kind", lease.Kind, "attempt", lease.Attempt),
	}
	a.expires.Store(lease.ExpiresAt.UnixNano())
	defer a.settled()
	ended, took := a.run()
	a.endRun(ended)
	if w.cfg.OnRun != nil {
		w.cfg.OnRun(&Run{ExecutionID: lease.ExecutionID, Tenant: lease.Tenant, Kind: lease.Kind,
			Queue: lease.Queue, Attempt: lease.Attempt, Outcome: ended, Duration: took})
	}
}

// handlerReturned moves the attempt from its handler slot to the writes
// that settle attempts (Worker.settling): its slot is free for the next
// claim while the outcome is written.
func (a *attempt) handlerReturned() {
	a.returned = true
	a.w.settling.Add(1)
	a.w.slotFreed(a.lease.Tenant)
}

// settled ends the attempt: whatever it still holds, its slot or its
// place among the settling writes, is given back. A finished write wakes
// the claim loop only when the writes in flight were what held claims
// back (Worker.free); otherwise its slot already did, when the handler
// returned.
func (a *attempt) settled() {
	if a.returned {
		if a.w.settling.Add(-1) >= int64(a.w.cfg.Slots) {
			a.w.signalFreed()
		}
		return
	}
	a.w.slotFreed(a.lease.Tenant)
}

// run runs the handler and records its outcome. It returns the outcome and
// the handler's run time.
func (a *attempt) run() (Outcome, time.Duration) {
	w := a.w
	// ctx is cancelled with ErrShutdown by a hard stop, or here with
	// ErrCancelled or ErrLeaseLost; runCtx adds the execution's timeout.
	ctx, cancel := context.WithCancelCause(a.startRun(w.jobs))
	defer cancel(nil)
	runCtx := ctx
	if a.lease.TimeoutSeconds > 0 {
		var stop context.CancelFunc
		runCtx, stop = context.WithTimeoutCause(ctx, time.Duration(a.lease.TimeoutSeconds)*time.Second, ErrTimeout)
		defer stop()
	}

	done := make(chan outcome, 1) // buffered: an abandoned handler never blocks
	start := time.Now()
	if h := w.handlers[a.lease.Kind]; h == nil {
		done <- outcome{err: Permanent(fmt.Errorf("no handler for kind %q", a.lease.Kind))}
	} else {
		job := &Job{
			ID:          a.lease.ExecutionID,
			Tenant:      a.lease.Tenant,
			Kind:        a.lease.Kind,
			Queue:       a.lease.Queue,
			Payload:     a.lease.Payload,
			Attempt:     a.lease.Attempt,
			MaxAttempts: a.lease.MaxAttempts,
		}
		a.flow = newFlow(a)
		job.flow = a.flow
		a.log.Debug("attempt started")
		go func() { done <- a.call(runCtx, h, job) }()
		fault.Point(fault.WorkerHandlerStarted)
	}

	heartbeat := time.NewTicker(w.cfg.HeartbeatInterval)
	defer heartbeat.Stop()
	var cancelCheck <-chan time.Time
	if w.cfg.CancelCheckInterval > 0 {
		t := time.NewTicker(w.cfg.CancelCheckInterval)
		defer t.Stop()
		cancelCheck = t.C
	}
	lease := LeaseWatch{Log: a.log, Ticker: heartbeat, Cancel: cancel}
	for {
		select {
		case <-cancelCheck:
			if lease.Lost || lease.Cancelled {
				continue
			}
			switch requested, gone := a.cancelRequested(ctx); {
			case gone:
				lease.Lose("execution deleted: cancelling the handler")
			case requested:
				lease.CancelRequested()
			}

		case out := <-done:
			fault.Point(fault.WorkerHandlerReturned)
			took := time.Since(start)
			a.handlerReturned()
			a.traceReturned(out.err)
			// A suspended flow's lease ended with its Suspend: the
			// heartbeats that found it gone since are no loss.
			if st := a.flow.suspension(); st != "" {
				return a.suspended(st, out), took
			}
			if lease.Lost {
				a.log.Info("attempt ended after its lease was lost; nothing written", "err", out.err)
				return OutcomeLeaseLost, took
			}
			return a.settle(ctx, context.Cause(runCtx), out), took

		case <-heartbeat.C:
			if lease.Lost || a.flow.suspension() != "" {
				continue
			}
			// A failed heartbeat is logged and the handler runs on
			// (expired false); the remote worker (package latch) passes
			// the lease's end.
			cancelRequested, err := a.heartbeat(ctx)
			lease.Heartbeat(cancelRequested, err, false)

		case <-w.abandon:
			// A hard stop gave up waiting for this handler; it keeps running
			// but nothing it returns will be written.
			w.abandons.Add(1)
			took := time.Since(start)
			if lease.Lost {
				return OutcomeLeaseLost, took
			}
			return a.writeRelease(ctx), took
		}
	}
}

// call runs the handler (CallHandler).
func (a *attempt) call(ctx context.Context, h Handler, job *Job) outcome {
	result, err := CallHandler(a.log, func() (json.RawMessage, error) { return h(ctx, job) })
	return outcome{result: result, err: err}
}

// suspended is the outcome of an attempt whose flow suspended: the
// Suspend already ended the lease, so nothing more is written.
func (a *attempt) suspended(st store.Status, out outcome) Outcome {
	if !errors.Is(out.err, ErrSuspended) {
		a.log.Warn("the handler went on after its flow suspended; what it returned is not recorded",
			"err", out.err)
	}
	if st == store.StatusCancelled {
		a.log.Info("execution cancelled")
		return OutcomeCancelled
	}
	return OutcomeSuspended
}

// heartbeat extends the lease and reports whether a cancel was requested.
func (a *attempt) heartbeat(ctx context.Context) (cancelRequested bool, err error) {
	hctx, cancel := a.storeCtx(ctx)
	defer cancel()
	res, err := a.w.cfg.Store.Heartbeat(hctx, &store.HeartbeatParams{
		ExecutionID:   a.lease.ExecutionID,
		Tenant:        a.lease.Tenant,
		Token:         a.lease.Token,
		LeaseDuration: a.w.cfg.LeaseDuration,
		Now:           a.w.cfg.Now(),
	})
	fault.Point(fault.WorkerHeartbeatCommitted)
	if err != nil {
		return false, err
	}
	a.expires.Store(res.ExpiresAt.UnixNano())
	return res.CancelRequested, nil
}

// cancelRequested reads the execution to learn, between heartbeats,
// whether a user asked to cancel it or deleted it. A failed read says
// neither: the next heartbeat will tell.
func (a *attempt) cancelRequested(ctx context.Context) (requested, gone bool) {
	rctx, cancel := a.storeCtx(ctx)
	defer cancel()
	e, err := a.w.cfg.Store.Get(rctx, &store.GetParams{ID: a.lease.ExecutionID})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false, true
	case err != nil:
		return false, false
	}
	return e.CancelRequested, false
}

// settle records how the attempt ended and returns the outcome. cause is
// the handler context's cancellation cause, nil if it was not cancelled.
func (a *attempt) settle(ctx context.Context, cause error, out outcome) Outcome {
	switch {
	case errors.Is(cause, ErrCancelled):
		// The store turns a failure after a cancel request into cancelled.
		msg := "cancelled"
		if out.err != nil && !errors.Is(out.err, context.Canceled) && !errors.Is(out.err, ErrCancelled) {
			msg = "cancelled: " + out.err.Error()
		}
		return a.writeFail(ctx, msg, false, 0)

	case errors.Is(cause, ErrShutdown):
		if out.err == nil {
			// Finished despite the shutdown: the work is done, keep it.
			return a.writeComplete(ctx, out.result)
		}
		return a.writeRelease(ctx)

	case out.err == nil:
		return a.writeComplete(ctx, out.result)

	case errors.Is(cause, ErrTimeout):
		msg := fmt.Sprintf("timed out after %ds: %v", a.lease.TimeoutSeconds, out.err)
		return a.writeFail(ctx, msg, true, a.w.cfg.Backoff(a.lease.Attempt))

	case IsPermanent(out.err):
		return a.writeFail(ctx, out.err.Error(), false, 0)

	default:
		delay, ok := RetryAfterDelay(out.err)
		if !ok {
			delay = a.w.cfg.Backoff(a.lease.Attempt)
		}
		return a.writeFail(ctx, out.err.Error(), true, delay)
	}
}

// writeComplete writes Complete and returns the outcome. A result the
// tenant's storage budget has no room for fails the attempt instead, for
// good: the work is done, and running it again would only do it again.
func (a *attempt) writeComplete(ctx context.Context, result json.RawMessage) Outcome {
	err := a.write(ctx, "complete", func(ctx context.Context) error { return a.complete(ctx, result) })
	switch {
	case errors.Is(err, store.ErrStorageExceeded):
		return a.writeFail(ctx, fmt.Sprintf("the result (%d bytes) was not stored: %v", len(result), err), false, 0)
	case err != nil:
		return unwritten(err)
	}
	return OutcomeSucceeded
}

// writeFail writes Fail and returns the outcome the store's answer makes.
func (a *attempt) writeFail(ctx context.Context, msg string, retry bool, delay time.Duration) Outcome {
	var status store.Status
	err := a.write(ctx, "fail", func(ctx context.Context) (err error) {
		status, err = a.fail(ctx, msg, retry, delay)
		return err
	})
	if err != nil {
		return unwritten(err)
	}
	return failOutcome(status)
}

// writeRelease writes Release and returns the outcome: released, or
// cancelled when a cancel was requested.
func (a *attempt) writeRelease(ctx context.Context) Outcome {
	var status store.Status
	err := a.write(ctx, "release", func(ctx context.Context) (err error) {
		status, err = a.release(ctx)
		return err
	})
	switch {
	case err != nil:
		return unwritten(err)
	case status == store.StatusCancelled:
		return OutcomeCancelled
	}
	return OutcomeReleased
}

func (a *attempt) complete(ctx context.Context, result json.RawMessage) error {
	_, err := a.w.cfg.Store.Complete(ctx, &store.CompleteParams{
		ExecutionID: a.lease.ExecutionID,
		Tenant:      a.lease.Tenant,
		Token:       a.lease.Token,
		Result:      result,
		Now:         a.w.cfg.Now(),
	})
	if err == nil {
		a.log.Debug("attempt succeeded")
	}
	return err
}

func (a *attempt) fail(ctx context.Context, msg string, retry bool, delay time.Duration) (store.Status, error) {
	exec, err := a.w.cfg.Store.Fail(ctx, &store.FailParams{
		ExecutionID: a.lease.ExecutionID,
		Tenant:      a.lease.Tenant,
		Token:       a.lease.Token,
		Error:       msg, // cut by the store (store.MaxErrorBytes)
		Retry:       retry,
		RetryDelay:  delay,
		Now:         a.w.cfg.Now(),
	})
	if err != nil {
		return "", err
	}
	switch exec.Status {
	case store.StatusCancelled:
		a.log.Info("execution cancelled")
	case store.StatusFailed:
		a.log.Warn("execution failed", "err", msg)
	default:
		a.log.Info("attempt failed; will retry", "err", msg, "status", exec.Status, "run_at", exec.RunAt)
	}
	return exec.Status, nil
}

func (a *attempt) release(ctx context.Context) (store.Status, error) {
	exec, err := a.w.cfg.Store.Release(ctx, &store.ReleaseParams{
		ExecutionID: a.lease.ExecutionID,
		Tenant:      a.lease.Tenant,
		Token:       a.lease.Token,
		Now:         a.w.cfg.Now(),
	})
	if err != nil {
		return "", err
	}
	a.log.Info("lease released")
	return exec.Status, nil
}

// unwritten is the outcome of a settling write that failed with err.
func unwritten(err error) Outcome {
	if errors.Is(err, store.ErrLeaseLost) || errors.Is(err, store.ErrNotFound) {
		return OutcomeLeaseLost
	}
	return OutcomeUnrecorded
}

// write performs one settling write, retrying failures that may pass
// (a busy or briefly unreachable store) until the lease would end. It
// returns nil once the write succeeded, else the error it gave up on.
func (a *attempt) write(ctx context.Context, op string, f func(context.Context) error) (gaveUp error) {
	ctx, end := a.traceWrite(ctx, op)
	defer func() { end(gaveUp) }()
	wctx, cancel := a.storeCtx(ctx)
	defer cancel()
	wait := 50 * time.Millisecond
	for {
		err := f(wctx)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, store.ErrLeaseLost), errors.Is(err, store.ErrNotFound):
			a.log.Info("lease lost before the attempt was recorded; nothing written", "op", op, "err", err)
			return err
		case store.IsRefusal(err):
			// A business answer of the store: repeating the call cannot
			// change it.
			a.log.Error("store refused the write", "op", op, "err", err)
			return err
		}
		a.log.Warn("write failed; retrying", "op", op, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-wctx.Done():
			t.Stop()
			a.log.Error("giving up: the lease ends before the write succeeded", "op", op, "err", err)
			return err
		case <-t.C:
		}
		wait = min(2*wait, maxWriteBackoff)
	}
}

// storeCtx returns the context of a store call for this attempt: never
// cancelled with the handler's context, and due when the lease ends (at
// least minWriteTimeout from now), so a stale worker does not write past its
// lease and a shutdown does not drop a result.
func (a *attempt) storeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	left := max(time.Unix(0, a.expires.Load()).Sub(a.w.cfg.Now()), minWriteTimeout)
	return context.WithTimeout(context.WithoutCancel(ctx), left)
}
