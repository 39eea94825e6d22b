package soak

import (
	"math"
	"sync"
	"time"
)

// hist is a latency histogram with buckets 5% wide from 10µs to about
// 1000s: a fixed size however long the soak runs, quantiles within 5%.
type hist struct {
	counts [histBuckets]uint64
	n      uint64
	max    time.Duration
}

const (
	histMin     = 10 * time.Microsecond
	histGrowth  = 1.05
	histBuckets = 400
)

var histLogGrowth = math.Log(histGrowth)

func (h *hist) add(d time.Duration) {
	i := 0
	if d > histMin {
		i = min(int(math.Log(float64(d)/float64(histMin))/histLogGrowth)+1, histBuckets-1)
	}
	h.counts[i]++
	h.n++
	h.max = max(h.max, d)
}

// quantile returns the upper bound of the bucket holding the q-quantile
// (never above the largest value seen), 0 when empty.
func (h *hist) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= max(rank, 1) {
			upper := time.Duration(float64(histMin) * math.Pow(histGrowth, float64(i)))
			return min(upper, h.max)
		}
	}
	return h.max
}

// latency is a histogram of the current report interval and one of the
// whole run, safe for concurrent use.
type latency struct {
	mu       sync.Mutex
	interval hist
	all      hist
}

func (l *latency) add(d time.Duration) {
	l.mu.Lock()
	l.interval.add(d)
	l.all.add(d)
	l.mu.Unlock()
}

// next returns the interval's histogram and starts a new interval.
func (l *latency) next() hist {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.interval
	l.interval = hist{}
	return h
}

func (l *latency) total() hist {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.all
}
