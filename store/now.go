package store

import "time"

// Now is t, or the wall clock when t is zero: the rule of every Params'
// Now (see Store). A backend that keeps times at a coarser precision
// truncates the answer itself.
func Now(t time.Time) time.Time {
	if t.IsZero() {
		return time.Now()
	}
	return t
}
