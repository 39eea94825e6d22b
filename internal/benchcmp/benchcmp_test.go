package benchcmp

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func run(latchRate, peerRate float64, latchP99, peerP99 time.Duration) *Report {
	return &Report{Peer: "River", Params: "--n 10", Rows: []Row{
		{Key: "submit", Workload: "submit", Latch: &Measurement{Rate: latchRate}, Peer: &Measurement{Rate: peerRate}},
		{Key: "start", Workload: "submit-to-start", Latency: true,
			Latch: &Measurement{P50: latchP99 / 2, P99: latchP99}, Peer: &Measurement{P50: peerP99 / 2, P99: peerP99}},
		{Key: "local", Workload: "latch alone", Latency: true, Latch: &Measurement{P99: time.Millisecond}},
	}}
}

func TestRatiosPutLatchAheadAboveOne(t *testing.T) {
	reps := []*Report{
		run(2000, 1000, 5*time.Millisecond, 10*time.Millisecond),  // 2.0, 2.0
		run(1800, 1000, 10*time.Millisecond, 10*time.Millisecond), // 1.8, 1.0
		run(2500, 1000, 2*time.Millisecond, 10*time.Millisecond),  // 2.5, 5.0
	}
	rows, ratios := RowRatios(reps)
	if len(rows) != 2 {
		t.Fatalf("rows %d, want 2: a row with one side has no ratio", len(rows))
	}
	if s := ratios[0]; s.Median != 2.0 || s.Min != 1.8 || s.Max != 2.5 {
		t.Fatalf("throughput ratio %+v, want median 2.0 in 1.8-2.5", s)
	}
	if s := ratios[1]; s.Median != 2.0 || s.Min != 1.0 || s.Max != 5.0 {
		t.Fatalf("latency ratio %+v, want median 2.0 in 1.0-5.0", s)
	}
	if got := Verdict(ratios[0], 2.0); got != "met in the median only" {
		t.Fatalf("2x target on 1.8/2.0/2.5: %q", got)
	}
	if got := Verdict(ratios[0], 1.5); got != "met in every run" {
		t.Fatalf("1.5x target: %q", got)
	}
	if got := Verdict(ratios[0], 2.1); got != "not met" {
		t.Fatalf("2.1x target: %q", got)
	}
}

func TestMedianTakesEachFigureOnItsOwn(t *testing.T) {
	med := Median([]*Report{
		run(1000, 900, 4*time.Millisecond, 20*time.Millisecond),
		run(3000, 700, 6*time.Millisecond, 10*time.Millisecond),
		run(2000, 800, 8*time.Millisecond, 30*time.Millisecond),
	})
	if r := med.Rows[0]; r.Latch.Rate != 2000 || r.Peer.Rate != 800 {
		t.Fatalf("median rates %v / %v", r.Latch.Rate, r.Peer.Rate)
	}
	if r := med.Rows[1]; r.Latch.P99 != 6*time.Millisecond || r.Peer.P99 != 20*time.Millisecond {
		t.Fatalf("median p99 %v / %v", r.Latch.P99, r.Peer.P99)
	}
	if med.Rows[2].Peer != nil {
		t.Fatal("a side no run measured has a median")
	}
}

func TestFilesRoundTripAndMustMatch(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	if err := run(2, 1, time.Millisecond, 2*time.Millisecond).WriteFile(a); err != nil {
		t.Fatal(err)
	}
	other := run(2, 1, time.Millisecond, 2*time.Millisecond)
	other.Params = "--n 20"
	if err := other.WriteFile(b); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFiles([]string{a, b}); err == nil || !strings.Contains(err.Error(), "--n 20") {
		t.Fatalf("runs with other parameters read together: %v", err)
	}
	reps, err := ReadFiles([]string{a, a})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	PrintRuns(&out, reps)
	for _, want := range []string{"| submit (throughput) | 2.00× | 2.00–2.00 | 2.00, 2.00 | 2 of 2 |",
		"| submit-to-start | p50 0.50 ms, p99 1.0 ms | p50 1.0 ms, p99 2.0 ms |", "median of 2 runs"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestThousands(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1500: "-1,500"} {
		if got := Thousands(in); got != want {
			t.Errorf("Thousands(%v) = %q, want %q", in, got, want)
		}
	}
}
