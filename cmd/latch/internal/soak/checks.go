package soak

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/latch-run/latch/store"
)

// evidence is everything the checks judge, gathered once the soak has
// stopped: what the soak was told (acks), what its witness saw (starts and
// the gauge), and what the store holds (execs, the tenant's inflight).
type evidence struct {
	acks   []ackRec
	starts []startRec
	execs  map[string]*execRec

	inflight     int   // the tenant's counter at the end
	stored       int64 // the tenant's stored bytes at the end
	drained      bool  // the drain saw nothing unfinished
	rate         store.RateLimit
	concPeak     int            // most ConcurrencyKey handlers at once
	schedPeak    map[string]int // most handlers of each schedule at once
	submits      int
	resubmits    int // answered, checked live
	cancels      int
	load         time.Duration
	storeQuantum time.Duration // the coarsest time a backend may store: tolerance on StartedAt
}

// execRec is what the checks need of one execution as the store lists it.
type execRec struct {
	id       string
	status   store.Status
	attempt  int
	key      string
	rateKey  string
	schedule string
	started  time.Time // of the latest attempt; zero if it never started
	stored   int64     // what it counts in the tenant's storage budget
}

// check gathers the evidence, judges it, and fills res.
func (r *runner) check(ctx context.Context, res *Result) error {
	acks, starts, err := r.jn.read()
	if err != nil {
		return err
	}
	execs, err := r.listAll(ctx)
	if err != nil {
		return fmt.Errorf("soak: listing the tenant's executions for the checks: %w", err)
	}
	tn, err := r.st.GetTenant(ctx, &store.GetTenantParams{Name: r.tenant})
	if err != nil {
		return fmt.Errorf("soak: reading the tenant for the checks: %w", err)
	}
	ev := &evidence{
		acks: acks, starts: starts, execs: execs,
		inflight: tn.Inflight, stored: tn.StoredBytes, drained: res.Drained, rate: r.cfg.rateLimit(),
		concPeak: r.gauge.peak(ConcurrencyKey),
		schedPeak: map[string]int{
			SkipSchedule:  r.gauge.peak("schedule " + SkipSchedule),
			QueueSchedule: r.gauge.peak("schedule " + QueueSchedule),
		},
		submits: int(r.submits.Load()), resubmits: int(r.deduplicated.Load()),
		cancels: int(r.cancels.Load()), load: res.Load, storeQuantum: 2 * time.Millisecond,
	}
	details := judge(ev, r.found)

	details["goroutines"] = fmt.Sprintf("%d before the engine started, %d after it stopped (margin %d)",
		res.GoroutinesBefore, res.GoroutinesAfter, goroutineMargin)
	half := secondHalf(res.Samples, res.Load)
	for _, s := range []struct {
		check, name, unit string
		value             func(Sample) float64
		limit             func(float64) float64
	}{
		{"memory", "live heap", "B", func(s Sample) float64 { return float64(s.Live) },
			func(first float64) float64 { return max(8<<20, first/4) }},
		{"goroutines", "goroutines", "", func(s Sample) float64 { return float64(s.Goroutines) },
			func(first float64) float64 { return max(20, first/4) }},
		{"files", "open files", "", func(s Sample) float64 { return float64(s.FDs) },
			func(first float64) float64 { return max(8, first/4) }},
	} {
		var at []time.Duration
		var vs []float64
		for _, x := range half {
			if s.check == "files" && x.FDs < 0 {
				continue
			}
			at = append(at, x.At)
			vs = append(vs, s.value(x))
		}
		g := judgeGrowth(s.name, s.unit, at, vs, s.limit)
		if g.breach {
			r.found.add(s.check, "grows steadily: %s", g.String())
		}
		if details[s.check] != "" {
			details[s.check] += "; "
		}
		details[s.check] += g.String()
	}
	nErrors := r.found.count("errors")
	details["errors"] = fmt.Sprintf("%d store calls failed or engine errors logged", nErrors)

	res.Submits, res.Acknowledged = ev.submits, int(r.acknowledged.Load())
	res.Deduplicated, res.Refused = ev.resubmits, int(r.refused.Load())
	res.Cancels, res.Starts, res.Executions = ev.cancels, len(starts), len(execs)
	res.CancelledAtOnce, res.CancelRequested = int(r.cancelledAtOnce.Load()), int(r.cancelRequested.Load())
	sub, st := r.submitLat.total(), r.startLat.total()
	res.SubmitP50, res.SubmitP99 = sub.quantile(0.5), sub.quantile(0.99)
	res.StartP50, res.StartP99 = st.quantile(0.5), st.quantile(0.99)
	for _, c := range checkOrder {
		res.Checks = append(res.Checks, Check{Name: c.name, Title: c.title, Breaches: r.found.count(c.name), Detail: details[c.name]})
	}
	r.found.mu.Lock()
	res.Breaches = slices.Clone(r.found.list)
	r.found.mu.Unlock()
	return nil
}

