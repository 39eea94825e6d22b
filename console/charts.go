package console

import (
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/latch-run/latch/store"
)

// The overview's activity charts: bar charts drawn here as inline SVG, one
// bar a minute, so the page needs no script and no chart library, and the
// page's CSP (no inline styles, no inline scripts) holds: the SVG uses
// presentation attributes and CSS classes only.

// chartMinutes is how many minutes a chart shows, the last one being the
// current (partial) minute.
const chartMinutes = 60

// series is one count per minute, oldest first, the last being now's
// minute.
type series struct {
	First  time.Time // the first bar's minute
	Counts []int
}

// activitySeries spreads the store's activity minutes (which leave out
// minutes with nothing reported) over the chartMinutes up to now's minute:
// the starts and the failures.
func activitySeries(mins []*store.ActivityMinute, now time.Time) (starts, failures series) {
	first := store.MinuteOf(now).Add(-(chartMinutes - 1) * time.Minute)
	starts = series{First: first, Counts: make([]int, chartMinutes)}
	failures = series{First: first, Counts: make([]int, chartMinutes)}
	for _, m := range mins {
		i := int(m.Minute.Sub(first) / time.Minute)
		if i < 0 || i >= chartMinutes {
			continue
		}
		starts.Counts[i] += m.Starts
		failures.Counts[i] += m.Failures
	}
	return starts, failures
}

// Chart geometry, in SVG user units (the SVG scales to its box).
const (
	chartW   = 600
	chartH   = 100
	chartTop = 14 // room for the maximum's label
	chartBot = 16 // room for the time axis' labels
	barGap   = 2
)

// chart draws s as bars titled what ("starts", "failures"); class picks
// the bars' colour in style.css.
func chart(s series, what, class string) template.HTML {
	peak, total := 0, 0
	for _, n := range s.Counts {
		peak = max(peak, n)
		total += n
	}
	esc := template.HTMLEscapeString
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart %s" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`,
		esc(class), chartW, chartH, chartW, chartH,
		esc(fmt.Sprintf("%s per minute over the last hour: %d in all, at most %d in a minute", what, total, peak)))
	plot := chartH - chartTop - chartBot
	fmt.Fprintf(&b, `<line class="axis" x1="0" y1="%d" x2="%d" y2="%d"/>`, chartH-chartBot, chartW, chartH-chartBot)
	slot := float64(chartW) / float64(len(s.Counts))
	for i, n := range s.Counts {
		if n == 0 {
			continue
		}
		h := float64(plot) * float64(n) / float64(peak)
		h = max(h, 1)
		minute := s.First.Add(time.Duration(i) * time.Minute)
		fmt.Fprintf(&b, `<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s: %d %s</title></rect>`,
			float64(i)*slot+barGap/2, float64(chartH-chartBot)-h, slot-barGap, h,
			minute.UTC().Format("15:04Z"), n, esc(what))
	}
	fmt.Fprintf(&b, `<text class="label" x="0" y="10">max %d/min</text>`, peak)
	fmt.Fprintf(&b, `<text class="label" x="0" y="%d">%s</text>`, chartH-3, s.First.UTC().Format("15:04Z"))
	fmt.Fprintf(&b, `<text class="label" x="%d" y="%d" text-anchor="end">now</text>`, chartW, chartH-3)
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // built above from numbers, times and escaped text
}
