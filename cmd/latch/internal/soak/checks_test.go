package soak

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

var t0 = time.Date(2031, 3, 14, 9, 0, 0, 0, time.UTC)

func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

// cleanEvidence is the evidence of a small soak that went right: every
// execution acknowledged, started once per attempt and finished; rate
// starts spaced by the limit; the counter at 0.
func cleanEvidence() *evidence {
	ev := &evidence{
		execs: map[string]*execRec{}, rate: store.RateLimit{Rate: 10, Per: time.Second, Burst: 2},
		drained: true, schedPeak: map[string]int{}, storeQuantum: 2 * time.Millisecond,
	}
	add := func(id string, c class, key, rateKey string, attempts int, at time.Time) {
		ev.acks = append(ev.acks, ackRec{id: id, class: c, key: key})
		ev.execs[id] = &execRec{id: id, status: store.StatusSucceeded, attempt: attempts, key: key, rateKey: rateKey, started: at}
		for a := 1; a <= attempts; a++ {
			ev.starts = append(ev.starts, startRec{at: at.Add(time.Millisecond), id: id, attempt: a, class: c})
		}
	}
	add("plain-1", classPlain, "k1", "", 1, ms(0))
	add("fail-1", classFail, "k2", "", 2, ms(10))
	// Burst 2, then one per 100ms.
	for i, at := range []int{0, 0, 100, 200, 300, 400} {
		add("rate-"+string(rune('a'+i)), classRate, "r"+string(rune('a'+i)), RateKey, 1, ms(1000+at))
	}
	ev.execs["tick-1"] = &execRec{id: "tick-1", status: store.StatusSucceeded, attempt: 1,
		key: store.ScheduleDedupKey(SkipSchedule, ms(0)), schedule: SkipSchedule, started: ms(5)}
	ev.starts = append(ev.starts, startRec{at: ms(6), id: "tick-1", attempt: 1, class: classSched, sched: SkipSchedule})
	return ev
}

func breaches(f *findings) map[string][]string {
	out := map[string][]string{}
	for _, b := range f.list {
		out[b.Check] = append(out[b.Check], b.Detail)
	}
	return out
}

func TestJudgeAcceptsACleanRun(t *testing.T) {
	f := newFindings()
	judge(cleanEvidence(), f)
	for _, b := range f.list {
		t.Errorf("breach in a clean run: %s", b)
	}
}

// The checks are not vacuous: each fabricated breach is reported, all of
// them, not only the first.
func TestJudgeCatchesBreaches(t *testing.T) {
	ev := cleanEvidence()
	// I2: attempt 1 of plain-1 started a second time, by another worker.
	ev.starts = append(ev.starts, startRec{at: ms(3), id: "plain-1", attempt: 1, class: classPlain})
	// I2: the store counts 2 attempts of fail-1, 3 of another, one never started.
	ev.execs["fail-1"].attempt = 3
	// I7: four more rate starts within 50ms, both as the handlers saw them
	// and as the store recorded them.
	for i := range 4 {
		id := "burst-" + string(rune('a'+i))
		ev.acks = append(ev.acks, ackRec{id: id, class: classRate, key: id})
		ev.execs[id] = &execRec{id: id, status: store.StatusSucceeded, attempt: 1, key: id, rateKey: RateKey, started: ms(2000 + 10*i)}
		ev.starts = append(ev.starts, startRec{at: ms(2001 + 10*i), id: id, attempt: 1, class: classRate})
	}
	// I1: key k1 maps to a second execution.
	ev.execs["plain-2"] = &execRec{id: "plain-2", status: store.StatusSucceeded, attempt: 1, key: "k1"}
	ev.starts = append(ev.starts, startRec{at: ms(20), id: "plain-2", attempt: 1, class: classPlain})
	// I6: a tick with two executions.
	ev.execs["tick-2"] = &execRec{id: "tick-2", status: store.StatusSkipped,
		key: store.ScheduleDedupKey(SkipSchedule, ms(0)), schedule: SkipSchedule}
	// I8: an acknowledged execution the store lost.
	ev.acks = append(ev.acks, ackRec{id: "lost-1", class: classPlain, key: "k9"})
	// I3: the counter says 3; one execution is unfinished (below).
	ev.inflight = 3
	// storage: the counter says 7; the executions count 5 (stuck-1, below).
	ev.stored = 7
	// done: an execution still queued.
	ev.execs["stuck-1"] = &execRec{id: "stuck-1", status: store.StatusQueued, key: "k10", stored: 5}
	ev.acks = append(ev.acks, ackRec{id: "stuck-1", class: classPlain, key: "k10"})

	f := newFindings()
	judge(ev, f)
	got := breaches(f)
	for check, want := range map[string][]string{
		"I1":      {"dedup key k1 maps to 2 executions"},
		"I2":      {"attempt 1 of plain-1 started 2 times", "attempt 3 of fail-1", "no handler started it"},
		"I3":      {"inflight is 3, but 1 of its executions"},
		"storage": {"stored_bytes is 7, but its executions count 5"},
		"I6":      {"has 2 executions"},
		"I7":      {"handler starts: ", "store StartedAt: "},
		"I8":      {"lost-1"},
		"done":    {"stuck-1 is still queued"},
	} {
		all := strings.Join(got[check], "\n")
		for _, w := range want {
			if !strings.Contains(all, w) {
				t.Errorf("%s: no breach mentioning %q; got:\n%s", check, w, all)
			}
		}
	}
	// Every start of the burst past the limit is reported, for both views.
	if n := f.count("I7"); n < 4 {
		t.Errorf("I7: %d breaches, want every over-limit start in both views:\n%s", n, strings.Join(got["I7"], "\n"))
	}
	if n := len(got["I3"]); n != 1 {
		t.Errorf("I3: %d breaches, want 1: %v", n, got["I3"])
	}
}

