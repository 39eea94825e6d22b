// Command asynq-bench measures latch on its Redis store and Asynq on the same
// Redis server, one after the other, on the workloads of docs/benchmarks.md:
// submits one at a time from concurrent goroutines, batch submits, draining
// with many worker slots, submit-to-start latency at a steady rate and
// contended same-key submits. It prints a markdown table and the parameters.
//
// It lives in a module of its own so that latch never depends on Asynq.
//
//	cd bench/asynq && go run . -redis redis://127.0.0.1:6379
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/latch-run/latch/internal/benchcmp"
	"github.com/latch-run/latch/store/storebench"
)

type config struct {
	redisURL    string
	latchDB     int
	asynqDB     int
	n           int           // submits per submit workload
	clients     int           // concurrent submitting goroutines
	batchN      int           // executions submitted in batches
	batch       int           // items per batch
	drainN      int           // jobs drained
	slots       int           // worker slots / Asynq concurrency
	rate        int           // submits per second in the latency workload
	duration    time.Duration // length of the latency workload
	warmup      time.Duration // discarded submits before it
	fastPoll    time.Duration // Asynq's TaskCheckInterval for the second latency run
	rounds      int           // contended rounds
	contenders  int           // goroutines per contended round
	uniqueTTL   time.Duration // Asynq Unique TTL
	only        string        // "", "latch" or "asynq"
	workloads   string        // comma-separated subset, "" = all
	cpuprofile  string        // directory for one CPU profile per phase
	redisStats  bool          // print the Redis server CPU used by each phase
	redisCmds   bool          // print the Redis commands that took the most time in each phase
	settle      time.Duration // pause between phases
	verboseLogs bool
	jsonOut     string // -json: write the run's figures here
}

