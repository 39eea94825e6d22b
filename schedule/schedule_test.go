package schedule

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// utc parses an RFC 3339 time, or "2006-01-02T15:04:05" taken as UTC.
func utc(t testing.TB, s string) time.Time {
	t.Helper()
	if !strings.HasSuffix(s, "Z") && !strings.ContainsAny(s[10:], "+-") {
		s += "Z"
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// mustParse parses a timing the test expects to be accepted.
func mustParse(t testing.TB, cron string, every time.Duration, tz string) *Spec {
	t.Helper()
	s, err := Parse(cron, every, tz)
	if err != nil {
		t.Fatalf("Parse(%q, %v, %q): %v", cron, every, tz, err)
	}
	return s
}

// ticks returns the first n ticks of s after from, each checked to be a
// whole second in UTC and after the one before.
func ticks(t testing.TB, s *Spec, from time.Time, n int) []time.Time {
	t.Helper()
	var out []time.Time
	at := from
	for range n {
		next := s.Next(at)
		checkTick(t, at, next)
		out = append(out, next)
		at = next
	}
	return out
}

// between returns the ticks of s in [from, to).
func between(t testing.TB, s *Spec, from, to time.Time) []time.Time {
	t.Helper()
	var out []time.Time
	at := from.Add(-time.Second)
	for {
		next := s.Next(at)
		checkTick(t, at, next)
		if !next.Before(to) {
			return out
		}
		out = append(out, next)
		at = next
	}
}

// checkTick checks the rules every result of Next obeys.
func checkTick(t testing.TB, after, next time.Time) {
	t.Helper()
	switch {
	case next.IsZero():
		t.Fatalf("Next(%v) is the zero time", after)
	case !next.After(after):
		t.Fatalf("Next(%v) = %v, not after it", after, next)
	case next.Location() != time.UTC:
		t.Fatalf("Next(%v) = %v, not in UTC", after, next)
	case next.Nanosecond() != 0:
		t.Fatalf("Next(%v) = %v, not a whole second", after, next)
	}
}

// formatAll formats times for comparison in failure messages.
func formatAll(ts []time.Time) string {
	var b strings.Builder
	for i, x := range ts {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(x.Format("2006-01-02T15:04:05Z"))
	}
	return b.String()
}

func TestNextCron(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, cron, tz, from string
		want                 []string
	}{
		{"5-field every minute", "* * * * *", "", "2026-01-01T10:00:00",
			[]string{"2026-01-01T10:01:00", "2026-01-01T10:02:00", "2026-01-01T10:03:00"}},
		{"5-field fraction of a second", "* * * * *", "", "2026-01-01T10:00:59.999",
			[]string{"2026-01-01T10:01:00", "2026-01-01T10:02:00"}},
		{"5-field on a tick is strictly after", "30 4 * * *", "", "2026-01-01T04:30:00",
			[]string{"2026-01-02T04:30:00", "2026-01-03T04:30:00"}},
		{"5-field just before a tick", "30 4 * * *", "", "2026-01-01T04:29:59.5",
			[]string{"2026-01-01T04:30:00", "2026-01-02T04:30:00"}},
		{"6-field seconds", "*/20 * * * * *", "", "2026-01-01T10:00:00",
			[]string{"2026-01-01T10:00:20", "2026-01-01T10:00:40", "2026-01-01T10:01:00"}},
		{"6-field fixed second", "15 30 4 * * *", "", "2026-01-01T00:00:00",
			[]string{"2026-01-01T04:30:15", "2026-01-02T04:30:15"}},
		{"list, range and step", "0 9-17/4,20 * * *", "", "2026-01-01T00:00:00",
			[]string{"2026-01-01T09:00:00", "2026-01-01T13:00:00", "2026-01-01T17:00:00", "2026-01-01T20:00:00", "2026-01-02T09:00:00"}},
		{"start/step", "5/20 * * * *", "", "2026-01-01T00:00:00",
			[]string{"2026-01-01T00:05:00", "2026-01-01T00:25:00", "2026-01-01T00:45:00", "2026-01-01T01:05:00"}},
		{"names", "0 0 1 JAN,jul *", "", "2026-01-01T00:00:00",
			[]string{"2026-07-01T00:00:00", "2027-01-01T00:00:00"}},
		{"day-of-week names", "0 12 * * mon-wed", "", "2026-01-01T00:00:00", // a Thursday
			[]string{"2026-01-05T12:00:00", "2026-01-06T12:00:00", "2026-01-07T12:00:00", "2026-01-12T12:00:00"}},
		{"day-of-month or day-of-week", "0 0 13 * 5", "", "2026-02-01T00:00:00",
			[]string{"2026-02-06T00:00:00", "2026-02-13T00:00:00", "2026-02-20T00:00:00", "2026-02-27T00:00:00", "2026-03-06T00:00:00", "2026-03-13T00:00:00"}},
		{"question mark", "0 0 ? * sun", "", "2026-01-01T00:00:00",
			[]string{"2026-01-04T00:00:00", "2026-01-11T00:00:00"}},
		{"surrounding white space", "  0\t0 * * *  ", "", "2026-01-01T00:00:00",
			[]string{"2026-01-02T00:00:00"}},
		{"@yearly", "@yearly", "", "2026-06-01T00:00:00",
			[]string{"2027-01-01T00:00:00", "2028-01-01T00:00:00"}},
		{"@annually", "@annually", "", "2026-06-01T00:00:00",
			[]string{"2027-01-01T00:00:00"}},
		{"@monthly", "@monthly", "", "2026-01-15T00:00:00",
			[]string{"2026-02-01T00:00:00", "2026-03-01T00:00:00"}},
		{"@weekly", "@weekly", "", "2026-01-01T00:00:00",
			[]string{"2026-01-04T00:00:00", "2026-01-11T00:00:00"}},
		{"@daily", "@daily", "", "2026-01-01T00:00:00",
			[]string{"2026-01-02T00:00:00", "2026-01-03T00:00:00"}},
		{"@midnight", "@midnight", "", "2026-01-01T12:00:00",
			[]string{"2026-01-02T00:00:00"}},
		{"@hourly", "@hourly", "", "2026-01-01T12:30:00",
			[]string{"2026-01-01T13:00:00", "2026-01-01T14:00:00"}},
		{"@daily in a zone", "@daily", "Asia/Tokyo", "2026-01-01T00:00:00",
			[]string{"2026-01-01T15:00:00", "2026-01-02T15:00:00"}},
		{"half-hour zone", "0 9 * * *", "Asia/Kolkata", "2026-01-01T00:00:00",
			[]string{"2026-01-01T03:30:00", "2026-01-02T03:30:00"}},
		{"zone UTC by name", "0 9 * * *", "UTC", "2026-01-01T00:00:00",
			[]string{"2026-01-01T09:00:00"}},
		{"29 February", "0 0 29 2 *", "", "2026-01-01T00:00:00",
			[]string{"2028-02-29T00:00:00", "2032-02-29T00:00:00"}},
		// 2100 is not a leap year: robfig alone returns the zero time here.
		{"29 February across 2100", "0 0 29 2 *", "", "2097-01-01T00:00:00",
			[]string{"2104-02-29T00:00:00", "2108-02-29T00:00:00"}},
		{"29 February across 2100, by absolute time", "0 * 29 2 *", "Europe/Berlin", "2096-02-29T23:00:00",
			[]string{"2104-02-28T23:00:00", "2104-02-29T00:00:00"}},
		{"before 1970", "0 0 * * *", "", "1969-12-31T12:00:00",
			[]string{"1970-01-01T00:00:00", "1970-01-02T00:00:00"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mustParse(t, tt.cron, 0, tt.tz)
			var want []time.Time
			for _, w := range tt.want {
				want = append(want, utc(t, w))
			}
			got := ticks(t, s, utc(t, tt.from), len(want))
			if formatAll(got) != formatAll(want) {
				t.Errorf("ticks of %q after %s:\n got %s\nwant %s", tt.cron, tt.from, formatAll(got), formatAll(want))
			}
		})
	}
}

func TestNextAcceptsAnyLocation(t *testing.T) {
	t.Parallel()
	s := mustParse(t, "0 12 * * *", 0, "Europe/Berlin")
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	// 2026-01-01 06:00 EST is 11:00 UTC, 12:00 in Berlin: the tick itself.
	after := time.Date(2026, 1, 1, 6, 0, 0, 0, ny)
	if got, want := s.Next(after), utc(t, "2026-01-02T11:00:00"); !got.Equal(want) || got.Location() != time.UTC {
		t.Errorf("Next(%v) = %v, want %v", after, got, want)
	}
}

// NextTick answers the Spec's Next of a timing Parse accepts, and Parse's
// error for one it refuses.
func TestNextTick(t *testing.T) {
	t.Parallel()
	after := utc(t, "2026-01-01T10:07:00")
	if got, err := NextTick("0 12 * * *", 0, "Europe/Berlin", after); err != nil || !got.Equal(utc(t, "2026-01-01T11:00:00")) {
		t.Errorf("NextTick of a cron: %v, %v", got, err)
	}
	if got, err := NextTick("", 15*time.Minute, "", after); err != nil || !got.Equal(utc(t, "2026-01-01T10:15:00")) {
		t.Errorf("NextTick of an interval: %v, %v", got, err)
	}
	if got, err := NextTick("0 0 30 2 *", 0, "", after); err == nil || !got.IsZero() {
		t.Errorf("NextTick of a cron that never fires: %v, %v", got, err)
	}
}

func TestNextEvery(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		every time.Duration
		tz    string
		from  string
		want  []string
	}{
		{"15m on the quarter hours", 15 * time.Minute, "", "2026-03-04T10:07:31",
			[]string{"2026-03-04T10:15:00", "2026-03-04T10:30:00", "2026-03-04T10:45:00", "2026-03-04T11:00:00"}},
		{"on a tick is strictly after", 15 * time.Minute, "", "2026-03-04T10:15:00",
			[]string{"2026-03-04T10:30:00"}},
		{"just before a tick", 15 * time.Minute, "", "2026-03-04T10:14:59.999999999",
			[]string{"2026-03-04T10:15:00"}},
		{"1s", time.Second, "", "2026-03-04T10:00:00.5",
			[]string{"2026-03-04T10:00:01", "2026-03-04T10:00:02"}},
		{"24h at midnight UTC", 24 * time.Hour, "", "2026-03-04T10:00:00",
			[]string{"2026-03-05T00:00:00", "2026-03-06T00:00:00"}},
		{"timezone has no effect", 24 * time.Hour, "Asia/Tokyo", "2026-03-04T10:00:00",
			[]string{"2026-03-05T00:00:00", "2026-03-06T00:00:00"}},
		{"timezone has no effect across DST", time.Hour, "America/New_York", "2026-03-08T05:30:00",
			[]string{"2026-03-08T06:00:00", "2026-03-08T07:00:00", "2026-03-08T08:00:00"}},
		// 7h does not divide a day: 2026-03-04T00:00:00Z is Unix 1772582400,
		// 70340 intervals of 25200s and 14400s (4h) more.
		{"7h from the epoch", 7 * time.Hour, "", "2026-03-04T00:00:00",
			[]string{"2026-03-04T03:00:00", "2026-03-04T10:00:00", "2026-03-04T17:00:00"}},
		{"before 1970", time.Hour, "", "1969-12-31T22:30:00",
			[]string{"1969-12-31T23:00:00", "1970-01-01T00:00:00", "1970-01-01T01:00:00"}},
		{"366 days", MaxEvery, "", "1970-01-01T00:00:00",
			[]string{"1971-01-02T00:00:00"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mustParse(t, "", tt.every, tt.tz)
			var want []time.Time
			for _, w := range tt.want {
				want = append(want, utc(t, w))
			}
			got := ticks(t, s, utc(t, tt.from), len(want))
			if formatAll(got) != formatAll(want) {
				t.Errorf("ticks of every %v after %s:\n got %s\nwant %s", tt.every, tt.from, formatAll(got), formatAll(want))
			}
			for _, g := range got {
				if g.Unix()%int64(tt.every/time.Second) != 0 {
					t.Errorf("tick %v is not a multiple of %v from the epoch", g, tt.every)
				}
			}
		})
	}
}

