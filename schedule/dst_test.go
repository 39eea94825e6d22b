package schedule

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

// The changes tested below, all in 2026:
//
//	America/New_York     2026-03-08 02:00 EST -> 03:00 EDT at 07:00Z
//	                     2026-11-01 02:00 EDT -> 01:00 EST at 06:00Z
//	Europe/Berlin        2026-03-29 02:00 CET -> 03:00 CEST at 01:00Z
//	                     2026-10-25 03:00 CEST -> 02:00 CET at 01:00Z
//	Australia/Lord_Howe  2026-04-05 02:00 +11 -> 01:30 +1030 at 15:00Z (4 April)
//	                     2026-10-04 02:00 +1030 -> 02:30 +11 at 15:30Z (3 October)

// mustZone loads a zone the test needs.
func mustZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// robfigTicks returns the ticks of robfig's own SpecSchedule.Next, in the
// zone, in [from, to).
func robfigTicks(t *testing.T, spec, zone string, from, to time.Time) []time.Time {
	t.Helper()
	parsed, err := parser.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	sched := parsed.(*cron.SpecSchedule)
	sched.Location = mustZone(t, zone)
	var out []time.Time
	for at := from.Add(-time.Second); ; {
		at = sched.Next(at)
		if at.IsZero() || !at.Before(to) {
			return out
		}
		out = append(out, at.UTC())
	}
}

// TestRobfigAloneGetsDSTWrong records why Next does not use robfig's
// SpecSchedule.Next in the schedule's zone: it fires a repeated wall time
// twice, drops a skipped one, and drops 03:00 on Lord Howe's 30-minute
// spring-forward day although 03:00 exists. If this test fails after an
// upgrade of robfig/cron, its behaviour changed: recheck the package.
func TestRobfigAloneGetsDSTWrong(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, spec, zone, from, to string
		want                       []string
	}{
		{"fires twice when clocks go back", "30 1 * * *", "America/New_York", "2026-11-01T04:00:00", "2026-11-02T05:00:00",
			[]string{"2026-11-01T05:30:00", "2026-11-01T06:30:00"}},
		{"drops a skipped time", "30 2 * * *", "America/New_York", "2026-03-08T05:00:00", "2026-03-09T04:00:00",
			nil},
		{"drops an existing time after a 30-minute jump", "0 3 * * *", "Australia/Lord_Howe", "2026-10-03T13:30:00", "2026-10-04T13:00:00",
			nil}, // 03:00 +11 on 4 October is 2026-10-03T16:00:00Z
		{"gives up on 29 February after 2096", "0 0 29 2 *", "UTC", "2097-01-01T00:00:00", "2110-01-01T00:00:00",
			nil}, // robfig returns the zero time; Next finds 2104-02-29
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := robfigTicks(t, tt.spec, tt.zone, utc(t, tt.from), utc(t, tt.to))
			var want []time.Time
			for _, w := range tt.want {
				want = append(want, utc(t, w))
			}
			if formatAll(got) != formatAll(want) {
				t.Errorf("robfig ticks of %q in %s:\n got %s\nwant %s", tt.spec, tt.zone, formatAll(got), formatAll(want))
			}
		})
	}
}

// every returns the instants from from (inclusive) to to (exclusive), d
// apart, formatted as "2006-01-02T15:04:05".
func every(t testing.TB, from, to string, d time.Duration) []string {
	t.Helper()
	var out []string
	for at := utc(t, from); at.Before(utc(t, to)); at = at.Add(d) {
		out = append(out, at.Format("2006-01-02T15:04:05"))
	}
	return out
}

// join concatenates lists of instants.
func join(lists ...[]string) []string { return slices.Concat(lists...) }

