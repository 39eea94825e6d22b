package schedule

import (
	"testing"
	"time"
)

func TestMinInterval(t *testing.T) {
	for _, c := range []struct {
		cron  string
		every time.Duration
		want  time.Duration
	}{
		{every: time.Second, want: time.Second},
		{every: 15 * time.Minute, want: 15 * time.Minute},
		{cron: "* * * * * *", want: time.Second},
		{cron: "*/5 * * * * *", want: 5 * time.Second},
		{cron: "0,1 * * * * *", want: time.Second},
		{cron: "0,30 * * * * *", want: 30 * time.Second},
		{cron: "* * * * *", want: time.Minute},
		{cron: "*/15 * * * *", want: 15 * time.Minute},
		{cron: "0 * * * *", want: time.Hour},
		{cron: "@hourly", want: time.Hour},
		{cron: "@daily", want: 24 * time.Hour},
		{cron: "0 0 1 * *", want: 24 * time.Hour},
		// The gap across midnight counts: 23:59:59 then 00:00:00.
		{cron: "59 59 23 * * *", want: 24 * time.Hour},
		{cron: "0,59 0,59 0,23 * * *", want: time.Second},
		{cron: "0 0,23 * * *", want: time.Hour},
		{cron: "30 9-17 * * mon-fri", want: time.Hour},
	} {
		s, err := Parse(c.cron, c.every, "Europe/Berlin")
		if err != nil {
			t.Fatalf("Parse(%q, %v): %v", c.cron, c.every, err)
		}
		if got := s.MinInterval(); got != c.want {
			t.Errorf("MinInterval of cron %q every %v = %v, want %v", c.cron, c.every, got, c.want)
		}
	}
}

// TestMinIntervalMatchesNext checks MinInterval against the ticks Next
// gives over two days, for expressions whose days all match.
func TestMinIntervalMatchesNext(t *testing.T) {
	for _, cron := range []string{"*/7 * * * * *", "0 */13 * * * *", "5,50 1-2 3,4 * * *", "0 0 0,12,20 * * *"} {
		s, err := Parse(cron, 0, "")
		if err != nil {
			t.Fatal(err)
		}
		from := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		shortest := time.Duration(1 << 62)
		prev := s.Next(from)
		for next := s.Next(prev); next.Before(from.Add(48 * time.Hour)); next = s.Next(next) {
			shortest = min(shortest, next.Sub(prev))
			prev = next
		}
		if got := s.MinInterval(); got != shortest {
			t.Errorf("MinInterval of %q = %v, but Next ticks %v apart", cron, got, shortest)
		}
	}
}
