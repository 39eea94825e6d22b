package backoff

import (
	"testing"
	"time"
)

func TestDelayGrowsAndIsCapped(t *testing.T) {
	cases := []struct {
		n      int
		lo, hi time.Duration
	}{
		{0, 500 * time.Millisecond, time.Second},
		{1, 500 * time.Millisecond, time.Second},
		{2, time.Second, 2 * time.Second},
		{4, 4 * time.Second, 8 * time.Second},
		{40, Max / 2, Max},
	}
	for _, c := range cases {
		for _, r := range []float64{0, 0.5, 0.999} {
			d := DelayWith(c.n, Base, Max, r)
			if d < c.lo || d > c.hi {
				t.Errorf("DelayWith(%d, r=%v) = %v, want in [%v, %v]", c.n, r, d, c.lo, c.hi)
			}
		}
	}
	if DelayWith(3, Base, Max, 0) >= DelayWith(3, Base, Max, 0.9) {
		t.Error("jitter does not change the delay")
	}
}
