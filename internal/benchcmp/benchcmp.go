// Package benchcmp holds what the side-by-side benchmarks against a peer
// (bench/river, bench/asynq) share: one run's figures as JSON, and, over
// several runs, each figure's median and each run's ratio of latch to the
// peer.
//
// The ratios lead because they are what survives a change of machine: both
// sides of a row run in the same minute of the same run, so a slower spell
// of the machine moves both, while absolute figures move by 20-45 % between
// machines of one kind. A ratio is stated as the median of the runs'
// ratios with their range, and a target counts as met only when every run
// meets it (Verdict).
//
// It is a harness that stays in internal/: it has two users, bench/river
// and bench/asynq (modules of their own), not one to stand beside.
package benchcmp

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/latch-run/latch/store/storebench"
)

// Measurement is one side's figure for one row.
type Measurement struct {
	Ops     int           `json:"ops"`
	Elapsed time.Duration `json:"elapsed_ns"`
	Rate    float64       `json:"rate"`
	P50     time.Duration `json:"p50_ns,omitempty"`
	P99     time.Duration `json:"p99_ns,omitempty"`
}

// Measure is r as a Measurement.
func Measure(r *storebench.Result) *Measurement {
	return &Measurement{Ops: r.Ops, Elapsed: r.Elapsed, Rate: r.PerSecond(),
		P50: r.Percentile(0.5), P99: r.Percentile(0.99)}
}

// Row is one line of the table: a workload and each side's figure. A
// Latency row compares p99 latencies, the others throughput.
type Row struct {
	Key      string       `json:"key"`
	Workload string       `json:"workload"`
	Latency  bool         `json:"latency"`
	Latch    *Measurement `json:"latch,omitempty"`
	Peer     *Measurement `json:"peer,omitempty"`
}

// Report is one run.
type Report struct {
	Peer       string `json:"peer"` // "River", "Asynq"
	Date       string `json:"date"`
	Params     string `json:"params"`
	LoadBefore string `json:"load_before"`
	LoadAfter  string `json:"load_after"`
	Rows       []Row  `json:"rows"`
}

// WriteFile writes rep as JSON, for ReadFiles.
func (rep *Report) WriteFile(path string) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// ReadFiles reads runs written by WriteFile. They must be runs of one
// benchmark with the same parameters and rows.
func ReadFiles(paths []string) ([]*Report, error) {
	var reps []*Report
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		rep := &Report{}
		if err := json.Unmarshal(b, rep); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if len(reps) > 0 {
			if err := sameRun(reps[0], rep); err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
		}
		reps = append(reps, rep)
	}
	if len(reps) == 0 {
		return nil, fmt.Errorf("no runs")
	}
	return reps, nil
}

func sameRun(a, b *Report) error {
	if a.Peer != b.Peer || a.Params != b.Params {
		return fmt.Errorf("ran against %s with %q, not %s with %q", b.Peer, b.Params, a.Peer, a.Params)
	}
	if len(a.Rows) != len(b.Rows) {
		return fmt.Errorf("holds %d rows, not %d", len(b.Rows), len(a.Rows))
	}
	for i := range a.Rows {
		if a.Rows[i].Key != b.Rows[i].Key {
			return fmt.Errorf("row %d is %s, not %s", i+1, b.Rows[i].Key, a.Rows[i].Key)
		}
	}
	return nil
}

// Ratio is latch's figure against the peer's in one row: throughput over
// the peer's, or the peer's p99 over latch's, so that above 1 is latch
// ahead either way. ok is false when a side has no figure.
func (r Row) Ratio() (ratio float64, ok bool) {
	if r.Latch == nil || r.Peer == nil {
		return 0, false
	}
	if r.Latency {
		if r.Latch.P99 <= 0 {
			return 0, false
		}
		return float64(r.Peer.P99) / float64(r.Latch.P99), true
	}
	if r.Peer.Rate <= 0 {
		return 0, false
	}
	return r.Latch.Rate / r.Peer.Rate, true
}

// Spread is a figure over several runs: its median, lowest and highest.
type Spread struct {
	Median, Min, Max float64
	Runs             []float64 // in run order
}

