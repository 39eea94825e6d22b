package soak

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// The steady-growth rule, applied to the heap, the goroutines and the open
// file descriptors sampled during the load:
//
//   - Take the samples of the second half of the load (the first half is
//     warm-up: pools fill, caches warm, the backlog settles). At least
//     minGrowthSamples are needed, or the series is not judged.
//   - Fit a least-squares line; its slope times the half's span is the
//     growth.
//   - Cut the half into four consecutive quarters and take each one's
//     median. The growth is steady when the four medians strictly increase:
//     a leak climbs all the time, while noise, a GC cycle or one burst does
//     not.
//   - Breach: steady and the growth above the series' threshold (limit).
//
// A process that leaks a little per execution under steady load fails it;
// one that plateaus, saw-tooths or has one spike does not.
const minGrowthSamples = 8

// growth is the rule's verdict on one series.
type growth struct {
	name    string
	unit    string  // "B" for bytes, "" for counts
	judged  bool    // enough samples
	samples int     // in the second half
	slope   float64 // per second
	grew    float64 // slope × span of the second half
	medians [4]float64
	steady  bool
	limit   float64
	breach  bool
}

// judgeGrowth applies the rule to the second-half samples vs taken at at.
// limit computes the threshold from the first quarter's median.
func judgeGrowth(name, unit string, at []time.Duration, vs []float64, limit func(first float64) float64) growth {
	g := growth{name: name, unit: unit, samples: len(vs)}
	if len(vs) < minGrowthSamples || len(at) != len(vs) {
		return g
	}
	g.judged = true
	n := float64(len(vs))
	var sx, sy, sxx, sxy float64
	for i, v := range vs {
		x := at[i].Seconds()
		sx += x
		sy += v
		sxx += x * x
		sxy += x * v
	}
	if d := n*sxx - sx*sx; d > 0 {
		g.slope = (n*sxy - sx*sy) / d
	}
	g.grew = g.slope * (at[len(at)-1] - at[0]).Seconds()
	g.steady = g.slope > 0
	for q := range 4 {
		part := slices.Clone(vs[q*len(vs)/4 : (q+1)*len(vs)/4])
		slices.Sort(part)
		g.medians[q] = part[len(part)/2]
		if q > 0 && g.medians[q] <= g.medians[q-1] {
			g.steady = false
		}
	}
	g.limit = limit(g.medians[0])
	g.breach = g.steady && g.grew > g.limit
	return g
}

func (g *growth) String() string {
	if !g.judged {
		return fmt.Sprintf("%s: not judged, %d samples in the second half (need %d: run longer)",
			g.name, g.samples, minGrowthSamples)
	}
	f := func(v float64) string {
		if g.unit == "B" {
			return mib(v)
		}
		return fmt.Sprintf("%.0f", math.Round(v)+0) // +0: never "-0"
	}
	how := "does not rise in every quarter"
	if g.steady {
		how = "rises in every quarter"
	}
	sign := ""
	if g.grew >= 0 {
		sign = "+"
	}
	return fmt.Sprintf("%s: %s%s over the second half (%s; quarter medians %s %s %s %s), limit %s",
		g.name, sign, f(g.grew), how, f(g.medians[0]), f(g.medians[1]), f(g.medians[2]), f(g.medians[3]), f(g.limit))
}

func mib(v float64) string {
	return fmt.Sprintf("%.1fMiB", math.Round(v/(1<<20)*10)/10+0) // +0: never "-0.0"
}
