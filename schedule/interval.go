package schedule

import (
	"math/bits"
	"time"
)

// day is the length of a calendar day on the wall clock, in seconds.
const day = 24 * 3600

// MinInterval returns the shortest time between two consecutive ticks of
// the schedule: the interval itself for every; for a cron expression, the
// shortest gap between two of the wall-clock times of day its second,
// minute and hour fields match, counting the gap from a day's last to the
// next day's first (so "0 0,23 * * *" answers 1h whatever its day fields,
// and a 5-field expression at least 1m). It is measured on the wall clock:
// a change of the clocks for daylight saving time may bring two ticks
// closer once. Servers use it to refuse schedules that tick more often
// than they allow.
func (s *Spec) MinInterval() time.Duration {
	if s.every != 0 {
		return time.Duration(s.every) * time.Second
	}
	const star = 1 << 63 // robfig's "the field was *" flag, not a value
	secs := s.cron.Second &^ star
	mins := s.cron.Minute &^ star
	hours := s.cron.Hour &^ star
	first, prev, gap := -1, -1, day
	for h := range 24 {
		if hours&(1<<h) == 0 {
			continue
		}
		for m := range 60 {
			if mins&(1<<m) == 0 {
				continue
			}
			for sb := secs; sb != 0; sb &= sb - 1 {
				t := h*3600 + m*60 + bits.TrailingZeros64(sb)
				if first < 0 {
					first = t
				} else {
					gap = min(gap, t-prev)
				}
				prev = t
			}
		}
	}
	if first >= 0 {
		gap = min(gap, day-prev+first)
	}
	return time.Duration(gap) * time.Second
}
