package soak

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/latch-run/latch/store"
)

// class is what one submit of the plan is.
type class string

const (
	classDup    class = "dup"    // resubmits an earlier submission (not an execution's class)
	classPlain  class = "plain"  // succeeds at once
	classRate   class = "rate"   // carries RateKey
	classConc   class = "conc"   // carries ConcurrencyKey
	classCancel class = "cancel" // cancelled shortly after it is acknowledged
	classFail   class = "fail"   // fails its first attempt, succeeds on the retry
	classSched  class = "sched"  // fired by a schedule (never submitted by the load)
)

// plan is the class of each submit in a cycle of 100 (percentages exact).
// The rate and concurrency keys come in groups of 5 consecutive submits, so
// that their limits bind within each group and never for long.
var plan = func() [100]class {
	var p [100]class
	for i := range p {
		p[i] = classPlain
	}
	for i := 0; i < 100; i += 10 {
		p[i] = classDup
	}
	for _, i := range []int{1, 2, 3, 4, 5, 51, 52, 53, 54, 55} {
		p[i] = classRate
	}
	for _, i := range []int{26, 27, 28, 29, 31, 76, 77, 78, 79, 81} {
		p[i] = classConc
	}
	for _, i := range []int{7, 37, 57, 87, 97} {
		p[i] = classCancel
	}
	for _, i := range []int{8, 18, 38, 68, 98} {
		p[i] = classFail
	}
	return p
}()

// payload is what every execution of the soak carries: enough for the
// handler to behave as planned and for the checks to know what it was.
type payload struct {
	N     int    `json:"n,omitempty"`    // the submit's index: every payload is unique
	Class class  `json:"c"`              // what the execution is
	Sched string `json:"s,omitempty"`    // the schedule of a classSched execution
	Work  int    `json:"ms,omitempty"`   // milliseconds the handler works (classSched: random)
	Fail  int    `json:"fail,omitempty"` // attempts that fail before one succeeds
	T     int64  `json:"t,omitempty"`    // submit time, Unix nanoseconds
}

func (p *payload) encode() json.RawMessage {
	raw, err := json.Marshal(p)
	if err == nil {
		raw, err = store.CanonicalJSON(raw)
	}
	if err != nil {
		panic(fmt.Sprintf("soak: payload: %v", err)) // a struct of ints and strings
	}
	return raw
}

// submission builds the i-th submit of class c (not classDup) at now.
func (r *runner) submission(i int, c class, now time.Time, rnd *rand.Rand) store.Submission {
	p := payload{N: i, Class: c, T: now.UnixNano()}
	sub := store.Submission{Kind: Kind, Queue: r.queue, MaxAttempts: 3}
	switch c {
	case classRate:
		p.Work = 1 + rnd.IntN(5)
		sub.RateKey = RateKey
	case classConc:
		p.Work = int(r.cfg.concurrentWork() / time.Millisecond)
		sub.ConcurrencyKey, sub.ConcurrencyLimit = ConcurrencyKey, ConcurrencyLimit
	case classCancel:
		p.Work = 200 + rnd.IntN(600)
	case classFail:
		p.Work, p.Fail = rnd.IntN(10), 1
	default:
		p.Work = rnd.IntN(15)
	}
	// Half the plain submits go without a dedup key: Admit's other path.
	if c != classPlain || i%2 == 0 {
		sub.DedupKey = fmt.Sprintf("%s-%d", r.tenant, i)
	}
	sub.Payload = p.encode()
	return sub
}

// scheduleWork is how long a schedule's job works: 0.3-1.6s, so a job
// every second often outlasts its tick.
func scheduleWork() time.Duration {
	return 300*time.Millisecond + rand.N(1300*time.Millisecond)
}