// checkOrder is every check, in the order the summary lists them.
var checkOrder = []struct{ name, title string }{
	{"I1", "one execution per dedup key"},
	{"I2", "each attempt started once"},
	{"I3", "inflight counts what is unfinished"},
	{"storage", "stored bytes are what the executions hold"},
	{"I4", "concurrency limit"},
	{"I6", "one execution per tick, never two running"},
	{"I7", "rate limit on every window"},
	{"I8", "nothing acknowledged lost"},
	{"done", "everything finished as planned"},
	{"goroutines", "no goroutine leak"},
	{"memory", "no steady heap growth"},
	{"files", "no file or connection leak"},
	{"errors", "no failed store call, no engine error"},
	{"coverage", "the load exercised what is checked"},
}

// judge applies the invariant checks to the evidence, adds each breach to
// found, and returns each check's figures.
func judge(ev *evidence, found *findings) map[string]string {
	d := map[string]string{}

	// Starts per (execution, attempt), as the witness saw them.
	type attemptKey struct {
		id      string
		attempt int
	}
	startsOf := map[attemptKey][]time.Time{}
	lastAttempt := map[string]int{}
	for _, s := range ev.starts {
		k := attemptKey{s.id, s.attempt}
		startsOf[k] = append(startsOf[k], s.at)
		lastAttempt[s.id] = max(lastAttempt[s.id], s.attempt)
	}

	// I1: every dedup key (the schedules' aside: I6) maps to one execution,
	// the one the first submit was acknowledged with; resubmits were
	// checked as they were answered.
	byKey := map[string][]string{}
	for _, e := range ev.execs {
		if e.key != "" {
			byKey[e.key] = append(byKey[e.key], e.id)
		}
	}
	keys := 0
	for key, ids := range byKey {
		if strings.HasPrefix(key, "schedule:") {
			continue
		}
		keys++
		if len(ids) > 1 {
			slices.Sort(ids)
			found.add("I1", "dedup key %s maps to %d executions: %v", key, len(ids), ids)
		}
	}
	for _, a := range ev.acks {
		if ids := byKey[a.key]; a.key != "" && len(ids) > 0 && !slices.Contains(ids, a.id) {
			found.add("I1", "key %s was acknowledged with %s, the store has %v", a.key, a.id, ids)
		}
	}
	d["I1"] = fmt.Sprintf("%d dedup keys and %d resubmits checked", keys, ev.resubmits)

	// I2: no attempt started twice; every attempt the store counts was
	// started, and none it does not count.
	twice := 0
	for k, ts := range startsOf {
		if len(ts) > 1 {
			twice++
			found.add("I2", "attempt %d of %s started %d times, at %s", k.attempt, k.id, len(ts), fmtTimes(ts))
		}
	}
	for _, e := range ev.execs {
		if e.status.Terminal() {
			for a := 1; a <= e.attempt; a++ {
				if len(startsOf[attemptKey{e.id, a}]) == 0 {
					found.add("I2", "the store counts attempt %d of %s (%s after %d), but no handler started it",
						a, e.id, e.status, e.attempt)
				}
			}
		}
		if la := lastAttempt[e.id]; la > e.attempt {
			found.add("I2", "a handler ran attempt %d of %s, the store counts %d", la, e.id, e.attempt)
		}
	}
	d["I2"] = fmt.Sprintf("%d handler starts of %d attempts checked", len(ev.starts), len(startsOf))

	// I8: the store has every execution it acknowledged and every one a
	// handler ran.
	lost := 0
	for _, a := range ev.acks {
		if ev.execs[a.id] == nil {
			lost++
			found.add("I8", "acknowledged execution %s (%s, key %q) is not in the store", a.id, a.class, a.key)
		}
	}
	for id := range lastAttempt {
		if ev.execs[id] == nil {
			found.add("I8", "a handler ran %s, which the store does not have", id)
		}
	}
	d["I8"] = fmt.Sprintf("%d acknowledged executions looked up", len(ev.acks))

	// I3: the counter equals what is unfinished, 0 once drained.
	unfinished := 0
	for _, e := range ev.execs {
		if e.status.Inflight() {
			unfinished++
		}
	}
	switch {
	case ev.inflight != unfinished:
		found.add("I3", "the tenant's inflight is %d, but %d of its executions are scheduled, queued or running",
			ev.inflight, unfinished)
	case ev.drained && ev.inflight != 0:
		found.add("I3", "the tenant's inflight is %d after the drain, want 0", ev.inflight)
	}
	d["I3"] = fmt.Sprintf("inflight %d at the end, %d unfinished executions; within max_inflight at every sample", ev.inflight, unfinished)

	// The storage budget's count equals what the executions count.
	var stored int64
	for _, e := range ev.execs {
		stored += e.stored
	}
	if ev.stored != stored {
		found.add("storage", "the tenant's stored_bytes is %d, but its executions count %d", ev.stored, stored)
	}
	d["storage"] = fmt.Sprintf("stored_bytes %d at the end, the sum over %d executions", ev.stored, len(ev.execs))

	// I4 was watched live by the gauge.
	d["I4"] = fmt.Sprintf("at most %d handlers of %s ran at once (limit %d)", ev.concPeak, ConcurrencyKey, ConcurrencyLimit)

	// I6: one execution per tick, under the tick's key; never two running
	// (watched live).
	var sched []string
	for _, name := range []string{SkipSchedule, QueueSchedule} {
		ticks, skipped := map[string][]string{}, 0
		for _, e := range ev.execs {
			if e.schedule != name {
				continue
			}
			if !strings.HasPrefix(e.key, "schedule:"+name+":") {
				found.add("I6", "execution %s of schedule %s has dedup key %q, not its tick's", e.id, name, e.key)
			}
			ticks[e.key] = append(ticks[e.key], e.id)
			if e.status == store.StatusSkipped {
				skipped++
			}
		}
		for key, ids := range ticks {
			if len(ids) > 1 {
				found.add("I6", "tick %s has %d executions: %v", key, len(ids), ids)
			}
		}
		sched = append(sched, fmt.Sprintf("%s %d ticks (%d skipped), at most %d running", name, len(ticks), skipped, ev.schedPeak[name]))
	}
	d["I6"] = strings.Join(sched, "; ")

	// I7, twice: on the handlers' start times as the witness saw them, and
	// on the claim times the store recorded (StartedAt, latest attempt).
	// A handler starts a little after its claim, so the witness's windows
	// get a slack: the largest such delay seen (handler start minus
	// StartedAt of the same attempt) plus the store's time quantum.
	iv := ev.rate.Interval()
	var witnessed, claimed []time.Time
	var slack time.Duration
	for _, s := range ev.starts {
		if s.class == classRate {
			witnessed = append(witnessed, s.at)
		}
	}
	for _, e := range ev.execs {
		if e.rateKey != RateKey || e.started.IsZero() {
			continue
		}
		claimed = append(claimed, e.started)
		if ts := startsOf[attemptKey{e.id, e.attempt}]; len(ts) > 0 {
			slack = max(slack, ts[0].Sub(e.started))
		}
	}
	slack += ev.storeQuantum
	for _, w := range []struct {
		what  string
		ts    []time.Time
		slack time.Duration
	}{{"handler starts", witnessed, slack}, {"store StartedAt", claimed, ev.storeQuantum}} {
		slices.SortFunc(w.ts, time.Time.Compare)
		for _, b := range rateWindows(w.ts, ev.rate.Burst, iv, w.slack) {
			found.add("I7", "%s: %d starts of %s within %s from %s, allowed %d (burst %d + %d per %s, slack %s)",
				w.what, b.n, RateKey, b.to.Sub(b.from), b.from.Format("15:04:05.000"), b.allowed,
				ev.rate.Burst, ev.rate.Rate, ev.rate.Per, w.slack)
		}
	}
	d["I7"] = fmt.Sprintf("%d handler starts (slack %s) and %d store start times under %d per %s burst %d",
		len(witnessed), slack.Round(time.Microsecond), len(claimed), ev.rate.Rate, ev.rate.Per, ev.rate.Burst)

	// Everything finished, as planned: the load's executions succeed
	// (cancel targets may end cancelled), the schedules' succeed or are
	// skipped.
	for _, e := range ev.execs {
		if !e.status.Terminal() {
			found.add("done", "%s is still %s after the drain (attempt %d)", e.id, e.status, e.attempt)
		}
	}
	cancelTargets := 0
	for _, a := range ev.acks {
		if a.class == classCancel {
			cancelTargets++
		}
		e := ev.execs[a.id]
		if e == nil || !e.status.Terminal() {
			continue
		}
		if !(e.status == store.StatusSucceeded || (a.class == classCancel && e.status == store.StatusCancelled)) {
			found.add("done", "%s (%s) ended %s after %d attempt(s)", a.id, a.class, e.status, e.attempt)
		}
	}
	for _, e := range ev.execs {
		if e.schedule != "" && e.status.Terminal() && e.status != store.StatusSucceeded && e.status != store.StatusSkipped {
			found.add("done", "%s of schedule %s ended %s", e.id, e.schedule, e.status)
		}
	}
	d["done"] = fmt.Sprintf("%d executions checked, %d of them cancel targets", len(ev.execs), cancelTargets)

	// Coverage: a check of what never happened proves nothing.
	count := func(c class, attempt int) int {
		n := 0
		for _, s := range ev.starts {
			if s.class == c && (attempt == 0 || s.attempt == attempt) {
				n++
			}
		}
		return n
	}
	schedRan := func(name string) int {
		n := 0
		for _, s := range ev.starts {
			if s.sched == name {
				n++
			}
		}
		return n
	}
	cover := []struct {
		what string
		got  int
		need bool
	}{
		{"resubmits of a dedup key", ev.resubmits, ev.submits >= 100},
		{"starts of rate-limited executions", count(classRate, 0), ev.submits >= 100},
		{"starts of concurrency-limited executions", count(classConc, 0), ev.submits >= 100},
		{"retries of failed attempts", count(classFail, 2), ev.submits >= 100},
		{"cancels", ev.cancels, ev.submits >= 100},
		{"runs of schedule " + SkipSchedule, schedRan(SkipSchedule), ev.load >= 4*time.Second},
		{"runs of schedule " + QueueSchedule, schedRan(QueueSchedule), ev.load >= 6*time.Second},
	}
	var got []string
	for _, c := range cover {
		got = append(got, fmt.Sprintf("%d %s", c.got, c.what))
		if c.need && c.got == 0 {
			found.add("coverage", "no %s in %d submits over %s: the checks of them prove nothing", c.what, ev.submits, ev.load)
		}
	}
	d["coverage"] = strings.Join(got, ", ")
	return d
}