// SpreadOf is the spread of vs (at least one value).
func SpreadOf(vs []float64) Spread {
	s := slices.Clone(vs)
	sort.Float64s(s)
	return Spread{Median: median(s), Min: s[0], Max: s[len(s)-1], Runs: vs}
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// RowRatios is each row's ratio over the runs (rows where some run lacks
// a side are left out), in row order.
func RowRatios(reps []*Report) (rows []Row, ratios []Spread) {
	for i, rw := range reps[0].Rows {
		var vs []float64
		for _, rep := range reps {
			v, ok := rep.Rows[i].Ratio()
			if !ok {
				vs = nil
				break
			}
			vs = append(vs, v)
		}
		if vs != nil {
			rows, ratios = append(rows, rw), append(ratios, SpreadOf(vs))
		}
	}
	return rows, ratios
}

// Verdict says whether a target ratio holds: "met" when every run reaches
// it, "met in the median only" when the median does, else "not met".
func Verdict(s Spread, target float64) string {
	switch {
	case s.Min >= target:
		return "met in every run"
	case s.Median >= target:
		return "met in the median only"
	default:
		return "not met"
	}
}

// Median is the report of the runs' per-figure medians (each figure on its
// own, so a median row may mix runs).
func Median(reps []*Report) *Report {
	med := *reps[0]
	med.Rows = nil
	for i, rw := range reps[0].Rows {
		var latch, peer []*Measurement
		for _, rep := range reps {
			latch = append(latch, rep.Rows[i].Latch)
			peer = append(peer, rep.Rows[i].Peer)
		}
		rw.Latch, rw.Peer = medianOf(latch), medianOf(peer)
		med.Rows = append(med.Rows, rw)
	}
	return &med
}

func medianOf(ms []*Measurement) *Measurement {
	ms = slices.DeleteFunc(slices.Clone(ms), func(m *Measurement) bool { return m == nil })
	if len(ms) == 0 {
		return nil
	}
	pick := func(f func(m *Measurement) float64) float64 {
		v := make([]float64, len(ms))
		for i, m := range ms {
			v[i] = f(m)
		}
		sort.Float64s(v)
		return median(v)
	}
	return &Measurement{
		Ops:  ms[0].Ops,
		Rate: pick(func(m *Measurement) float64 { return m.Rate }),
		P50:  time.Duration(pick(func(m *Measurement) float64 { return float64(m.P50) })),
		P99:  time.Duration(pick(func(m *Measurement) float64 { return float64(m.P99) })),
	}
}

// PrintRatios prints the ratio table of several runs: per row, the median
// ratio, its range and each run's.
func PrintRatios(out io.Writer, reps []*Report) {
	peer := reps[0].Peer
	fmt.Fprintf(out, "| workload | latch / %s (median) | range | each run | latch ahead in |\n|---|---|---|---|---|\n", peer)
	rows, ratios := RowRatios(reps)
	for i, rw := range rows {
		s := ratios[i]
		what := "throughput"
		if rw.Latency {
			what = "p99, " + peer + "'s / latch's"
		}
		each := make([]string, len(s.Runs))
		ahead := 0
		for j, v := range s.Runs {
			each[j] = fmt.Sprintf("%.2f", v)
			if v > 1 {
				ahead++
			}
		}
		fmt.Fprintf(out, "| %s (%s) | %.2f× | %.2f–%.2f | %s | %d of %d |\n",
			rw.Workload, what, s.Median, s.Min, s.Max, strings.Join(each, ", "), ahead, len(s.Runs))
	}
}

// PrintTable prints rep's figures as a markdown table; runs > 1 says they
// are medians.
func PrintTable(out io.Writer, rep *Report, runs int) {
	what := "one run"
	if runs > 1 {
		what = fmt.Sprintf("median of %d runs", runs)
	}
	fmt.Fprintf(out, "%s, %s\nparameters: %s\n\n| workload | latch | %s |\n|---|---|---|\n", rep.Date, what, rep.Params, rep.Peer)
	for _, r := range rep.Rows {
		fmt.Fprintf(out, "| %s | %s | %s |\n", r.Workload, cell(r.Latch, r.Latency), cell(r.Peer, r.Latency))
	}
}

// PrintRuns prints, for several runs, their dates and loads, the ratio
// table, then the table of medians.
func PrintRuns(out io.Writer, reps []*Report) {
	for i, r := range reps {
		fmt.Fprintf(out, "run %d: %s, load before %s, after %s\n", i+1, r.Date, r.LoadBefore, r.LoadAfter)
	}
	fmt.Fprintln(out)
	PrintRatios(out, reps)
	fmt.Fprintln(out)
	PrintTable(out, Median(reps), len(reps))
}

func cell(m *Measurement, latency bool) string {
	switch {
	case m == nil:
		return "—"
	case latency:
		return fmt.Sprintf("p50 %s, p99 %s", Msec(m.P50), Msec(m.P99))
	case m.P99 > 0:
		return fmt.Sprintf("%s/s (p99 %s)", Thousands(m.Rate), Msec(m.P99))
	default:
		return Thousands(m.Rate) + "/s"
	}
}

// Msec is d in milliseconds, with one decimal below 10 ms and two below 1.
func Msec(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case ms < 1:
		return fmt.Sprintf("%.2f ms", ms)
	case ms < 10:
		return fmt.Sprintf("%.1f ms", ms)
	default:
		return fmt.Sprintf("%.0f ms", ms)
	}
}

// Thousands is f rounded, with thousands separated by commas.
func Thousands(f float64) string {
	s := fmt.Sprintf("%.0f", f)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// LoadAvg is the machine's load averages (/proc/loadavg), or "?".
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
