package soak

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"time"

	"github.com/latch-run/latch/store"
)

// monitor samples the process and the tenant every Config.SampleEvery and
// writes a progress line every Config.ReportEvery.
type monitor struct {
	r *runner

	mu      sync.Mutex
	samples []Sample

	lastAt      time.Duration // of the last progress line
	lastSubmits int64
	gcCycles    uint64     // GC cycles at the last sample
	lines       []interval // one per progress line
}

// interval is what one progress line said of the submits.
type interval struct {
	rate float64
	p50  time.Duration
}

// run samples until stop is closed.
func (m *monitor) run(stop <-chan struct{}) {
	sample := time.NewTicker(m.r.cfg.SampleEvery)
	defer sample.Stop()
	report := time.NewTicker(m.r.cfg.ReportEvery)
	defer report.Stop()
	for {
		select {
		case <-stop:
			return
		case <-sample.C:
			m.take(true)
		case <-report.C:
			m.report(m.take(true))
		}
	}
}

// take reads one sample, records it if keep, and returns it.
func (m *monitor) take(keep bool) Sample {
	s := m.readProcess()
	s.At = time.Since(m.r.loadStart)
	s.Inflight = -1
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tn, err := m.r.st.GetTenant(ctx, &store.GetTenantParams{Name: m.r.tenant})
	if err != nil {
		m.r.found.add("errors", "reading the tenant: %v", err)
	} else {
		s.Inflight = tn.Inflight
		if tn.Inflight < 0 || tn.Inflight > tn.MaxInflight {
			m.r.found.add("I3", "at %s the tenant's inflight is %d (max_inflight %d)",
				s.At.Round(time.Millisecond), tn.Inflight, tn.MaxInflight)
		}
	}
	if keep {
		m.mu.Lock()
		m.samples = append(m.samples, s)
		m.mu.Unlock()
	}
	return s
}

// report writes the progress line for the interval since the last one,
// unless that is shorter than a quarter of ReportEvery (the load's end
// just after a line).
func (m *monitor) report(s Sample) {
	submits := m.r.submits.Load()
	secs := (s.At - m.lastAt).Seconds()
	if secs < m.r.cfg.ReportEvery.Seconds()/4 {
		return
	}
	sub, start := m.r.submitLat.next(), m.r.startLat.next()
	fds := "?"
	if s.FDs >= 0 {
		fds = fmt.Sprint(s.FDs)
	}
	rate := float64(submits-m.lastSubmits) / secs
	fmt.Fprintf(m.r.cfg.Out, "%7s  submits/s %6.1f  submit p50 %-7s p99 %-7s  start p50 %-7s p99 %-7s  heap %s live %s  goroutines %d  fds %s  inflight %d\n",
		s.At.Round(time.Second), rate,
		fmtDur(sub.quantile(0.5)), fmtDur(sub.quantile(0.99)),
		fmtDur(start.quantile(0.5)), fmtDur(start.quantile(0.99)),
		mib(float64(s.Heap)), mib(float64(s.Live)), s.Goroutines, fds, s.Inflight)
	m.lastAt, m.lastSubmits = s.At, submits
	m.mu.Lock()
	m.lines = append(m.lines, interval{rate: rate, p50: sub.quantile(0.5)})
	m.mu.Unlock()
}

// trend compares the first and the last tenth of the progress lines (one
// line at least, five lines in all): a store that slows down as it fills
// shows a falling submit rate or a rising submit latency. It is a warning,
// not a breach: a shared machine's load varies too.
func (m *monitor) trend() []string {
	m.mu.Lock()
	lines := slices.Clone(m.lines)
	m.mu.Unlock()
	if len(lines) < 5 {
		return nil
	}
	k := max(1, len(lines)/10)
	sum := func(part []interval) (rate float64, p50 time.Duration) {
		var ps []time.Duration
		for _, l := range part {
			rate += l.rate / float64(len(part))
			ps = append(ps, l.p50)
		}
		slices.Sort(ps)
		return rate, ps[len(ps)/2]
	}
	r0, p0 := sum(lines[:k])
	r1, p1 := sum(lines[len(lines)-k:])
	var out []string
	if r1 < 0.8*r0 {
		out = append(out, fmt.Sprintf("the submit rate fell from %.1f/s in the first tenth of the run to %.1f/s in the last", r0, r1))
	}
	if p1 > 5*p0 && p1 > 20*time.Millisecond {
		out = append(out, fmt.Sprintf("the submit p50 rose from %s in the first tenth of the run to %s in the last", fmtDur(p0), fmtDur(p1)))
	}
	return out
}

func (m *monitor) all() []Sample {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Sample(nil), m.samples...)
}

// readProcess reads the heap (runtime/metrics), the goroutines and the
// open file descriptors. The live heap is as of the last GC; when none
// has run since the previous sample, it forces one, so that every sample's
// live heap is fresh (a short run, or a process that allocates little,
// would otherwise show the same stale figure for long stretches).
func (m *monitor) readProcess() Sample {
	ms := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/heap/live:bytes"},
		{Name: "/gc/cycles/total:gc-cycles"},
	}
	metrics.Read(ms)
	if ms[2].Value.Kind() == metrics.KindUint64 {
		if cycles := ms[2].Value.Uint64(); cycles == m.gcCycles {
			runtime.GC()
			metrics.Read(ms)
		}
		m.gcCycles = ms[2].Value.Uint64()
	}
	var s Sample
	if ms[0].Value.Kind() == metrics.KindUint64 {
		s.Heap = ms[0].Value.Uint64()
	}
	if ms[1].Value.Kind() == metrics.KindUint64 {
		s.Live = ms[1].Value.Uint64()
	}
	s.Goroutines = runtime.NumGoroutine()
	s.FDs = openFiles()
	return s
}

// openFiles counts the process's open file descriptors (Linux), -1
// elsewhere.
func openFiles() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents) - 1 // the directory being read
}
