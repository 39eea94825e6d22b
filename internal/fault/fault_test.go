package fault

import (
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want map[string][2]float64 // point -> {p, from}
	}{
		{"", map[string][2]float64{}},
		{" , ,", map[string][2]float64{}},
		{"api.submit.committed=0.2", map[string][2]float64{APISubmitCommitted: {0.2, 1}}},
		{"worker.heartbeat.committed=1@3", map[string][2]float64{WorkerHeartbeatCommitted: {1, 3}}},
		{"worker.heartbeat.committed=@3", map[string][2]float64{WorkerHeartbeatCommitted: {1, 3}}},
		{"api.submit.committed=0.2,worker.handler.started=0.1,worker.heartbeat.committed=1@3,", map[string][2]float64{
			APISubmitCommitted: {0.2, 1}, WorkerHandlerStarted: {0.1, 1}, WorkerHeartbeatCommitted: {1, 3},
		}},
		{" api.batch.committed = 0.5 @ 10 , api.complete.committed=0", map[string][2]float64{
			APIBatchCommitted: {0.5, 10}, APICompleteCommitted: {0, 1},
		}},
		{"worker.handler.returned=1", map[string][2]float64{WorkerHandlerReturned: {1, 1}}},
	} {
		pl, err := parse(tc.spec)
		if err != nil {
			t.Errorf("parse(%q): %v", tc.spec, err)
			continue
		}
		if len(pl.rules) != len(tc.want) {
			t.Errorf("parse(%q): %d rules, want %d", tc.spec, len(pl.rules), len(tc.want))
		}
		for name, w := range tc.want {
			r := pl.rules[name]
			if r == nil || r.p != w[0] || float64(r.from) != w[1] {
				t.Errorf("parse(%q): rule of %s = %+v, want p=%v from=%v", tc.spec, name, r, w[0], w[1])
			}
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"api.submit.committed", "want point=probability"},
		{"api.submit.commited=1", `unknown point "api.submit.commited"`},
		{"=1", `unknown point ""`},
		{"api.submit.committed=", "no probability and no @hit"},
		{"api.submit.committed=@", `hit "" is not an integer >= 1`},
		{"api.submit.committed=@0", `hit "0" is not an integer >= 1`},
		{"api.submit.committed=@-2", `hit "-2"`},
		{"api.submit.committed=@1.5", `hit "1.5"`},
		{"api.submit.committed=1.5", `probability "1.5" is not a number from 0 to 1`},
		{"api.submit.committed=-0.1", `probability "-0.1"`},
		{"api.submit.committed=NaN", `probability "NaN"`},
		{"api.submit.committed=often", `probability "often"`},
		{"api.submit.committed=1@2@3", `hit "2@3"`},
		{"api.submit.committed=1,api.submit.committed=@2", "has a rule already"},
	} {
		_, err := parse(tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), Env+": ") {
			t.Errorf("parse(%q) = %v, want an error with %q", tc.spec, err, tc.want)
		}
	}
}

// hits returns which of the first n hits of name fire under spec.
func hits(t *testing.T, spec, name string, n int, rnd func() float64) []int64 {
	t.Helper()
	pl, err := parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	if rnd != nil {
		pl.rand = rnd
	}
	var fired []int64
	for i := 1; i <= n; i++ {
		fire, k, r := pl.hit(name)
		if fire {
			fired = append(fired, k)
			if got := line(name, k, r); !strings.HasPrefix(got, "latch: fault point "+name+" fired at hit ") ||
				!strings.HasSuffix(got, ": SIGKILL\n") || strings.Count(got, "\n") != 1 {
				t.Errorf("line = %q", got)
			}
		}
		if r != nil && k != int64(i) {
			t.Errorf("hit %d counted as %d", i, k)
		}
	}
	return fired
}

func TestHit(t *testing.T) {
	// @N: the N-th hit is the first that fires (a real Point never comes back).
	if got := hits(t, "worker.heartbeat.committed=@3", WorkerHeartbeatCommitted, 5, nil); len(got) == 0 || got[0] != 3 {
		t.Errorf("@3 fired at %v, want first at 3", got)
	}
	if got := hits(t, "worker.heartbeat.committed=1@1", WorkerHeartbeatCommitted, 1, nil); len(got) != 1 {
		t.Errorf("1@1 fired at %v, want 1", got)
	}
	// Another point, or no rule at all: never.
	if got := hits(t, "worker.heartbeat.committed=1", APISubmitCommitted, 100, nil); len(got) != 0 {
		t.Errorf("a point without a rule fired at %v", got)
	}
	if got := hits(t, "", APISubmitCommitted, 100, nil); len(got) != 0 {
		t.Errorf("an empty plan fired at %v", got)
	}
	// Probability 0: never, whatever the dice say.
	if got := hits(t, "api.submit.committed=0", APISubmitCommitted, 100, func() float64 { return 0 }); len(got) != 0 {
		t.Errorf("probability 0 fired at %v", got)
	}
	// P@N: hits before N never fire; from N each fires when the dice
	// fall below P.
	dice := []float64{0.9, 0.1, 0.5, 0.49}
	i := 0
	roll := func() float64 { i++; return dice[i-1] }
	got := hits(t, "api.batch.committed=0.5@4", APIBatchCommitted, 7, roll)
	if want := []int64{5, 7}; !slices.Equal(got, want) {
		t.Errorf("0.5@4 fired at %v, want %v", got, want)
	}
	if i != 4 {
		t.Errorf("the dice were rolled %d times, want once per hit from the 4th (4)", i)
	}
}

// The real source of randomness fires about as often as asked.
func TestHitProbability(t *testing.T) {
	const n = 20000
	got := len(hits(t, "worker.handler.started=0.25", WorkerHandlerStarted, n, nil))
	if got < n/4-n/20 || got > n/4+n/20 {
		t.Errorf("probability 0.25 fired %d times in %d hits", got, n)
	}
}

// Hits from many goroutines are each counted once: those numbered from N
// on fire, each number once (a real Point would have died at the first).
func TestHitConcurrent(t *testing.T) {
	pl, err := parse("api.submit.committed=@500")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var fired []int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 125 {
				if fire, k, _ := pl.hit(APISubmitCommitted); fire {
					mu.Lock()
					fired = append(fired, k)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	slices.Sort(fired)
	n := len(fired)
	if fired = slices.Compact(fired); n != 501 || len(fired) != 501 || fired[0] != 500 || fired[500] != 1000 {
		t.Errorf("of 1000 hits, %d fired, %d distinct, want hits 500 to 1000 each once", n, len(fired))
	}
}

func TestPoints(t *testing.T) {
	ps := Points()
	seen := map[string]bool{}
	for _, p := range ps {
		if seen[p] || p == "" || strings.ContainsAny(p, "=,@ ") {
			t.Errorf("bad or repeated point name %q", p)
		}
		seen[p] = true
		if _, err := parse(p + "=1"); err != nil {
			t.Errorf("point %s: %v", p, err)
		}
	}
	ps[0] = "changed"
	if Points()[0] == "changed" {
		t.Error("Points returns the package's own slice")
	}
}