// TestDSTExact asserts the exact UTC instants fired over each change day,
// from local midnight to local midnight.
func TestDSTExact(t *testing.T) {
	t.Parallel()
	const (
		ny = "America/New_York"
		be = "Europe/Berlin"
		lh = "Australia/Lord_Howe"
	)
	type day struct{ zone, from, to string }
	var (
		nySpring = day{ny, "2026-03-08T05:00:00", "2026-03-09T04:00:00"}
		nyFall   = day{ny, "2026-11-01T04:00:00", "2026-11-02T05:00:00"}
		beSpring = day{be, "2026-03-28T23:00:00", "2026-03-29T22:00:00"}
		beFall   = day{be, "2026-10-24T22:00:00", "2026-10-25T23:00:00"}
		lhSpring = day{lh, "2026-10-03T13:30:00", "2026-10-04T13:00:00"}
		lhFall   = day{lh, "2026-04-04T13:00:00", "2026-04-05T13:30:00"}
	)
	tests := []struct {
		name string
		day  day
		spec string
		want []string
	}{
		// New York, clocks forward: 02:00-02:59 do not exist.
		{"skipped time fires at the jump", nySpring, "30 2 * * *", []string{"2026-03-08T07:00:00"}},
		{"skipped time with seconds", nySpring, "30 30 2 * * *", []string{"2026-03-08T07:00:00"}},
		{"time before the jump", nySpring, "30 1 * * *", []string{"2026-03-08T06:30:00"}},
		{"skipped hour and the next fire once", nySpring, "0 0-3 * * *",
			[]string{"2026-03-08T05:00:00", "2026-03-08T06:00:00", "2026-03-08T07:00:00"}},
		{"every 15 minutes goes on at 03:00", nySpring, "*/15 * * * *",
			every(t, "2026-03-08T05:00:00", "2026-03-09T04:00:00", 15*time.Minute)},
		{"hourly goes on at 03:00", nySpring, "0 * * * *",
			every(t, "2026-03-08T05:00:00", "2026-03-09T04:00:00", time.Hour)},
		// New York, clocks back: 01:00-01:59 happen twice.
		{"repeated time fires at its first occurrence", nyFall, "30 1 * * *", []string{"2026-11-01T05:30:00"}},
		{"time after the repeat", nyFall, "30 2 * * *", []string{"2026-11-01T07:30:00"}},
		{"repeated hour fires once", nyFall, "0 0-3 * * *",
			[]string{"2026-11-01T04:00:00", "2026-11-01T05:00:00", "2026-11-01T07:00:00", "2026-11-01T08:00:00"}},
		{"every 15 minutes fires in both 01:xx", nyFall, "*/15 * * * *",
			every(t, "2026-11-01T04:00:00", "2026-11-02T05:00:00", 15*time.Minute)},
		{"hourly fires at 01:00 EDT and 01:00 EST", nyFall, "0 * * * *",
			every(t, "2026-11-01T04:00:00", "2026-11-02T05:00:00", time.Hour)},
		// Berlin, clocks forward: 02:00-02:59 do not exist.
		{"Berlin skipped time", beSpring, "30 2 * * *", []string{"2026-03-29T01:00:00"}},
		{"Berlin time before the jump", beSpring, "30 1 * * *", []string{"2026-03-29T00:30:00"}},
		{"Berlin skipped hour", beSpring, "0 0-3 * * *",
			[]string{"2026-03-28T23:00:00", "2026-03-29T00:00:00", "2026-03-29T01:00:00"}},
		{"Berlin every 15 minutes", beSpring, "*/15 * * * *",
			every(t, "2026-03-28T23:00:00", "2026-03-29T22:00:00", 15*time.Minute)},
		{"Berlin hourly", beSpring, "0 * * * *",
			every(t, "2026-03-28T23:00:00", "2026-03-29T22:00:00", time.Hour)},
		// Berlin, clocks back: 02:00-02:59 happen twice.
		{"Berlin repeated time", beFall, "30 2 * * *", []string{"2026-10-25T00:30:00"}},
		{"Berlin time before the repeat", beFall, "30 1 * * *", []string{"2026-10-24T23:30:00"}},
		{"Berlin repeated hour", beFall, "0 0-3 * * *",
			[]string{"2026-10-24T22:00:00", "2026-10-24T23:00:00", "2026-10-25T00:00:00", "2026-10-25T02:00:00"}},
		{"Berlin every 15 minutes", beFall, "*/15 * * * *",
			every(t, "2026-10-24T22:00:00", "2026-10-25T23:00:00", 15*time.Minute)},
		{"Berlin hourly", beFall, "0 * * * *",
			every(t, "2026-10-24T22:00:00", "2026-10-25T23:00:00", time.Hour)},
		// Lord Howe, clocks forward 30 minutes: 02:00-02:29 do not exist.
		{"Lord Howe 02:30 exists", lhSpring, "30 2 * * *", []string{"2026-10-03T15:30:00"}},
		{"Lord Howe skipped time", lhSpring, "15 2 * * *", []string{"2026-10-03T15:30:00"}},
		{"Lord Howe skipped and existing time fire once", lhSpring, "0,30 2 * * *", []string{"2026-10-03T15:30:00"}},
		{"Lord Howe time before the jump", lhSpring, "30 1 * * *", []string{"2026-10-03T15:00:00"}},
		{"Lord Howe 03:00 exists", lhSpring, "0 3 * * *", []string{"2026-10-03T16:00:00"}},
		{"Lord Howe hours 0-3", lhSpring, "0 0-3 * * *",
			[]string{"2026-10-03T13:30:00", "2026-10-03T14:30:00", "2026-10-03T15:30:00", "2026-10-03T16:00:00"}},
		{"Lord Howe every 15 minutes", lhSpring, "*/15 * * * *",
			every(t, "2026-10-03T13:30:00", "2026-10-04T13:00:00", 15*time.Minute)},
		{"Lord Howe hourly has no 02:00", lhSpring, "0 * * * *",
			join([]string{"2026-10-03T13:30:00", "2026-10-03T14:30:00"},
				every(t, "2026-10-03T16:00:00", "2026-10-04T13:00:00", time.Hour))},
		// Lord Howe, clocks back 30 minutes: 01:30-01:59 happen twice.
		{"Lord Howe repeated time", lhFall, "30 1 * * *", []string{"2026-04-04T14:30:00"}},
		{"Lord Howe repeated times", lhFall, "*/10 1 * * *",
			every(t, "2026-04-04T14:00:00", "2026-04-04T15:00:00", 10*time.Minute)},
		{"Lord Howe time after the repeat", lhFall, "30 2 * * *", []string{"2026-04-04T16:00:00"}},
		{"Lord Howe hours 0-3", lhFall, "0 0-3 * * *",
			[]string{"2026-04-04T13:00:00", "2026-04-04T14:00:00", "2026-04-04T15:30:00", "2026-04-04T16:30:00"}},
		{"Lord Howe every 15 minutes", lhFall, "*/15 * * * *",
			every(t, "2026-04-04T13:00:00", "2026-04-05T13:30:00", 15*time.Minute)},
		{"Lord Howe hourly", lhFall, "0 * * * *",
			join([]string{"2026-04-04T13:00:00", "2026-04-04T14:00:00"},
				every(t, "2026-04-04T15:30:00", "2026-04-05T13:30:00", time.Hour))},
	}
	for _, tt := range tests {
		t.Run(tt.day.zone+"/"+tt.name, func(t *testing.T) {
			t.Parallel()
			s := mustParse(t, tt.spec, 0, tt.day.zone)
			got := between(t, s, utc(t, tt.day.from), utc(t, tt.day.to))
			var want []time.Time
			for _, w := range tt.want {
				want = append(want, utc(t, w))
			}
			if formatAll(got) != formatAll(want) {
				t.Errorf("ticks of %q in %s from %s to %s:\n got %s\nwant %s",
					tt.spec, tt.day.zone, tt.day.from, tt.day.to, formatAll(got), formatAll(want))
			}
		})
	}
}

