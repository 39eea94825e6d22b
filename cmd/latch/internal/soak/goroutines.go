package soak

import (
	"bufio"
	"bytes"
	"fmt"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The goroutine rule: after the soak has stopped everything it started,
// the process's goroutines must come back, within goroutineSettle, to at
// most goroutineMargin more than before the engine started. The store's own
// goroutines (its writer, listener, pools) were there before and stay; a
// worker, scheduler, handler or store call that leaves one behind fails
// the rule, and the breach names the stacks that grew.
const (
	goroutineMargin = 3
	goroutineSettle = 2 * time.Second
)

// stacks counts the goroutines per stack (the goroutine profile's
// records), keyed by the stack's program counters, with a short
// description of each.
type stacks struct {
	count map[string]int
	desc  map[string]string
}

func goroutineStacks() stacks {
	s := stacks{count: map[string]int{}, desc: map[string]string{}}
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 1); err != nil {
		return s
	}
	sc := bufio.NewScanner(&buf)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var key string
	var funcs []string
	flush := func() {
		if key != "" {
			s.desc[key] = strings.Join(funcs, " < ")
		}
		key, funcs = "", nil
	}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			flush()
		case strings.Contains(line, " @ "):
			flush()
			n, pcs, _ := strings.Cut(line, " @ ")
			c, err := strconv.Atoi(n)
			if err != nil {
				continue
			}
			key = pcs
			s.count[key] += c
		case strings.HasPrefix(line, "#\t") && key != "":
			if f := strings.Fields(line); len(f) >= 3 && len(funcs) < 4 {
				name, _, _ := strings.Cut(f[2], "+")
				if !strings.HasPrefix(name, "runtime.") || len(funcs) > 0 {
					funcs = append(funcs, name)
				}
			}
		}
	}
	flush()
	return s
}

// grown describes the stacks with more goroutines in s than in before,
// less the profiler's own.
func (s stacks) grown(before stacks) []string {
	var out []string
	for k, n := range s.count {
		if strings.Contains(s.desc[k], "runtime/pprof.") {
			continue
		}
		if d := n - before.count[k]; d > 0 {
			out = append(out, fmt.Sprintf("+%d %s", d, s.desc[k]))
		}
	}
	slices.Sort(out)
	return out
}

// settleGoroutines waits up to goroutineSettle for the goroutine count to
// come back within goroutineMargin of before, and returns the count.
func settleGoroutines(before int) int {
	deadline := time.Now().Add(goroutineSettle)
	for {
		n := runtime.NumGoroutine()
		if n <= before+goroutineMargin || time.Now().After(deadline) {
			return n
		}
		time.Sleep(50 * time.Millisecond)
	}
}
