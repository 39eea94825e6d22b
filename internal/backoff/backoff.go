// Package backoff computes retry delays: exponential growth with full jitter,
// capped, so retries of many failed executions spread out instead of
// arriving together.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Defaults used by Delay.
const (
	Base = 1 * time.Second
	Max  = 10 * time.Minute
)

// Delay returns the wait before the retry that follows failed attempt n
// (n >= 1): a random duration in [d/2, d] where d = Base·2^(n-1), capped at
// Max. Half the delay is kept so a retry never comes back at once.
func Delay(n int) time.Duration {
	return DelayWith(n, Base, Max, rand.Float64())
}

// DelayWith is Delay with explicit bounds and a random number r in [0,1).
func DelayWith(n int, base, limit time.Duration, r float64) time.Duration {
	if n < 1 {
		n = 1
	}
	d := base
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	if d > limit {
		d = limit
	}
	half := d / 2
	return half + time.Duration(r*float64(d-half))
}