// sample is an instant of a brute-force scan and its wall time in a zone
// (as a UTC time with the wall clock's fields).
type sample struct{ u, w time.Time }

// wallOf returns the wall time of u in loc as a UTC time with the wall
// clock's fields.
func wallOf(u time.Time, loc *time.Location) time.Time {
	l := u.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), 0, time.UTC)
}

// scan returns the minutes of [from, to) with their wall times in loc.
func scan(from, to time.Time, loc *time.Location) []sample {
	var out []sample
	for u := from; u.Before(to); u = u.Add(time.Minute) {
		out = append(out, sample{u, wallOf(u, loc)})
	}
	return out
}

// oracleTicks computes the ticks of a 5-field spec over the samples (whole
// minutes) by brute force, straight from the rule in the package doc and
// independently of Next. matches reports whether a wall time matches the
// expression.
func oracleTicks(samples []sample, byWall bool, matches func(time.Time) bool) []time.Time {
	var out []time.Time
	seen := samples[0].w.Add(-time.Minute) // latest wall time seen so far
	for _, x := range samples {
		if !byWall {
			if matches(x.w) {
				out = append(out, x.u)
			}
			continue
		}
		if !x.w.After(seen) {
			continue // a repeat: its first occurrence has been dealt with
		}
		// x.w and the wall times the clocks jumped over to reach it fire
		// at x.u.
		fire := false
		for w := seen.Add(time.Minute); !w.After(x.w) && !fire; w = w.Add(time.Minute) {
			fire = matches(w)
		}
		if fire {
			out = append(out, x.u)
		}
		seen = x.w
	}
	return out
}

