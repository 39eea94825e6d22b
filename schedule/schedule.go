package schedule

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	_ "time/tzdata" // zones work on machines without a tz database

	"github.com/robfig/cron/v3"
)

// Limits on what Parse accepts.
const (
	// MaxCronLength is the longest cron expression accepted, in bytes.
	MaxCronLength = 256
	// MinEvery is the shortest interval accepted.
	MinEvery = time.Second
	// MaxEvery is the longest interval accepted: 366 days.
	MaxEvery = 366 * 24 * time.Hour
)

// maxTimezoneLength bounds a timezone name (the longest IANA name is about
// 30 bytes), so that an error quoting it stays short.
const maxTimezoneLength = 128

// parser reads 5-field and 6-field (seconds first) cron expressions and the
// descriptors.
var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour |
	cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// descriptors are the @ names Parse accepts.
var descriptors = []string{"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}

// allHours is the hour bits of a field that matches every hour.
const allHours = 1<<24 - 1

// Spec is a parsed schedule timing: either a cron expression in a time zone
// or an interval. Exactly one of cron and every is set. A Spec is immutable
// and safe for concurrent use.
type Spec struct {
	// cron is the parsed expression, evaluated in UTC on naive wall-clock
	// times (a wall time in loc written as if it were UTC); nil for every.
	cron *cron.SpecSchedule
	// byWall is true when cron's hour field names specific hours: such a
	// schedule ticks by the wall clock (see the package doc), any other
	// by absolute time.
	byWall bool
	// every is the interval in seconds; 0 for cron.
	every int64
	loc   *time.Location
}

// Parse checks a schedule timing and returns it as a Spec. Give exactly one
// of cron (a 5- or 6-field cron expression or a descriptor such as @daily)
// and every (an interval; 0 means none). timezone is the IANA name of the
// zone the cron expression is read in, such as "Europe/Berlin"; "" means
// UTC. It is checked for an interval too, but has no effect on its ticks.
//
// The errors are sentences meant to be shown to the person who wrote the
// timing, as they are.
func Parse(cron string, every time.Duration, timezone string) (*Spec, error) {
	loc, err := loadZone(timezone)
	if err != nil {
		return nil, err
	}
	hasCron := strings.TrimSpace(cron) != ""
	switch {
	case hasCron && every != 0:
		return nil, errors.New(`give either "cron" or "every", not both`)
	case !hasCron && every == 0:
		return nil, errors.New(`give a schedule timing: "cron" (such as "0 * * * *") or "every" (such as "15m")`)
	case every != 0:
		if err := checkEvery(every); err != nil {
			return nil, err
		}
		return &Spec{every: int64(every / time.Second), loc: loc}, nil
	}
	sched, err := parseCron(cron)
	if err != nil {
		return nil, err
	}
	s := &Spec{cron: sched, byWall: sched.Hour&allHours != allHours, loc: loc}
	// robfig gives up after 5 years; nextWall keeps looking for some 17.
	// 2000 is a leap year, so "0 0 29 2 *" is found at once.
	if s.nextWall(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).Unix()) == noTick {
		return nil, fmt.Errorf("cron %q never fires: no date matches its day-of-month, month and day-of-week fields", cron)
	}
	return s, nil
}

// NextTick is Parse(cron, every, timezone) and the Spec's Next(after): the
// first tick after after of a stored timing, for a caller that holds the
// timing's fields rather than a Spec (store.ResumeSchedule takes it).
func NextTick(cron string, every time.Duration, timezone string, after time.Time) (time.Time, error) {
	spec, err := Parse(cron, every, timezone)
	if err != nil {
		return time.Time{}, err
	}
	return spec.Next(after), nil
}

// ParseEvery parses an interval written as a Go duration, such as "90s",
// "15m" or "1h30m", and checks it as Parse does: from 1s to 366 days, in
// whole seconds.
func ParseEvery(s string) (time.Duration, error) {
	const maxLength = 64
	if len(s) > maxLength {
		return 0, fmt.Errorf("every is %d bytes long; write it like \"15m\" or \"1h30m\"", len(s))
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("every %q is not a duration; write it like \"90s\", \"15m\" or \"1h30m\" (units: s, m, h; a day is \"24h\")", s)
	}
	if err := checkEvery(d); err != nil {
		return 0, err
	}
	return d, nil
}

