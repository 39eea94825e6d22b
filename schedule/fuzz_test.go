package schedule

import (
	"testing"
	"time"
)

// FuzzParse checks that Parse never panics and that, for a timing it
// accepts, Next is strictly increasing, whole seconds and UTC for a few
// steps from several start times.
func FuzzParse(f *testing.F) {
	seeds := []struct {
		cron  string
		every time.Duration
		tz    string
		start int64
	}{
		{"* * * * *", 0, "", 0},
		{"*/15 * * * *", 0, "America/New_York", 1772949600},
		{"30 2 * * *", 0, "America/New_York", 1772949600},
		{"30 1 * * *", 0, "America/New_York", 1793502000},
		{"0 0-3 * * *", 0, "Europe/Berlin", 1774738800},
		{"0 * * * *", 0, "Australia/Lord_Howe", 1790861400},
		{"*/7 */5 1-3 * * *", 0, "Australia/Lord_Howe", 1775307600},
		{"0 0 29 2 *", 0, "", 4070908800},
		{"0 12 29 2 *", 0, "Europe/Berlin", 4102444800},
		{"0 0 30 12 *", 0, "Pacific/Apia", 1325073600},
		{"0 0 * * *", 0, "America/Sao_Paulo", 1541289600},
		{"59 59 23 31 12 *", 0, "Antarctica/Troll", -1},
		{"0 0 13 * fri", 0, "Asia/Kathmandu", 1},
		{"@yearly", 0, "", 0},
		{"@hourly", 0, "Asia/Tehran", 1616272200},
		{"@every 5m", 0, "", 0},
		{"TZ=UTC", 0, "", 0},
		{"CRON_TZ=Europe/Berlin 0 * * * *", 0, "", 0},
		{", * * * * *", 0, "", 0},
		{"*-5/0 * * * *", 0, "", 0},
		{"0 0 30 2 *", 0, "", 0},
		{"0 0 * * 7", 0, "", 0},
		{"", 15 * time.Minute, "", 1772582400},
		{"", 1500 * time.Millisecond, "", 0},
		{"", 7 * time.Hour, "Local", 0},
		{"", MaxEvery, "UTC", -86400},
		{"* * * * *", time.Second, "", 0},
	}
	for _, s := range seeds {
		f.Add(s.cron, int64(s.every), s.tz, s.start)
	}
	starts := []time.Time{
		time.Date(2026, 3, 8, 6, 59, 59, 999999999, time.UTC),             // New York's jump
		time.Date(2026, 11, 1, 6, 30, 0, 0, time.UTC),                     // New York's repeat
		time.Date(2026, 10, 3, 15, 20, 0, 0, time.UTC),                    // Lord Howe's jump
		time.Date(2099, 12, 31, 23, 59, 59, 0, time.UTC),                  // 2100 is not leap
		time.Date(1969, 12, 31, 23, 59, 59, 500, time.UTC),                // before the epoch
		time.Date(2028, 12, 31, 12, 0, 0, 0, time.FixedZone("", -5*3600)), // Go's bounds quirk
	}
	f.Fuzz(func(t *testing.T, cron string, every int64, tz string, start int64) {
		s, err := Parse(cron, time.Duration(every), tz)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if s.Location() == nil {
			t.Fatal("nil Location")
		}
		// A start from the input, kept to years 1900-2200.
		const lo, span = -2208988800, 300 * 365 * 24 * 3600
		from := time.Unix(lo+(start%span+span)%span, (start>>32)%1e9)
		for _, at := range append([]time.Time{from}, starts...) {
			for range 5 {
				next := s.Next(at)
				if next.IsZero() {
					t.Fatalf("Parse(%q, %v, %q): Next(%v) is the zero time", cron, time.Duration(every), tz, at)
				}
				if !next.After(at) || next.Location() != time.UTC || next.Nanosecond() != 0 {
					t.Fatalf("Parse(%q, %v, %q): Next(%v) = %v", cron, time.Duration(every), tz, at, next)
				}
				at = next
			}
		}
	})
}
