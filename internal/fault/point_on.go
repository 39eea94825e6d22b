//go:build faults

package fault

import (
	"fmt"
	"os"
	"sync/atomic"
	"time"
)

// Enabled reports whether this is a faults build (go build -tags faults),
// in which Point may crash the process.
const Enabled = true

// active is the plan of LATCH_FAULTS, read once at start-up.
var active *plan

// crashing is set by the first point to fire: one that fires at the same
// time in another goroutine waits for the end without a line of its own.
var crashing atomic.Bool

func init() {
	pl, err := parse(os.Getenv(Env))
	if err != nil {
		fmt.Fprintln(os.Stderr, "latch: fault:", err)
		os.Exit(2)
	}
	active = pl
}

// Point marks the crash point name. When LATCH_FAULTS makes this hit fire,
// it writes one line naming the point to stderr and kills the process with
// SIGKILL; it does not return.
func Point(name string) {
	if fire, n, r := active.hit(name); fire {
		crash(line(name, n, r))
	}
}

// crash writes msg in one write and kills the process at once: no deferred
// function runs, no buffer is flushed, nothing is closed.
func crash(msg string) {
	if crashing.Swap(true) {
		select {} // the first to fire is killing the process
	}
	_, _ = os.Stderr.WriteString(msg)
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Kill() // SIGKILL on Unix
	}
	// SIGKILL is delivered before Kill returns to this thread; should it not
	// be, never go back to the caller.
	time.Sleep(time.Minute)
	os.Exit(137)
}