// checkEvery checks an interval's bounds and precision.
func checkEvery(d time.Duration) error {
	switch {
	case d < MinEvery:
		return fmt.Errorf("every %v is too short; the minimum is 1s", d)
	case d > MaxEvery:
		return fmt.Errorf("every %v is too long; the maximum is 366 days (8784h)", d)
	case d%time.Second != 0:
		return fmt.Errorf("every %v is not a whole number of seconds", d)
	}
	return nil
}

// loadZone loads an IANA zone; "" is UTC.
func loadZone(name string) (*time.Location, error) {
	switch {
	case name == "":
		return time.UTC, nil
	case len(name) > maxTimezoneLength:
		return nil, fmt.Errorf("timezone is %d bytes long; name an IANA zone such as \"Europe/Berlin\"", len(name))
	case name == "Local":
		return nil, errors.New(`timezone "Local" is not allowed: it depends on the server; name an IANA zone such as "Europe/Berlin", or leave it empty for UTC`)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("timezone %q is not a known IANA time zone; name one such as \"America/New_York\", or leave it empty for UTC", name)
	}
	return loc, nil
}

// parseCron parses a cron expression with robfig/cron after checking what
// robfig gets wrong or words poorly.
func parseCron(spec string) (*cron.SpecSchedule, error) {
	if len(spec) > MaxCronLength {
		return nil, fmt.Errorf("cron is %d bytes long; the limit is %d", len(spec), MaxCronLength)
	}
	text := strings.TrimSpace(spec)
	fields := strings.Fields(text)
	switch first := fields[0]; {
	case strings.HasPrefix(first, "TZ=") || strings.HasPrefix(first, "CRON_TZ="):
		return nil, fmt.Errorf("cron %q: a TZ= or CRON_TZ= prefix is not supported; use \"timezone\" instead", spec)
	case strings.HasPrefix(first, "@every"):
		return nil, fmt.Errorf("cron %q: @every is not supported; use \"every\" instead", spec)
	case strings.HasPrefix(first, "@"):
		if len(fields) != 1 || !contains(descriptors, first) {
			return nil, fmt.Errorf("cron %q is not a known descriptor; use one of %s", spec, strings.Join(descriptors, ", "))
		}
	default:
		if err := checkCronFields(fields); err != nil {
			return nil, fmt.Errorf("cron %q: %w", spec, err)
		}
	}
	parsed, err := parser.Parse(text)
	if err != nil {
		return nil, fmt.Errorf("cron %q: %w", spec, err)
	}
	sched, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("cron %q is not supported", spec)
	}
	// Evaluate on naive wall-clock times: see Spec.cron.
	sched.Location = time.UTC
	return sched, nil
}

// contains reports whether list holds s.
func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Location returns the time zone the schedule's cron expression is read
// in: UTC if none was named. An interval schedule returns the zone it was
// given, although it does not use it.
func (s *Spec) Location() *time.Location { return s.loc }

// Next returns the first tick strictly after after, in UTC and to the whole
// second (after itself may have a fraction of a second). See the package
// doc for how ticks are placed, daylight saving time included. Next returns
// the zero Time only if there is no tick in the 17 years after after, which
// does not happen for a Spec from Parse.
func (s *Spec) Next(after time.Time) time.Time {
	a := after.Unix() // floor: a tick strictly after after is strictly after a
	var next int64
	switch {
	case s.every != 0:
		next = floorDiv(a, s.every)*s.every + s.every
	case s.byWall:
		next = s.nextByWall(a)
	default:
		next = s.nextByInstant(a)
	}
	if next == noTick {
		return time.Time{}
	}
	return time.Unix(next, 0).UTC()
}

// noTick is returned by the helpers below when there is no tick.
const noTick = math.MinInt64

// loopLimit bounds the loops of Next; they end far sooner in practice.
const loopLimit = 1000