func TestRateWindows(t *testing.T) {
	const burst, iv = 2, 100 * time.Millisecond
	at := func(ns ...int) []time.Time {
		var out []time.Time
		for _, n := range ns {
			out = append(out, ms(n))
		}
		return out
	}
	for _, c := range []struct {
		name  string
		ts    []time.Time
		slack time.Duration
		want  int
	}{
		{"burst then spaced", at(0, 0, 100, 200, 300), 0, 0},
		{"idle refills the burst", at(0, 100, 1000, 1000, 1100), 0, 0},
		{"third at once", at(0, 0, 0), 0, 1},
		{"a late window", at(0, 0, 100, 200, 250), 0, 1},
		{"every start of a burst", at(0, 0, 0, 0, 0), 0, 3},
		{"within the slack", at(0, 0, 95, 195), 5 * time.Millisecond, 0},
		{"beyond the slack", at(0, 0, 90, 190), 5 * time.Millisecond, 2},
	} {
		got := rateWindows(c.ts, burst, iv, c.slack)
		if len(got) != c.want {
			t.Errorf("%s: %d breaches %+v, want %d", c.name, len(got), got, c.want)
		}
		for _, b := range got {
			if b.n <= b.allowed {
				t.Errorf("%s: reported a window of %d starts, allowed %d", c.name, b.n, b.allowed)
			}
		}
	}
}

// rateWindows agrees with the definition (every pair of starts) on many
// sequences.
func TestRateWindowsMatchesEveryWindow(t *testing.T) {
	const burst, iv = 3, 50 * time.Millisecond
	seed := uint64(1)
	next := func() int { seed = seed*6364136223846793005 + 1442695040888963407; return int(seed>>33) % 60 }
	for range 500 {
		var ts []time.Time
		cur := 0
		for range 30 {
			cur += next()
			ts = append(ts, ms(cur))
		}
		over := map[int]bool{}
		for i := range ts {
			for j := i; j < len(ts); j++ {
				if j-i+1 > burst+int(ts[j].Sub(ts[i])/iv) {
					over[j] = true
				}
			}
		}
		got := rateWindows(ts, burst, iv, 0)
		if len(got) != len(over) {
			t.Fatalf("%d starts end a window over the limit, rateWindows found %d (%v)", len(over), len(got), ts)
		}
	}
}

