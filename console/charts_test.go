package console

import (
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// The activity charts: one bar per minute with counts, placed by minute,
// minutes outside the hour left out, the peak the tallest bar.
func TestActivityChart(t *testing.T) {
	now := time.Date(2030, 1, 2, 15, 4, 30, 0, time.UTC)
	mins := []*store.ActivityMinute{
		{Minute: store.MinuteOf(now), Starts: 4, Failures: 1},
		{Minute: store.MinuteOf(now).Add(-10 * time.Minute), Starts: 2},
		{Minute: store.MinuteOf(now).Add(-2 * time.Hour), Starts: 99}, // before the hour
	}
	starts, failures := activitySeries(mins, now)
	if starts.First != time.Date(2030, 1, 2, 14, 5, 0, 0, time.UTC) || len(starts.Counts) != 60 ||
		starts.Counts[59] != 4 || starts.Counts[49] != 2 || failures.Counts[59] != 1 {
		t.Fatalf("series: %v %v", starts, failures)
	}
	svg := string(chart(starts, "starts", "starts"))
	if n := strings.Count(svg, "<rect"); n != 2 {
		t.Errorf("%d bars, want 2:\n%s", n, svg)
	}
	for _, want := range []string{`aria-label="starts per minute over the last hour: 6 in all, at most 4 in a minute"`,
		`<title>15:04Z: 4 starts</title>`, `<title>14:54Z: 2 starts</title>`, `height="70.0"`, "max 4/min", ">14:05Z<"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the chart lacks %q:\n%s", want, svg)
		}
	}
	if strings.Contains(svg, "style=") || strings.Contains(svg, "<script") {
		t.Errorf("the chart has inline style or script, which the CSP refuses:\n%s", svg)
	}
	if empty := string(chart(series{First: starts.First, Counts: make([]int, 60)}, "failures", "failures")); strings.Contains(empty, "<rect") ||
		!strings.Contains(empty, "0 in all") {
		t.Errorf("an empty hour:\n%s", empty)
	}
	if got := string(chart(starts, `<b>"x"`, "starts")); strings.Contains(got, "<b>") {
		t.Errorf("the chart's text is not escaped:\n%s", got)
	}
}