func TestLocation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cron  string
		every time.Duration
		tz    string
		want  string
	}{
		{"0 * * * *", 0, "", "UTC"},
		{"0 * * * *", 0, "UTC", "UTC"},
		{"0 * * * *", 0, "Europe/Berlin", "Europe/Berlin"},
		{"", time.Minute, "", "UTC"},
		{"", time.Minute, "Australia/Lord_Howe", "Australia/Lord_Howe"},
	}
	for _, tt := range tests {
		t.Run(tt.cron+tt.tz, func(t *testing.T) {
			t.Parallel()
			if got := mustParse(t, tt.cron, tt.every, tt.tz).Location().String(); got != tt.want {
				t.Errorf("Location() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	t.Parallel()
	const descriptorList = "use one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly"
	tests := []struct {
		name  string
		cron  string
		every time.Duration
		tz    string
		want  string // the whole error message
	}{
		{"neither", "", 0, "", `give a schedule timing: "cron" (such as "0 * * * *") or "every" (such as "15m")`},
		{"blank cron", "  ", 0, "", `give a schedule timing: "cron" (such as "0 * * * *") or "every" (such as "15m")`},
		{"both", "* * * * *", time.Minute, "", `give either "cron" or "every", not both`},
		{"too long", strings.Repeat("1,", 128) + "1 * * * *", 0, "", `cron is 265 bytes long; the limit is 256`},
		{"minute out of range", "61 * * * *", 0, "", `cron "61 * * * *": the minute 61 is out of range (0-59)`},
		{"second out of range", "60 * * * * *", 0, "", `cron "60 * * * * *": the second 60 is out of range (0-59)`},
		{"hour out of range", "0 24 * * *", 0, "", `cron "0 24 * * *": the hour 24 is out of range (0-23)`},
		{"day-of-month zero", "0 0 0 * *", 0, "", `cron "0 0 0 * *": the day-of-month 0 is out of range (1-31)`},
		{"month 13", "0 0 1 13 *", 0, "", `cron "0 0 1 13 *": the month 13 is out of range (1-12)`},
		{"day-of-week 7", "0 0 * * 7", 0, "", `cron "0 0 * * 7": the day-of-week 7 is out of range (0-6; Sunday is 0)`},
		{"huge number", "0 0 99999999999999999999 * *", 0, "", `cron "0 0 99999999999999999999 * *": the day-of-month 99999999999999999999 is out of range (1-31)`},
		{"not a number", "x * * * *", 0, "", `cron "x * * * *": the minute field has "x", which is not a number`},
		{"negative", "-1 * * * *", 0, "", `cron "-1 * * * *": the minute field item "-1" is missing a number`},
		{"plus sign", "+5 * * * *", 0, "", `cron "+5 * * * *": the minute field has "+5", which is not a number`},
		{"bad month name", "0 0 1 foo *", 0, "", `cron "0 0 1 foo *": the month field has "foo", which is neither a number nor a name (jan-dec)`},
		{"bad weekday name", "0 0 * * monday", 0, "", `cron "0 0 * * monday": the day-of-week field has "monday", which is neither a number nor a name (sun-sat)`},
		{"backwards range", "0 5-3 * * *", 0, "", `cron "0 5-3 * * *": the hour range "5-3" runs backwards: 5 is after 3`},
		{"open range", "0 5- * * *", 0, "", `cron "0 5- * * *": the hour field item "5-" is missing a number`},
		{"star range", "*-5 * * * *", 0, "", `cron "*-5 * * * *": the minute field item "*-5" is not valid: a range cannot start with "*"`},
		{"two hyphens", "1-2-3 * * * *", 0, "", `cron "1-2-3 * * * *": the minute field item "1-2-3" has more than one "-"`},
		{"two slashes", "*/2/3 * * * *", 0, "", `cron "*/2/3 * * * *": the minute field item "*/2/3" has more than one "/"`},
		{"step zero", "*/0 * * * *", 0, "", `cron "*/0 * * * *": the minute field item "*/0" has step "0"; a step is a whole number of at least 1`},
		{"empty step", "0 */ * * *", 0, "", `cron "0 */ * * *": the hour field item "*/" has step ""; a step is a whole number of at least 1`},
		{"empty list", ", * * * * *", 0, "", `cron ", * * * * *": the second field "," has an empty item in its list`},
		{"empty list item", "0 1,,2 * * *", 0, "", `cron "0 1,,2 * * *": the hour field "1,,2" has an empty item in its list`},
		{"4 fields", "* * * *", 0, "", `cron "* * * *": it has 4 fields; a cron expression has 5 (minute hour day-of-month month day-of-week) or 6 (second minute hour day-of-month month day-of-week)`},
		{"7 fields", "* * * * * * *", 0, "", `cron "* * * * * * *": it has 7 fields; a cron expression has 5 (minute hour day-of-month month day-of-week) or 6 (second minute hour day-of-month month day-of-week)`},
		{"@every", "@every 5m", 0, "", `cron "@every 5m": @every is not supported; use "every" instead`},
		{"@every without space", "@every5m", 0, "", `cron "@every5m": @every is not supported; use "every" instead`},
		{"unknown descriptor", "@reboot", 0, "", `cron "@reboot" is not a known descriptor; ` + descriptorList},
		{"descriptor with more", "@daily 5", 0, "", `cron "@daily 5" is not a known descriptor; ` + descriptorList},
		{"descriptor case", "@Daily", 0, "", `cron "@Daily" is not a known descriptor; ` + descriptorList},
		{"TZ= prefix", "TZ=Europe/Berlin 0 * * * *", 0, "", `cron "TZ=Europe/Berlin 0 * * * *": a TZ= or CRON_TZ= prefix is not supported; use "timezone" instead`},
		{"TZ= alone", "TZ=UTC", 0, "", `cron "TZ=UTC": a TZ= or CRON_TZ= prefix is not supported; use "timezone" instead`},
		{"CRON_TZ= prefix", " CRON_TZ=UTC 0 * * * *", 0, "", `cron " CRON_TZ=UTC 0 * * * *": a TZ= or CRON_TZ= prefix is not supported; use "timezone" instead`},
		{"never fires", "0 0 30 2 *", 0, "", `cron "0 0 30 2 *" never fires: no date matches its day-of-month, month and day-of-week fields`},
		{"never fires, 31st", "0 0 31 4,6,9,11 *", 0, "", `cron "0 0 31 4,6,9,11 *" never fires: no date matches its day-of-month, month and day-of-week fields`},
		{"every too short", "", 500 * time.Millisecond, "", `every 500ms is too short; the minimum is 1s`},
		{"every negative", "", -time.Minute, "", `every -1m0s is too short; the minimum is 1s`},
		{"every too long", "", MaxEvery + time.Second, "", `every 8784h0m1s is too long; the maximum is 366 days (8784h)`},
		{"every fraction", "", 1500 * time.Millisecond, "", `every 1.5s is not a whole number of seconds`},
		{"timezone Local", "0 * * * *", 0, "Local", `timezone "Local" is not allowed: it depends on the server; name an IANA zone such as "Europe/Berlin", or leave it empty for UTC`},
		{"timezone unknown", "0 * * * *", 0, "Mars/Olympus_Mons", `timezone "Mars/Olympus_Mons" is not a known IANA time zone; name one such as "America/New_York", or leave it empty for UTC`},
		{"timezone path", "0 * * * *", 0, "../etc/passwd", `timezone "../etc/passwd" is not a known IANA time zone; name one such as "America/New_York", or leave it empty for UTC`},
		{"timezone for every", "", time.Minute, "Nowhere", `timezone "Nowhere" is not a known IANA time zone; name one such as "America/New_York", or leave it empty for UTC`},
		{"timezone too long", "0 * * * *", 0, strings.Repeat("x", 129), `timezone is 129 bytes long; name an IANA zone such as "Europe/Berlin"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(tt.cron, tt.every, tt.tz)
			if err == nil {
				t.Fatalf("Parse(%q, %v, %q) = %+v, want an error", tt.cron, tt.every, tt.tz, s)
			}
			if err.Error() != tt.want {
				t.Errorf("Parse(%q, %v, %q):\n got %s\nwant %s", tt.cron, tt.every, tt.tz, err, tt.want)
			}
		})
	}
}

func TestParseEvery(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want time.Duration
		err  string
	}{
		{in: "1s", want: time.Second},
		{in: "15m", want: 15 * time.Minute},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "90s", want: 90 * time.Second},
		{in: "1500ms", want: 1500 * time.Millisecond, err: `every 1.5s is not a whole number of seconds`},
		{in: "8784h", want: MaxEvery},
		{in: "8784h1s", err: `every 8784h0m1s is too long; the maximum is 366 days (8784h)`},
		{in: "0", err: `every 0s is too short; the minimum is 1s`},
		{in: "0.5s", err: `every 500ms is too short; the minimum is 1s`},
		{in: "1.5s", err: `every 1.5s is not a whole number of seconds`},
		{in: "-5m", err: `every -5m0s is too short; the minimum is 1s`},
		{in: "", err: `every "" is not a duration; write it like "90s", "15m" or "1h30m" (units: s, m, h; a day is "24h")`},
		{in: "1d", err: `every "1d" is not a duration; write it like "90s", "15m" or "1h30m" (units: s, m, h; a day is "24h")`},
		{in: "15", err: `every "15" is not a duration; write it like "90s", "15m" or "1h30m" (units: s, m, h; a day is "24h")`},
		{in: "99999999999h", err: `every "99999999999h" is not a duration; write it like "90s", "15m" or "1h30m" (units: s, m, h; a day is "24h")`},
		{in: strings.Repeat("1", 65) + "s", err: `every is 66 bytes long; write it like "15m" or "1h30m"`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseEvery(tt.in)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("ParseEvery(%q) = %v, %v; want error %s", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseEvery(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
			if _, err := Parse("", got, ""); err != nil {
				t.Errorf("Parse refuses what ParseEvery accepts: %v", err)
			}
		})
	}
}

// walkSpecs are timings for the random walks, with a range of behaviours.
var walkSpecs = []struct {
	cron  string
	every time.Duration
}{
	{"* * * * *", 0},
	{"*/15 * * * *", 0},
	{"0 * * * *", 0},
	{"30 2 * * *", 0},
	{"30 1 * * *", 0},
	{"0 0-3 * * *", 0},
	{"*/10 1-3 * * *", 0},
	{"0,30 2 * * *", 0},
	{"15 2 * * sun", 0},
	{"*/7 */5 * * * *", 0},
	{"59 59 23 * * *", 0},
	{"0 0 1 * *", 0},
	{"0 12 29 2 *", 0},
	{"@daily", 0},
	{"@hourly", 0},
	{"", 7 * time.Second},
	{"", 15 * time.Minute},
	{"", 25 * time.Hour},
}

var walkZones = []string{
	"", "America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "America/Sao_Paulo",
	"Pacific/Apia", "Antarctica/Troll", "Europe/Dublin", "Asia/Kathmandu", "America/St_Johns",
}

// TestNextRandomWalk walks many schedules from random start instants:
// ticks are strictly increasing, whole seconds in UTC, and Next from any
// instant between two ticks gives the later one (no tick in between).
func TestNextRandomWalk(t *testing.T) {
	t.Parallel()
	for _, z := range walkZones {
		for _, ws := range walkSpecs {
			t.Run(z+"/"+ws.cron+ws.every.String(), func(t *testing.T) {
				t.Parallel()
				s := mustParse(t, ws.cron, ws.every, z)
				rng := rand.New(rand.NewPCG(uint64(len(z)), uint64(len(ws.cron))+uint64(ws.every)))
				lo := time.Date(1975, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
				hi := time.Date(2070, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
				for range 10 {
					at := time.Unix(lo+rng.Int64N(hi-lo), rng.Int64N(1e9))
					prev := at
					for range 100 {
						next := s.Next(prev)
						checkTick(t, prev, next)
						// Any instant in [prev, next) has next as its next tick.
						gap := next.Sub(prev)
						probe := prev.Add(time.Duration(rng.Int64N(int64(gap))))
						if got := s.Next(probe); !got.Equal(next) {
							t.Fatalf("Next(%v) = %v, but Next(%v) = %v", prev, next, probe, got)
						}
						if got := s.Next(next.Add(-time.Nanosecond)); !got.Equal(next) {
							t.Fatalf("Next(%v) = %v, want %v", next.Add(-time.Nanosecond), got, next)
						}
						prev = next
					}
				}
			})
		}
	}
}