// transitions returns the instants in [from, to) at which loc's offset
// changes.
func transitions(loc *time.Location, from, to time.Time) []time.Time {
	var out []time.Time
	_, off := from.In(loc).Zone()
	for u := from; u.Before(to); u = u.Add(15 * time.Minute) {
		if _, o := u.In(loc).Zone(); o != off {
			// Transitions fall on whole minutes: find it.
			x := u.Add(-15 * time.Minute)
			for {
				if _, o := x.In(loc).Zone(); o != off {
					break
				}
				x = x.Add(time.Minute)
			}
			out = append(out, x)
			off = o
		}
	}
	return out
}

// TestDSTOracle compares Next with a brute-force reading of the rule around
// every offset change of several zones, including odd ones: Sao Paulo's
// midnight jumps, Apia skipping 30 December 2011, Troll's 2-hour shift,
// Dublin's negative DST and Lord Howe's 30-minute one. For wall-clock
// schedules it also checks that no wall time fires twice and none is lost.
func TestDSTOracle(t *testing.T) {
	t.Parallel()
	zones := []struct {
		name string
		year int
	}{
		{"America/New_York", 2026}, {"Europe/Berlin", 2026}, {"Australia/Lord_Howe", 2026},
		{"America/Sao_Paulo", 2018}, {"Pacific/Apia", 2011}, {"Antarctica/Troll", 2026},
		{"Europe/Dublin", 2026}, {"America/St_Johns", 2026}, {"Asia/Tehran", 2021},
		{"America/New_York", 2070}, {"Australia/Lord_Howe", 2071},
	}
	specs := []string{
		"30 2 * * *", "30 1 * * *", "0 0-3 * * *", "*/15 * * * *", "0 * * * *",
		"0 0 * * *", "59 23 * * *", "15 2 * * *", "0,30 2 * * *", "*/10 1-3 * * *",
		"0 9 * * *", "45 0-2 * * *", "0 */2 * * *", "30 * * * *", "0 0 30 12 *",
	}
	for _, z := range zones {
		loc := mustZone(t, z.name)
		from := time.Date(z.year, 1, 1, 0, 0, 0, 0, time.UTC)
		changes := transitions(loc, from, from.AddDate(1, 0, 0))
		if len(changes) == 0 {
			t.Fatalf("%s has no offset change in %d", z.name, z.year)
		}
		var windows [][]sample
		for _, c := range changes {
			windows = append(windows, scan(c.Add(-30*time.Hour), c.Add(30*time.Hour), loc))
		}
		for _, spec := range specs {
			t.Run(fmt.Sprintf("%s/%d/%s", z.name, z.year, spec), func(t *testing.T) {
				t.Parallel()
				s := mustParse(t, spec, 0, z.name)
				// The matching wall times of the windows (and of the year,
				// for checkWallTicks) and a few days around.
				matching := map[time.Time]bool{}
				addMatching := func(from, to time.Time) {
					for w := from.AddDate(0, 0, -3); w.Before(to.AddDate(0, 0, 3)); {
						w = s.cron.Next(w)
						matching[w] = true
					}
				}
				matches := func(w time.Time) bool { return matching[w] }
				if s.byWall {
					addMatching(from, from.AddDate(1, 0, 0))
				}
				for _, samples := range windows {
					addMatching(samples[0].w, samples[len(samples)-1].w)
				}
				for _, samples := range windows {
					lo, hi := samples[0].u, samples[len(samples)-1].u.Add(time.Minute)
					want := oracleTicks(samples, s.byWall, matches)
					got := between(t, s, lo, hi)
					if formatAll(got) != formatAll(want) {
						t.Fatalf("ticks of %q in %s from %v to %v:\n got %s\nwant %s", spec, z.name, lo, hi, formatAll(got), formatAll(want))
					}
				}
				if s.byWall {
					checkWallTicks(t, s, loc, from, from.AddDate(1, 0, 0), matches)
				}
			})
		}
	}
}