func TestGrowthRule(t *testing.T) {
	series := func(f func(i int) float64) ([]time.Duration, []float64) {
		var at []time.Duration
		var vs []float64
		for i := range 40 {
			at = append(at, time.Duration(i)*time.Second)
			vs = append(vs, f(i))
		}
		return at, vs
	}
	noise := func(i int) float64 { return float64((i*7919)%13) * 100e3 } // up to 1.2MB
	limit := func(first float64) float64 { return max(8<<20, first/4) }
	for _, c := range []struct {
		name   string
		f      func(i int) float64
		breach bool
	}{
		{"flat", func(i int) float64 { return 20e6 + noise(i) }, false},
		{"leak", func(i int) float64 { return 20e6 + float64(i)*500e3 + noise(i) }, true},
		{"small leak", func(i int) float64 { return 20e6 + float64(i)*50e3 + noise(i) }, false},
		{"sawtooth", func(i int) float64 { return 20e6 + float64(i%10)*2e6 }, false},
		{"one spike", func(i int) float64 {
			if i == 39 {
				return 200e6
			}
			return 20e6 + noise(i)
		}, false},
		{"a plateau reached", func(i int) float64 { return 20e6 + math.Min(float64(i), 8)*3e6 }, false},
	} {
		at, vs := series(c.f)
		g := judgeGrowth("heap", "B", at, vs, limit)
		if !g.judged || g.breach != c.breach {
			t.Errorf("%s: judged %v breach %v, want breach %v: %s", c.name, g.judged, g.breach, c.breach, g.String())
		}
	}
	g := judgeGrowth("heap", "B", make([]time.Duration, 3), make([]float64, 3), limit)
	if g.judged || g.breach {
		t.Errorf("3 samples judged: %s", g.String())
	}
}

func TestGaugeReportsOverLimit(t *testing.T) {
	f := newFindings()
	g := newGauge(f)
	a := g.enter("I4", "k", 2, "x1")
	b := g.enter("I4", "k", 2, "x2")
	a()
	c := g.enter("I4", "k", 2, "x3")
	if f.count("I4") != 0 {
		t.Fatalf("breach at 2 of limit 2: %v", f.list)
	}
	d := g.enter("I4", "k", 2, "x4")
	if f.count("I4") != 1 || g.peak("k") != 3 {
		t.Errorf("3 at once under limit 2: %d breaches, peak %d", f.count("I4"), g.peak("k"))
	}
	b()
	c()
	d()
}

func TestFindingsKeepEveryCount(t *testing.T) {
	f := newFindings()
	for i := range 50 {
		f.add("I2", "breach %d", i)
	}
	if f.count("I2") != 50 || len(f.list) != maxDetails+1 {
		t.Errorf("count %d, %d kept; want 50 counted, %d kept and a note", f.count("I2"), len(f.list), maxDetails)
	}
}

func TestHistQuantiles(t *testing.T) {
	var h hist
	for i := 1; i <= 1000; i++ {
		h.add(time.Duration(i) * time.Millisecond)
	}
	for q, want := range map[float64]time.Duration{0.5: 500 * time.Millisecond, 0.99: 990 * time.Millisecond, 1: time.Second} {
		got := h.quantile(q)
		if got < want || float64(got) > float64(want)*histGrowth {
			t.Errorf("quantile %v = %s, want within 5%% above %s", q, got, want)
		}
	}
	if (&hist{}).quantile(0.5) != 0 {
		t.Error("empty histogram")
	}
}

func TestGoroutineStacksNameWhatGrew(t *testing.T) {
	before := goroutineStacks()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); leakyWait(stop) }()
	defer func() { close(stop); <-done }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		grown := goroutineStacks().grown(before)
		if strings.Contains(strings.Join(grown, "\n"), "leakyWait") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a parked goroutine in leakyWait is not among the stacks that grew: %v", grown)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

//go:noinline
func leakyWait(stop chan struct{}) { <-stop }

func TestTrendWarnsOfASlowingStore(t *testing.T) {
	m := &monitor{}
	for i := range 20 {
		m.lines = append(m.lines, interval{rate: 100 - float64(i)*4, p50: time.Duration(2+i*10) * time.Millisecond})
	}
	if w := m.trend(); len(w) != 2 {
		t.Errorf("a store slowing from 100/s to 24/s, p50 2ms to 192ms: warnings %q, want two", w)
	}
	m.lines = m.lines[:0]
	for i := range 20 {
		m.lines = append(m.lines, interval{rate: 100 - float64(i%3), p50: time.Duration(2+i%4) * time.Millisecond})
	}
	if w := m.trend(); len(w) != 0 {
		t.Errorf("a steady store: warnings %q", w)
	}
}
