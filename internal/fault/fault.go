// Package fault holds named crash points for crash-injection tests.
//
// A crash point is one line, fault.Point(name), at a place where a crash
// matters most: after a store operation committed and before its answer is
// written, in the middle of a handler, between a heartbeat's store call and
// what the worker does with its answer. In a normal build Point is an empty
// function that the compiler inlines away: it does nothing and costs
// nothing. In a build with the tag faults (go build -tags faults) Point
// counts the hits of each point named in the environment variable
// LATCH_FAULTS and, when one fires, writes one line naming it to stderr and
// kills its own process with SIGKILL: no deferred function runs, nothing is
// flushed or closed, exactly like a crash.
//
// # LATCH_FAULTS
//
// A comma-separated list of rules, one per point:
//
//	LATCH_FAULTS = rule { "," rule }
//	rule         = point "=" probability [ "@" hit ]
//	             | point "=" "@" hit
//	probability  = a decimal number from 0 to 1 (default 1)
//	hit          = an integer >= 1 (default 1)
//
// Hits of the point before the hit-th never fire; from the hit-th on, each
// hit fires with the probability. So:
//
//	api.submit.committed=0.2        each hit fires with probability 0.2
//	worker.heartbeat.committed=@3   the 3rd hit fires (as does "=1@3")
//	worker.handler.started=0.5@10   hits 1-9 never; from the 10th, one in two
//
// Spaces around rules and their parts are ignored, as are empty rules. The
// point must be one of Points (a misspelt name would otherwise never fire
// and a test relying on it would pass for nothing); a point named twice, a
// probability outside [0, 1] or a hit below 1 is an error too. A faults
// build reads LATCH_FAULTS once, when the program starts, and exits with
// status 2, naming the mistake, when it is invalid. Unset or empty, no
// point fires. Counts are per process: a restarted process starts again at
// hit 1.
//
// The line written when a point fires is
//
//	latch: fault point <name> fired at hit <n> (LATCH_FAULTS rule "<rule>"): SIGKILL
//
// Only the first point to fire writes it: another firing at the same
// moment in another goroutine waits for the kill without a line.
package fault

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
)

// Env is the environment variable a faults build reads its rules from.
const Env = "LATCH_FAULTS"

// The crash points. Each is hit at one place, named after it.
const (
	// APISubmitCommitted: POST /api/executions, after Store.Admit
	// committed, before the answer is written.
	APISubmitCommitted = "api.submit.committed"
	// APIBatchCommitted: POST /api/executions/batch, after Store.Admit
	// committed, before the answer is written.
	APIBatchCommitted = "api.batch.committed"
	// APICompleteCommitted: POST /api/executions/{id}/complete, after
	// Store.Complete committed, before the answer is written.
	APICompleteCommitted = "api.complete.committed"
	// WorkerHandlerStarted: an in-process worker has started a handler
	// (in its own goroutine), which may be anywhere in its work.
	WorkerHandlerStarted = "worker.handler.started"
	// WorkerHandlerReturned: a handler has returned; its outcome is not
	// yet written to the store.
	WorkerHandlerReturned = "worker.handler.returned"
	// WorkerHeartbeatCommitted: a heartbeat's store call has returned (its
	// lease extension committed, or it failed) and the worker has not
	// acted on the answer.
	WorkerHeartbeatCommitted = "worker.heartbeat.committed"
)

// points are the valid point names, in the order of the constants.
var points = []string{
	APISubmitCommitted, APIBatchCommitted, APICompleteCommitted,
	WorkerHandlerStarted, WorkerHandlerReturned, WorkerHeartbeatCommitted,
}

// Points returns the names of every crash point.
func Points() []string { return slices.Clone(points) }

// rule is one parsed rule of LATCH_FAULTS.
type rule struct {
	text string  // as written, trimmed
	p    float64 // probability of firing, per hit from the from-th
	from int64   // first hit that may fire
	hits atomic.Int64
}

// plan is a parsed LATCH_FAULTS: the rules by point name, and the source
// of randomness for probabilities below 1.
type plan struct {
	rules map[string]*rule
	rand  func() float64 // in [0, 1)
}

// parse parses a LATCH_FAULTS value (see the package documentation).
func parse(spec string) (*plan, error) {
	pl := &plan{rules: map[string]*rule{}, rand: rand.Float64}
	for item := range strings.SplitSeq(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		r, name, err := parseRule(item)
		if err != nil {
			return nil, fmt.Errorf("%s: rule %q: %w", Env, item, err)
		}
		if _, dup := pl.rules[name]; dup {
			return nil, fmt.Errorf("%s: rule %q: point %s has a rule already", Env, item, name)
		}
		pl.rules[name] = r
	}
	return pl, nil
}

func parseRule(item string) (*rule, string, error) {
	name, spec, ok := strings.Cut(item, "=")
	if !ok {
		return nil, "", errors.New(`want point=probability, point=@hit or point=probability@hit`)
	}
	name, spec = strings.TrimSpace(name), strings.TrimSpace(spec)
	if !slices.Contains(points, name) {
		return nil, "", fmt.Errorf("unknown point %q; the points are %s", name, strings.Join(points, ", "))
	}
	r := &rule{text: item, p: 1, from: 1}
	prob, hit, hasHit := strings.Cut(spec, "@")
	prob, hit = strings.TrimSpace(prob), strings.TrimSpace(hit)
	if prob == "" && !hasHit {
		return nil, "", errors.New("no probability and no @hit")
	}
	if prob != "" {
		p, err := strconv.ParseFloat(prob, 64)
		if err != nil || math.IsNaN(p) || p < 0 || p > 1 {
			return nil, "", fmt.Errorf("probability %q is not a number from 0 to 1", prob)
		}
		r.p = p
	}
	if hasHit {
		n, err := strconv.ParseInt(hit, 10, 64)
		if err != nil || n < 1 {
			return nil, "", fmt.Errorf("hit %q is not an integer >= 1", hit)
		}
		r.from = n
	}
	return r, name, nil
}

// hit counts a hit of the point and reports whether it fires, with the
// hit's number (1 for the first) and the rule. A point without a rule
// never fires and is not counted. Safe for concurrent use.
func (pl *plan) hit(name string) (fire bool, n int64, r *rule) {
	r = pl.rules[name]
	if r == nil {
		return false, 0, nil
	}
	n = r.hits.Add(1)
	switch {
	case n < r.from || r.p <= 0:
		return false, n, r
	case r.p >= 1:
		return true, n, r
	}
	return pl.rand() < r.p, n, r
}

// line is what a faults build writes to stderr when rule r fires at hit n
// of point name.
func line(name string, n int64, r *rule) string {
	return fmt.Sprintf("latch: fault point %s fired at hit %d (%s rule %q): SIGKILL\n", name, n, Env, r.text)
}