// checkWallTicks checks a wall-clock schedule over [from, to): no wall time
// fires twice, and every matching wall time fires, at its occurrence or, if
// it does not exist, at the instant the clocks jump over it.
func checkWallTicks(t *testing.T, s *Spec, loc *time.Location, from, to time.Time, matches func(time.Time) bool) {
	t.Helper()
	wall := func(u time.Time) time.Time { return wallOf(u, loc) }
	got := between(t, s, from, to)
	fired := map[time.Time]bool{} // wall times of the ticks
	var jumps []time.Time         // ticks at which the clock jumped forward
	for _, u := range got {
		w := wall(u)
		if fired[w] {
			t.Fatalf("%v (%v wall) fires twice", w, loc)
		}
		fired[w] = true
		if wall(u.Add(-time.Second)).Add(time.Second).Before(w) {
			jumps = append(jumps, u)
		}
	}
	// Matching wall times, a day in from the ends (their ticks may lie
	// outside [from, to)).
	for w := wall(from).AddDate(0, 0, 1); w.Before(wall(to).AddDate(0, 0, -1)); w = s.cron.Next(w) {
		if !matches(w) || fired[w] {
			continue
		}
		local := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), 0, loc)
		if wall(local).Equal(w) {
			t.Fatalf("%v (%v wall) exists but does not fire", w, loc)
		}
		// It does not exist: a tick must be where the clock jumped over it.
		found := false
		for _, u := range jumps {
			found = found || (wall(u.Add(-time.Second)).Before(w) && w.Before(wall(u)))
		}
		if !found {
			t.Fatalf("%v (%v wall) does not exist and does not fire where the clock jumps", w, loc)
		}
	}
}

// TestZoneBounds checks that Spec.zone returns a period holding its
// instant, with one offset throughout, on 31 December of leap years, where
// Go's own Time.ZoneBounds (beyond a zone's listed transitions) ends the
// period before the instant.
func TestZoneBounds(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "UTC"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := mustParse(t, "0 * * * *", 0, name)
			for _, year := range []int{2028, 2096} {
				for _, at := range []time.Time{
					time.Date(year, 12, 30, 23, 59, 59, 0, time.UTC),
					time.Date(year, 12, 31, 0, 0, 0, 0, time.UTC),
					time.Date(year, 12, 31, 12, 0, 0, 0, time.UTC),
					time.Date(year, 12, 31, 23, 59, 59, 0, time.UTC),
					time.Date(year+1, 1, 1, 0, 0, 0, 0, time.UTC),
				} {
					u := at.Unix()
					start, end, off := s.zone(u)
					if start > u || end <= u {
						t.Fatalf("zone(%v) = [%v, %v), not holding it", at, time.Unix(start, 0).UTC(), time.Unix(end, 0).UTC())
					}
					for _, x := range []int64{max(start, u-48*3600), u, min(end-1, u+48*3600)} {
						if _, o := time.Unix(x, 0).In(s.loc).Zone(); o != off {
							t.Fatalf("zone(%v) has offset %d, but %v has %d", at, off, time.Unix(x, 0).UTC(), o)
						}
					}
				}
			}
			if name == "UTC" {
				return
			}
			// The quirk zone works around, still in Go 1.26: say so if a
			// later Go has fixed it.
			at := time.Date(2096, 12, 31, 12, 0, 0, 0, time.UTC).In(s.loc)
			if _, end := at.ZoneBounds(); end.After(at) {
				t.Logf("Go's ZoneBounds(%v) now ends after it (%v)", at, end)
			}
		})
	}
}
