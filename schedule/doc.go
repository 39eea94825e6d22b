// Package schedule computes the tick times of recurring schedules.
//
// A schedule's timing is either a cron expression in a time zone or a fixed
// interval ("every"). Parse checks a timing and returns a Spec; Spec.Next
// gives the first tick strictly after a given instant, in UTC and to the
// whole second. Next is a pure function of the Spec and its argument: every
// server computes the same ticks, with no stored state.
//
// # Cron
//
// A cron expression has 5 fields (minute hour day-of-month month
// day-of-week) or 6, with a seconds field first. Each field is "*" (or "?")
// for every value, a number, a range "a-b", a list "a,b-c", or any of these
// with a step: "*/15", "10-50/20", "5/15" (which means 5-max/15). Ranges:
// second and minute 0-59, hour 0-23, day-of-month 1-31, month 1-12 or
// jan-dec, day-of-week 0-6 or sun-sat (Sunday is 0; 7 is not accepted).
// When both the day-of-month and the day-of-week field are restricted
// (neither is "*" or "?"), a day matches if either field matches it: "0 0 1
// * mon" fires on the 1st of every month and on every Monday. A field written
// with a step, such as "*/2", counts as restricted. The descriptors @yearly
// (or @annually), @monthly, @weekly, @daily (or @midnight) and @hourly stand
// for "0 0 1 1 *", "0 0 1 * *", "0 0 * * 0", "0 0 * * *" and "0 * * * *".
// Cron expressions are evaluated by github.com/robfig/cron/v3 on the wall
// clock of the schedule's time zone; a zone is named in the separate
// timezone argument, never inside the expression. An expression that can
// never fire, such as "0 0 30 2 *", is refused.
//
// # Every
//
// An "every" interval is a whole number of seconds from 1s to 366 days. Its
// ticks are anchored to the Unix epoch, not to the moment the schedule was
// made: they are the instants whose Unix time is a multiple of the interval.
// So "every 15m" ticks at :00, :15, :30 and :45 of every hour, UTC, and
// "every 24h" at 00:00 UTC. The time zone has no effect on an interval
// schedule (it is still checked, and reported by Spec.Location).
//
// # Daylight saving time
//
// A cron schedule follows the clocks of its time zone. What it does when
// those clocks change depends on its hour field.
//
// A schedule whose hour field names specific hours, that is, does not match
// all 24 (such as "30 2 * * *", "0 0-3 * * *" or "@daily"), ticks by the wall
// clock of its zone:
//
//   - A wall time that occurs twice, because the clocks go back, fires
//     once, at its first occurrence. For example, "30 1 * * *" in
//     America/New_York fires on 2026-11-01 at 01:30 EDT (05:30 UTC) and not
//     again at 01:30 EST (06:30 UTC).
//   - A wall time that does not exist that day, because the clocks go
//     forward, fires once, at the instant the clock jumps. For example,
//     "30 2 * * *" in America/New_York fires on 2026-03-08 at 03:00 EDT
//     (07:00 UTC), the instant the clock jumps from 02:00 EST to 03:00 EDT.
//     If another tick of the schedule falls at that same instant, the two
//     fire once in total: "0 0-3 * * *" fires once at 03:00 EDT that day,
//     for both 02:00 and 03:00.
//
// A schedule whose hour field matches every hour ("*", "*/1", "0-23", as in
// "*/15 * * * *", "0 * * * *" or "@hourly") ticks by absolute time: it fires
// at each instant whose wall-clock time in its zone matches the expression.
// When the clocks go back it fires in both occurrences of a repeated time
// (01:15 EDT and 01:15 EST are different instants, an hour apart). When the
// clocks go forward, the skipped wall times do not exist and have no ticks:
// "*/15 * * * *" in America/New_York fires at 01:45 EST and next at 03:00
// EDT, 15 minutes later. Where the clocks jump by 30 minutes
// (Australia/Lord_Howe goes from 02:00 straight to 02:30), "0 * * * *" has
// no tick at 02:00 that day and fires at 01:00 and then 03:00.
//
// Either way, Next is strictly increasing and never returns the same instant
// twice, so a tick never fires twice, and no tick is silently lost.
package schedule