// nextByWall returns the first tick of a wall-clock schedule strictly after
// the instant a (Unix seconds). Ticks are the matching wall times, each
// mapped to an instant by at: its first occurrence, or the end of the gap it
// falls in. at is non-decreasing in the wall time, so the answer is at of
// the first matching wall time w whose at(w) > a.
func (s *Spec) nextByWall(a int64) int64 {
	_, _, off := s.zone(a)
	w := a + int64(off) // a's wall time: every wall time up to it maps to <= a
	for range loopLimit {
		w = s.nextWall(w)
		if w == noTick {
			return noTick
		}
		t := s.at(w)
		if t > a {
			return t
		}
		// w occurred before a: a is in the second occurrence of wall times
		// repeated when the clocks went back. Skip to the wall time where
		// they went back; all before it first occurred before a too.
		if _, end, before := s.zone(t); end != math.MaxInt64 {
			if _, _, after := s.zone(end); before > after {
				w = max(w, end+int64(before)-1)
			}
		}
	}
	return noTick
}

// nextByInstant returns the first instant strictly after a (Unix seconds)
// whose wall time matches the schedule, going from one zone period (a span
// with one UTC offset) to the next.
func (s *Spec) nextByInstant(a int64) int64 {
	for range loopLimit {
		_, end, off := s.zone(a + 1)
		w := s.nextWall(a + int64(off))
		if w == noTick {
			return noTick
		}
		if t := w - int64(off); t < end {
			return t
		}
		a = end - 1 // nothing more in this period: look in the next
	}
	return noTick
}

// nextWall returns the first matching wall time (a naive wall-clock time in
// Unix seconds, as if the zone were UTC) strictly after w. robfig gives up
// after some 5 years; this goes on for at least 17, enough for "0 0 29 2
// *", which skips 2100.
func (s *Spec) nextWall(w int64) int64 {
	t := time.Unix(w, 0).UTC()
	for range 4 {
		if n := s.cron.Next(t); !n.IsZero() {
			return n.Unix()
		}
		// Nothing up to the end of t's year plus 5: go on from 4 years on.
		t = t.AddDate(4, 0, 0)
	}
	return noTick
}

// at maps a wall time in the schedule's zone (naive Unix seconds) to its
// instant: its first occurrence if it occurs, or else the instant the clocks
// jumped over it.
func (s *Spec) at(w int64) int64 {
	// UTC offsets are within ±26h, so every occurrence of w and every jump
	// over it lies in [w-30h, w+30h]. Go through the zone's periods there,
	// in order, and take the first occurrence or jump.
	const margin = 30 * 3600
	u := w - margin
	for range loopLimit {
		start, end, off := s.zone(u)
		if t := w - int64(off); t >= start && t < end {
			return t
		}
		if end == math.MaxInt64 || end > w+margin {
			break
		}
		if _, _, next := s.zone(end); end+int64(off) <= w && w < end+int64(next) {
			return end // w is in the gap where the clocks jumped forward at end
		}
		u = end
	}
	// Unreachable with a sane zone: fall back on time.Date's choice.
	t := time.Unix(w, 0).UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), 0, s.loc).Unix()
}

// zone returns the period of the schedule's zone that holds the instant u
// (Unix seconds): its bounds [start, end), math.MinInt64 and math.MaxInt64
// when unbounded, and its UTC offset in seconds.
func (s *Spec) zone(u int64) (start, end int64, offset int) {
	t := time.Unix(u, 0).In(s.loc)
	_, offset = t.Zone()
	first, last := t.ZoneBounds()
	start, end = math.MinInt64, math.MaxInt64
	if !first.IsZero() {
		start = first.Unix()
	}
	if !last.IsZero() {
		end = last.Unix()
	}
	// Beyond a zone's listed transitions, where its rule string applies,
	// Go (1.26 included) ends the period that closes a leap year at 31
	// December 00:00 UTC instead of 1 January, so an instant on 31
	// December lies outside its own bounds. The offset is the same until
	// 1 January 00:00 UTC: end the period there.
	if end <= u {
		end += ((u-end)/(24*3600) + 1) * 24 * 3600
	}
	start = min(start, u)
	return start, end, offset
}

// floorDiv divides rounding towards negative infinity.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
