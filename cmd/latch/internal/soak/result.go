package soak

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Result is what a soak measured and found.
type Result struct {
	Tenant      string
	Store       string        // the store's Go type, for the record
	Rate        int           // the submit rate asked for, per second
	Load        time.Duration // how long the load ran
	Interrupted bool          // the load ended early: Run's context was cancelled
	Drain       time.Duration // how long the executions took to finish after the load
	Drained     bool          // every execution finished within Config.DrainTimeout

	Submits         int // submit calls
	Acknowledged    int // new executions admitted
	Deduplicated    int // resubmits of an earlier key, each checked (I1)
	Refused         int // refused for the tenant's quota
	Cancels         int // cancel calls answered
	CancelledAtOnce int // of which the execution was scheduled or queued
	CancelRequested int // of which it was running (the rest had finished)
	Starts          int // handler starts
	Executions      int // the tenant's executions at the end, schedules' included

	SubmitP50, SubmitP99 time.Duration // Admit call latency, whole run
	StartP50, StartP99   time.Duration // submit to first start, whole run

	Samples          []Sample
	GoroutinesBefore int // before the engine started
	GoroutinesAfter  int // after everything stopped and settled

	// Warnings are what the soak saw that is not a breach: the store
	// slowing down as the run went on.
	Warnings []string

	// Checks lists every check with its figures; Breaches every breach
	// found (the first maxDetails of each check; Checks has the counts).
	Checks   []Check
	Breaches []Breach
}

// Sample is one reading taken during the load.
type Sample struct {
	At         time.Duration // since the load started
	Heap       uint64        // bytes of heap objects, live or not yet swept
	Live       uint64        // live heap bytes as of the last GC
	Goroutines int
	FDs        int // open file descriptors (sockets included); -1 where unknown
	Inflight   int // the tenant's inflight count; -1 if the read failed
}

// Check is one check's outcome.
type Check struct {
	Name     string // "I1", "I2", ... or "goroutines", "memory", ...
	Title    string
	Breaches int
	Detail   string // what was checked, in figures
}

// Breach is one violation.
type Breach struct {
	Check  string
	Detail string
}

func (b Breach) String() string { return b.Check + ": " + b.Detail }

// OK reports whether no check found a breach.
func (r *Result) OK() bool {
	for _, c := range r.Checks {
		if c.Breaches > 0 {
			return false
		}
	}
	return true
}

// BreachCount is the number of breaches found, over every check.
func (r *Result) BreachCount() int {
	n := 0
	for _, c := range r.Checks {
		n += c.Breaches
	}
	return n
}

// Verdict is the one-line outcome.
func (r *Result) Verdict() string {
	if r.OK() {
		return fmt.Sprintf("PASS: no breach in %s of load (%d submits, %d executions, %d starts)",
			r.Load.Round(time.Millisecond), r.Submits, r.Executions, r.Starts)
	}
	var failed []string
	for _, c := range r.Checks {
		if c.Breaches > 0 {
			failed = append(failed, fmt.Sprintf("%s ×%d", c.Name, c.Breaches))
		}
	}
	return fmt.Sprintf("FAIL: %d breach(es) in %s of load: %s",
		r.BreachCount(), r.Load.Round(time.Millisecond), strings.Join(failed, ", "))
}

// WriteSummary writes the checks and the breaches.
func (r *Result) WriteSummary(w io.Writer) {
	fmt.Fprintf(w, "load %s%s, drain %s; %d submits (%d new, %d deduplicated, %d refused), "+
		"%d cancels (%d queued, %d running, %d finished), %d starts\n",
		r.Load.Round(time.Millisecond), map[bool]string{true: " (interrupted)"}[r.Interrupted],
		r.Drain.Round(time.Millisecond), r.Submits, r.Acknowledged, r.Deduplicated, r.Refused,
		r.Cancels, r.CancelledAtOnce, r.CancelRequested, r.Cancels-r.CancelledAtOnce-r.CancelRequested, r.Starts)
	if r.Load > 0 && r.Rate > 0 {
		achieved := float64(r.Submits) / r.Load.Seconds()
		fmt.Fprintf(w, "rate %.1f submits/s of %d asked", achieved, r.Rate)
		if achieved < 0.9*float64(r.Rate) {
			fmt.Fprint(w, " (the submitters fell behind: the store or the machine could not keep up; see the submit latency)")
		}
		fmt.Fprintln(w)
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "warning: %s (not a breach: the machine's load varies too; a store that slows as it fills shows here)\n", warn)
	}
	fmt.Fprintf(w, "submit latency p50 %s p99 %s; submit to start p50 %s p99 %s\n",
		fmtDur(r.SubmitP50), fmtDur(r.SubmitP99), fmtDur(r.StartP50), fmtDur(r.StartP99))
	fmt.Fprintln(w, "checks:")
	for _, c := range r.Checks {
		mark := "ok  "
		if c.Breaches > 0 {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "  %s %-10s %s: %s\n", mark, c.Name, c.Title, c.Detail)
	}
	if len(r.Breaches) > 0 {
		fmt.Fprintln(w, "breaches:")
		for _, b := range r.Breaches {
			fmt.Fprintf(w, "  %s\n", b)
		}
	}
}

// findings collects breaches from every goroutine of the soak.
type findings struct {
	mu     sync.Mutex
	counts map[string]int
	list   []Breach
}

// maxDetails is how many breaches of one check are kept in detail.
const maxDetails = 20

func newFindings() *findings { return &findings{counts: map[string]int{}} }

func (f *findings) add(check, format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counts[check]++
	if f.counts[check] <= maxDetails {
		f.list = append(f.list, Breach{Check: check, Detail: fmt.Sprintf(format, args...)})
	} else if f.counts[check] == maxDetails+1 {
		f.list = append(f.list, Breach{Check: check, Detail: "more breaches of this check follow; see the count"})
	}
}

func (f *findings) count(check string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[check]
}

// fmtDur shows a latency with three significant digits.
func fmtDur(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= 100*time.Millisecond:
		return d.Round(time.Millisecond).String()
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}