func main() {
	var c config
	flag.StringVar(&c.redisURL, "redis", envOr("LATCH_BENCH_REDIS_URL", "redis://127.0.0.1:6379"),
		"Redis server both sides use (the URL's DB is ignored: see -latch-db, -asynq-db)")
	flag.IntVar(&c.latchDB, "latch-db", 2, "Redis DB for latch (keys under a fresh prefix, deleted afterwards)")
	flag.IntVar(&c.asynqDB, "asynq-db", 3, "Redis DB for Asynq (its asynq:* keys are deleted before and after)")
	flag.IntVar(&c.n, "n", 50000, "submits per one-at-a-time submit workload")
	flag.IntVar(&c.clients, "clients", 16, "concurrent submitting goroutines")
	flag.IntVar(&c.batchN, "batch-n", 50000, "executions submitted by the batch workload")
	flag.IntVar(&c.batch, "batch", 100, "items per batch submit")
	flag.IntVar(&c.drainN, "drain", 50000, "jobs queued, then drained")
	flag.IntVar(&c.slots, "slots", 100, "worker slots (latch) / concurrency (Asynq) when draining and in the latency workload")
	flag.IntVar(&c.rate, "rate", 500, "submits per second in the submit-to-start workload")
	flag.DurationVar(&c.duration, "duration", 10*time.Second, "length of the submit-to-start workload")
	flag.DurationVar(&c.warmup, "warmup", time.Second, "submits at the same rate before it, not recorded")
	flag.DurationVar(&c.fastPoll, "asynq-fast-poll", 10*time.Millisecond, "Asynq TaskCheckInterval of the second latency run (the first uses its default)")
	flag.IntVar(&c.rounds, "rounds", 500, "contended rounds, after one that is not recorded")
	flag.IntVar(&c.contenders, "contenders", 64, "goroutines submitting one key per contended round")
	flag.DurationVar(&c.uniqueTTL, "unique-ttl", 24*time.Hour, "Asynq Unique() TTL")
	flag.StringVar(&c.only, "only", "", "run one side only: latch or asynq")
	flag.StringVar(&c.workloads, "workloads", "", "comma-separated subset of submit,batch,drain,latency,contended (default all)")
	flag.StringVar(&c.cpuprofile, "cpuprofile", "", "write one CPU profile of this process per phase into this directory")
	flag.BoolVar(&c.redisStats, "redis-stats", true, "report the Redis server's CPU time per phase (INFO cpu; includes other clients of the server)")
	flag.BoolVar(&c.redisCmds, "redis-commands", false, "print, per phase, the Redis commands that took the most server time (INFO commandstats; needs -redis-stats)")
	flag.DurationVar(&c.settle, "settle", 2*time.Second, "pause between phases")
	flag.BoolVar(&c.verboseLogs, "v", false, "let latch and Asynq log at info level")
	flag.StringVar(&c.jsonOut, "json", "", "also write the run's figures to this file, for -median")
	median := flag.String("median", "", "comma-separated -json files: print each row's ratio of latch to Asynq per run, its median and range, and the medians of the figures, then exit")
	flag.Parse()
	if *median != "" {
		reps, err := benchcmp.ReadFiles(strings.Split(*median, ","))
		if err != nil {
			log.Fatal(err)
		}
		benchcmp.PrintRuns(os.Stdout, reps)
		return
	}
	log.SetFlags(0)
	log.SetPrefix("asynq-bench: ")
	if c.only != "" && c.only != "latch" && c.only != "asynq" {
		log.Fatalf("-only %q: want latch or asynq", c.only)
	}
	level := slog.LevelWarn
	if c.verboseLogs {
		level = slog.LevelInfo
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
	if err := run(context.Background(), &c, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// sameRun marks a latch cell that shows the row above's measurement.
const sameRun = "″ (same run)"

// cell is one side's figure for one row of the table.
type cell struct {
	res     *storebench.Result
	text    string // overrides res when set
	latOnly bool   // show latency percentiles only
	cpu     *redisCPU
	proc    time.Duration // this process's CPU time (user+system) in the phase
}

type row struct {
	workload     string
	latch, asynq cell
	cpuNote      string // qualifies the CPU figures
}

type runner struct {
	c     *config
	out   io.Writer
	rows  []*row
	latch *latchSide
	asynq *asynqSide
	stats *statsProbe
}

func (r *runner) want(w string) bool {
	if r.c.workloads == "" {
		return true
	}
	for _, x := range strings.Split(r.c.workloads, ",") {
		if strings.TrimSpace(x) == w {
			return true
		}
	}
	return false
}

// phase runs one side of one workload: settles, profiles and measures the
// Redis server's CPU around it.
func (r *runner) phase(name string, fn func() (*storebench.Result, error)) (cell, error) {
	time.Sleep(r.c.settle)
	runtime.GC()
	if r.c.cpuprofile != "" {
		f, err := os.Create(filepath.Join(r.c.cpuprofile, strings.NewReplacer("/", "-", " ", "_").Replace(name)+".pprof"))
		if err != nil {
			return cell{}, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return cell{}, err
		}
		defer pprof.StopCPUProfile()
	}
	var before redisCPU
	procBefore := processCPU()
	var cmdsBefore map[string]cmdStat
	if r.stats != nil {
		if r.c.redisCmds {
			cmdsBefore = r.stats.commands()
		}
		before = r.stats.read()
	}
	res, err := fn()
	if err != nil {
		return cell{}, fmt.Errorf("%s: %w", name, err)
	}
	cl := cell{res: res, proc: processCPU() - procBefore}
	if r.stats != nil {
		d := r.stats.read().sub(before)
		cl.cpu = &d
	}
	fmt.Fprintf(os.Stderr, "%-34s %s%s\n", name, res, cl.cpuNote())
	if cmdsBefore != nil {
		fmt.Fprint(os.Stderr, topCommands(cmdsBefore, r.stats.commands(), 6))
	}
	return cl, nil
}

func (cl cell) cpuNote() string {
	if cl.res == nil || cl.res.Ops == 0 {
		return ""
	}
	s := fmt.Sprintf("  bench cpu %.2fs (%.1f µs/op)", cl.proc.Seconds(), cl.proc.Seconds()*1e6/float64(cl.res.Ops))
	if cl.cpu != nil {
		s += fmt.Sprintf("  redis cpu %.2fs (%.1f µs/op)", cl.cpu.seconds(), cl.cpu.seconds()*1e6/float64(cl.res.Ops))
	}
	return s
}

func run(ctx context.Context, c *config, out io.Writer) error {
	if c.cpuprofile != "" {
		if err := os.MkdirAll(c.cpuprofile, 0o755); err != nil {
			return err
		}
	}
	r := &runner{c: c, out: out}
	var err error
	if c.only != "asynq" {
		if r.latch, err = newLatchSide(ctx, c); err != nil {
			return err
		}
		defer r.latch.cleanup()
	}
	if c.only != "latch" {
		if r.asynq, err = newAsynqSide(ctx, c); err != nil {
			return err
		}
		defer r.asynq.cleanup()
	}
	if c.redisStats {
		if r.stats, err = newStatsProbe(c.redisURL); err != nil {
			return err
		}
		defer r.stats.close()
	}
	start := time.Now()
	load := benchcmp.LoadAvg()
	if r.want("submit") {
		if err := r.submit(ctx); err != nil {
			return err
		}
	}
	if r.want("batch") {
		if err := r.submitBatch(ctx); err != nil {
			return err
		}
	}
	if r.want("drain") {
		if err := r.drain(ctx); err != nil {
			return err
		}
	}
	if r.want("latency") {
		if err := r.latency(ctx); err != nil {
			return err
		}
	}
	if r.want("contended") {
		if err := r.contended(ctx); err != nil {
			return err
		}
	}
	loadAfter := benchcmp.LoadAvg()
	r.print(start, load, loadAfter)
	if c.jsonOut != "" {
		return r.report(start.UTC().Format(time.RFC3339), load, loadAfter).WriteFile(c.jsonOut)
	}
	return nil
}

// side runs fn on one side unless -only excludes it.
func (r *runner) side(name string, active bool, fn func() (*storebench.Result, error)) (cell, error) {
	if !active {
		return cell{text: "not run"}, nil
	}
	return r.phase(name, fn)
}

func (r *runner) submit(ctx context.Context) error {
	c := r.c
	lc, err := r.side("latch submit", r.latch != nil, func() (*storebench.Result, error) {
		return r.latch.submit(ctx, c.n, c.clients)
	})
	if err != nil {
		return err
	}
	variants := []struct {
		name, label string
		mode        enqueueMode
	}{
		{"plain", fmt.Sprintf("submit, one at a time, %d goroutines (Asynq: plain Enqueue)", c.clients), plain},
		{"unique", fmt.Sprintf("… Asynq with Unique(%v), a distinct payload each", c.uniqueTTL), unique},
		{"taskid", "… Asynq with TaskID(key), a distinct key each", taskID},
	}
	for i, v := range variants {
		ac, err := r.side("asynq submit "+v.name, r.asynq != nil, func() (*storebench.Result, error) {
			return r.asynq.submit(ctx, c.n, c.clients, v.mode)
		})
		if err != nil {
			return err
		}
		l := lc
		if i > 0 {
			l = cell{text: sameRun}
		}
		label := v.label
		r.rows = append(r.rows, &row{workload: label, latch: l, asynq: ac})
	}
	return nil
}

func (r *runner) submitBatch(ctx context.Context) error {
	c := r.c
	lc, err := r.side("latch batch", r.latch != nil, func() (*storebench.Result, error) {
		return r.latch.submitBatch(ctx, c.batchN, c.batch)
	})
	if err != nil {
		return err
	}
	r.rows = append(r.rows, &row{
		workload: fmt.Sprintf("batch submit, %d per call", c.batch),
		latch:    lc,
		asynq:    cell{text: "n/a: no batch enqueue API"},
	})
	return nil
}

func (r *runner) drain(ctx context.Context) error {
	c := r.c
	lc, err := r.side("latch drain", r.latch != nil, func() (*storebench.Result, error) {
		return r.latch.drain(ctx, c.drainN, c.slots)
	})
	if err != nil {
		return err
	}
	ac, err := r.side("asynq drain", r.asynq != nil, func() (*storebench.Result, error) {
		return r.asynq.drain(ctx, c.drainN, c.slots, 0)
	})
	if err != nil {
		return err
	}
	ar, err := r.side("asynq drain retention", r.asynq != nil, func() (*storebench.Result, error) {
		return r.asynq.drain(ctx, c.drainN, c.slots, c.uniqueTTL)
	})
	if err != nil {
		return err
	}
	q := " (CPU includes queueing the jobs: latch in batches of 500, Asynq one at a time)"
	r.rows = append(r.rows,
		&row{workload: fmt.Sprintf("drain %d jobs, %d slots / concurrency (Asynq: task deleted when done)", c.drainN, c.slots),
			latch: lc, asynq: ac, cpuNote: q},
		&row{workload: fmt.Sprintf("… Asynq with Retention(%v): a completed record kept, as latch keeps its execution", c.uniqueTTL),
			latch: cell{text: sameRun}, asynq: ar, cpuNote: q})
	return nil
}

func (r *runner) latency(ctx context.Context) error {
	c := r.c
	lc, err := r.side("latch latency", r.latch != nil, func() (*storebench.Result, error) {
		return r.latch.latency(ctx, c.rate, c.duration, c.warmup, c.slots)
	})
	if err != nil {
		return err
	}
	ad, err := r.side("asynq latency default", r.asynq != nil, func() (*storebench.Result, error) {
		return r.asynq.latency(ctx, c.rate, c.duration, c.warmup, c.slots, 0)
	})
	if err != nil {
		return err
	}
	af, err := r.side("asynq latency fast", r.asynq != nil, func() (*storebench.Result, error) {
		return r.asynq.latency(ctx, c.rate, c.duration, c.warmup, c.slots, c.fastPoll)
	})
	if err != nil {
		return err
	}
	latencyOnly(&lc, &ad, &af)
	w := " (CPU includes the warm-up and idle polling)"
	r.rows = append(r.rows,
		&row{workload: fmt.Sprintf("submit-to-start at %d/s for %v (Asynq: default TaskCheckInterval 1s)", c.rate, c.duration),
			latch: lc, asynq: ad, cpuNote: w},
		&row{workload: fmt.Sprintf("… Asynq with TaskCheckInterval %v", c.fastPoll),
			latch: cell{text: sameRun}, asynq: af, cpuNote: w})
	return nil
}

func (r *runner) contended(ctx context.Context) error {
	c := r.c
	lc, err := r.side("latch contended", r.latch != nil, func() (*storebench.Result, error) {
		return r.latch.contended(ctx, c.rounds, c.contenders)
	})
	if err != nil {
		return err
	}
	au, err := r.side("asynq contended unique", r.asynq != nil, func() (*storebench.Result, error) {
		return r.asynq.contended(ctx, c.rounds, c.contenders, unique)
	})
	if err != nil {
		return err
	}
	at, err := r.side("asynq contended taskid", r.asynq != nil, func() (*storebench.Result, error) {
		return r.asynq.contended(ctx, c.rounds, c.contenders, taskID)
	})
	if err != nil {
		return err
	}
	latencyOnly(&lc, &au, &at)
	r.rows = append(r.rows,
		&row{workload: fmt.Sprintf("%d-way contended same-key submit (Asynq: Unique)", c.contenders), latch: lc, asynq: au},
		&row{workload: "… Asynq with TaskID(key)", latch: cell{text: sameRun}, asynq: at})
	return nil
}

func (cl cell) String() string {
	if cl.text != "" {
		return cl.text
	}
	r := cl.res
	var s string
	switch {
	case cl.latOnly:
		s = fmt.Sprintf("p50 %s, p99 %s", ms(r.Percentile(0.5)), ms(r.Percentile(0.99)))
	case len(r.Latencies) > 0:
		s = fmt.Sprintf("%s/s (p50 %s, p99 %s)", thousands(r.PerSecond()), ms(r.Percentile(0.5)), ms(r.Percentile(0.99)))
	default:
		s = fmt.Sprintf("%s/s", thousands(r.PerSecond()))
	}
	return s
}

func latencyOnly(cells ...*cell) {
	for _, c := range cells {
		c.latOnly = true
	}
}

func ms(d time.Duration) string {
	f := float64(d) / float64(time.Millisecond)
	switch {
	case f >= 100:
		return fmt.Sprintf("%.0f ms", f)
	case f >= 10:
		return fmt.Sprintf("%.1f ms", f)
	default:
		return fmt.Sprintf("%.2f ms", f)
	}
}

func thousands(f float64) string {
	s := fmt.Sprintf("%.0f", f)
	var b strings.Builder
	for i, ch := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(ch)
	}
	return b.String()
}

func (r *runner) print(start time.Time, loadBefore, loadAfter string) {
	c := r.c
	w := r.out
	fmt.Fprintf(w, "\n## latch vs Asynq (Redis), %s\n\n", start.Format("2006-01-02 15:04"))
	fmt.Fprintf(w, "| workload | latch | Asynq |\n|---|---|---|\n")
	for _, rw := range r.rows {
		fmt.Fprintf(w, "| %s | %s | %s |\n", rw.workload, rw.latch, rw.asynq)
	}
	fmt.Fprintf(w, "\nCPU time per operation, this process (Go: clients and workers) + the Redis server "+
		"(INFO cpu: the whole server's; -redis-stats=false leaves it out):\n\n| workload | latch | Asynq |\n|---|---|---|\n")
	for _, rw := range r.rows {
		if rw.latch.res == nil && rw.asynq.res == nil {
			continue
		}
		fmt.Fprintf(w, "| %s%s | %s | %s |\n", rw.workload, rw.cpuNote, cpuCell(rw.latch), cpuCell(rw.asynq))
	}
	fmt.Fprintf(w, "\nParameters: redis %s (latch DB %d, Asynq DB %d); -n %d -clients %d -batch-n %d -batch %d "+
		"-drain %d -slots %d -rate %d -duration %v -warmup %v -asynq-fast-poll %v -rounds %d -contenders %d -unique-ttl %v\n",
		redact(c.redisURL), c.latchDB, c.asynqDB, c.n, c.clients, c.batchN, c.batch, c.drainN, c.slots,
		c.rate, c.duration, c.warmup, c.fastPoll, c.rounds, c.contenders, c.uniqueTTL)
	fmt.Fprintf(w, "Go %s, GOMAXPROCS %d, %d CPUs; load average before %s, after %s; took %v\n",
		runtime.Version(), runtime.GOMAXPROCS(0), runtime.NumCPU(), loadBefore, loadAfter, time.Since(start).Round(time.Second))
}

func cpuCell(cl cell) string {
	if cl.res == nil || cl.res.Ops == 0 {
		return "–"
	}
	ops := float64(cl.res.Ops)
	s := fmt.Sprintf("%.0f µs", cl.proc.Seconds()*1e6/ops)
	if cl.cpu != nil {
		s += fmt.Sprintf(" + %.0f µs", cl.cpu.seconds()*1e6/ops)
	}
	return s
}

// processCPU is this process's CPU time so far, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