// rateBreach is a window of starts over a rate limit.
type rateBreach struct {
	n        int
	from, to time.Time
	allowed  int
}

// rateWindows checks I7 on start times sorted in order: every window
// [t_i, t_j] holds at most burst + (t_j - t_i + slack)/interval starts. It
// runs GCRA's virtual scheduling over the starts, which finds exactly the
// starts that end a window over the limit, in one pass: the theoretical
// arrival time after start j is max over i <= j of t_i + (j-i+1)·interval,
// so start j+1 is early iff some window ending at it is over. Every such
// start is reported with its widest window.
func rateWindows(ts []time.Time, burst int, interval, slack time.Duration) []rateBreach {
	var out []rateBreach
	var tat time.Time
	origin := 0
	tau := time.Duration(burst-1) * interval
	for j, t := range ts {
		if j > 0 && t.Add(slack).Before(tat.Add(-tau)) {
			out = append(out, rateBreach{n: j - origin + 1, from: ts[origin], to: t,
				allowed: burst + int((t.Sub(ts[origin])+slack)/interval)})
		}
		if j == 0 || !t.Before(tat) {
			tat, origin = t, j
		}
		tat = tat.Add(interval)
	}
	return out
}

// listAll reads every execution of the tenant.
func (r *runner) listAll(ctx context.Context) (map[string]*execRec, error) {
	out := map[string]*execRec{}
	p := store.ListParams{Tenant: r.tenant, Limit: store.MaxListLimit}
	for {
		page, err := r.st.List(ctx, &p)
		if err != nil {
			return nil, err
		}
		for _, x := range page.Items {
			e := &execRec{id: x.ID, status: x.Status, attempt: x.Attempt, key: x.DedupKey,
				rateKey: x.RateKey, schedule: x.Schedule, stored: x.StoredBytes}
			if x.StartedAt != nil {
				e.started = *x.StartedAt
			}
			out[x.ID] = e
		}
		if page.Next == "" {
			return out, nil
		}
		p.After = page.Next
	}
}

// secondHalf returns the samples of the second half of the load.
func secondHalf(samples []Sample, load time.Duration) []Sample {
	var out []Sample
	for _, s := range samples {
		if s.At >= load/2 {
			out = append(out, s)
		}
	}
	return out
}

func fmtTimes(ts []time.Time) string {
	var s []string
	for _, t := range ts {
		s = append(s, t.Format("15:04:05.000000"))
	}
	return strings.Join(s, ", ")
}
