package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/latch-run/latch/store"
)

// Causes a handler's context is cancelled with. Read them with
// context.Cause(ctx); ctx.Err() only says context.Canceled or
// context.DeadlineExceeded.
var (
	// ErrCancelled: a user cancelled the execution. The attempt ends
	// cancelled and is never retried.
	ErrCancelled = errors.New("engine: execution cancelled")

	// ErrLeaseLost: the worker no longer holds the lease (it expired and was
	// rescued, or the execution was force deleted). The worker writes nothing
	// more for the attempt. It wraps store.ErrLeaseLost.
	ErrLeaseLost = fmt.Errorf("engine: %w", store.ErrLeaseLost)

	// ErrShutdown: the worker is stopping and its soft shutdown time ran out.
	// The lease is released, so the execution runs again elsewhere without
	// the attempt being counted.
	ErrShutdown = errors.New("engine: worker shut down")

	// ErrTimeout: the attempt ran longer than the execution's TimeoutSeconds.
	// It is retried while attempts remain.
	ErrTimeout = errors.New("engine: execution timed out")
)

// Permanent marks err as not worth retrying: the attempt fails and the
// execution becomes failed even if attempts remain. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err, or an error it wraps, was marked with
// Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// RetryAfter marks err as retryable after d instead of the default
// exponential backoff (an HTTP 429's Retry-After, say). Whether attempts
// remain is still the store's decision. RetryAfter(nil, d) is nil; d < 0 is 0.
func RetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &retryAfterError{err: err, delay: max(d, 0)}
}

type retryAfterError struct {
	err   error
	delay time.Duration
}

func (e *retryAfterError) Error() string { return e.err.Error() }
func (e *retryAfterError) Unwrap() error { return e.err }

// RetryAfterDelay returns the delay err was marked with by RetryAfter, if any.
func RetryAfterDelay(err error) (time.Duration, bool) {
	var r *retryAfterError
	if errors.As(err, &r) {
		return r.delay, true
	}
	return 0, false
}
