package store

import (
	"fmt"
	"time"
)

// RateLimit is a tenant's token bucket for one rate key (I7): executions of
// the tenant with that RateKey start at most Burst + Rate·W/Per times over
// any window of W. Like concurrency keys, rate keys are scoped per tenant.
// An execution whose rate key has no limit starts freely.
//
// The bucket is a GCRA: a start is allowed at t when TAT - (Burst-1)·I <= t,
// where I = Per/Rate is the emission interval; it then sets TAT to
// max(TAT, t) + I. Backends keep TAT with the limit and update it inside
// Claim, in the same step that starts the execution.
type RateLimit struct {
	Tenant string
	Key    string
	Rate   int           // starts per Per, at least 1
	Per    time.Duration // at least 1ms
	Burst  int           // at least 1
	// TAT is the bucket's theoretical arrival time (zero: never used).
	TAT       time.Time
	CreatedAt time.Time
	UpdatedAt time.Time
}

// DefaultBurst is a rate limit's burst when none is given: starts are spaced
// evenly, never two within one emission interval.
const DefaultBurst = 1

// Interval is the emission interval Per/Rate: the bucket gains one start
// per interval.
func (r *RateLimit) Interval() time.Duration {
	return r.Per / time.Duration(max(r.Rate, 1))
}

// Allow reports whether a start at now fits the bucket whose theoretical
// arrival time is tat, and the bucket's TAT after that start.
func (r *RateLimit) Allow(tat, now time.Time) (ok bool, next time.Time) {
	iv := r.Interval()
	if tat.Add(-time.Duration(r.Burst-1) * iv).After(now) {
		return false, tat
	}
	if tat.Before(now) {
		tat = now
	}
	return true, tat.Add(iv)
}

// FreeAt is the first time at or after now when the bucket whose theoretical
// arrival time is tat allows a start.
func (r *RateLimit) FreeAt(tat, now time.Time) time.Time {
	t := tat.Add(-time.Duration(r.Burst-1) * r.Interval())
	if t.Before(now) {
		return now
	}
	return t
}

// Validate checks a limit's settings.
func (r *RateLimit) Validate() error {
	switch {
	case r.Tenant == "" || r.Key == "":
		return fmt.Errorf("%w: rate limit needs a tenant and a key", ErrInvalid)
	case r.Rate < 1:
		return fmt.Errorf("%w: rate limit %q: rate %d below 1", ErrInvalid, r.Key, r.Rate)
	case r.Per < time.Millisecond:
		return fmt.Errorf("%w: rate limit %q: per %s below 1ms", ErrInvalid, r.Key, r.Per)
	case r.Burst < 1:
		return fmt.Errorf("%w: rate limit %q: burst %d below 1", ErrInvalid, r.Key, r.Burst)
	}
	return nil
}

// PutRateLimitParams are the arguments of Store.PutRateLimit. Limit holds
// the tenant, key and settings; its TAT and times are ignored.
type PutRateLimitParams struct {
	Limit RateLimit
	Now   time.Time
}

// GetRateLimitParams are the arguments of Store.GetRateLimit.
type GetRateLimitParams struct {
	Tenant string
	Key    string
}

// DeleteRateLimitParams are the arguments of Store.DeleteRateLimit.
type DeleteRateLimitParams struct {
	Tenant string
	Key    string
}
