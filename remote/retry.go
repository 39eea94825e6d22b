package remote

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"time"
)

// RetryPolicy is how a Client repeats a call that is safe to repeat:
//
//   - a 429 answer with Retry-After (the server refused it and did nothing),
//     after Retry-After;
//   - a connection that failed before the request was written (nothing was
//     sent), after a backoff;
//   - for an idempotent call only (GETs, PUTs, cancels, pauses and resumes,
//     tenant updates, submits, the lease-fenced worker calls, a trigger or a
//     signal with an idempotency key): a 503 answer, after its Retry-After
//     or a backoff, and a connection that failed at any point.
//
// Backoffs grow from Base, doubling per retry up to Max, each a random point
// in its upper half. A Retry-After longer than MaxRetryAfter ends the
// retries. The call's context bounds them all: no wait outlives it.
type RetryPolicy struct {
	MaxRetries    int // retries after the first send; 0 sends once
	Base          time.Duration
	Max           time.Duration
	MaxRetryAfter time.Duration
}

// DefaultRetryPolicy is a Client's policy unless WithRetry sets another:
// 4 retries, backoffs from 200ms up to 5s, a Retry-After of up to 30s.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxRetries: 4, Base: 200 * time.Millisecond, Max: 5 * time.Second, MaxRetryAfter: 30 * time.Second}
}

// backoff is the wait before retry number attempt+1.
func (p RetryPolicy) backoff(attempt int) time.Duration {
	d := p.Base
	for i := 0; i < attempt && d < p.Max; i++ {
		d *= 2
	}
	d = min(d, p.Max)
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d/2+1)
}

// next says whether a call that failed with err on its attempt-th send
// (from 0) is sent again, and after how long.
func (p RetryPolicy) next(attempt int, err error, idempotent bool) (time.Duration, bool) {
	if attempt >= p.MaxRetries {
		return 0, false
	}
	if e, ok := asError(err); ok {
		switch {
		case e.Status == http.StatusTooManyRequests && e.retryAfterSet:
			return e.RetryAfter, e.RetryAfter <= p.MaxRetryAfter
		case e.Status == http.StatusServiceUnavailable && idempotent:
			if e.retryAfterSet {
				return e.RetryAfter, e.RetryAfter <= p.MaxRetryAfter
			}
			return p.backoff(attempt), true
		}
		return 0, false
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return 0, false
	}
	if idempotent || notSent(err) {
		return p.backoff(attempt), true
	}
	return 0, false
}

// notSent reports whether err is a failure to connect: the request was
// never written, so sending it again cannot do anything twice.
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
