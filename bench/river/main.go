// Command river measures latch (PostgreSQL store) and River (riverpgxv5)
// side by side on one PostgreSQL server, workload after workload with the
// same parameters, and prints a markdown table. It lives in a Go module of
// its own so that latch never depends on River. See README.md.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"log"
	"net/url"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/latch-run/latch/internal/benchcmp"
	"github.com/latch-run/latch/store/storebench"
)

type config struct {
	db         string
	n          int
	clients    int
	batchN     int
	batch      int
	drainN     int
	slots      int
	rate       int
	duration   time.Duration
	rounds     int
	contenders int
	pool       int32
	workerPool int32
	wal        bool
}

func (c *config) String() string {
	return fmt.Sprintf("--n %d --clients %d --batch-n %d --batch %d --drain %d --slots %d "+
		"--rate %d --duration %v --rounds %d --contenders %d --pool %d --worker-pool %d",
		c.n, c.clients, c.batchN, c.batch, c.drainN, c.slots, c.rate, c.duration, c.rounds,
		c.contenders, c.pool, c.workerPool)
}

type runFunc func(ctx context.Context) (*storebench.Result, error)

// workload is a row and how each side measures it. A row whose latch is
// nil shows the latch figure of row latchOf (one measurement, several River
// variants).
type workload struct {
	key, name string
	latency   bool
	latch     runFunc
	latchOf   string
	river     runFunc
}

func workloads(cfg *config, l *latchSide, r *riverSide) []workload {
	ms := func(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }
	const fastCooldown = 10 * time.Millisecond
	return []workload{
		{key: "submit1", name: "submit one at a time, 1 client",
			latch: func(ctx context.Context) (*storebench.Result, error) { return l.submit(ctx, cfg.n/4, 1) },
			river: func(ctx context.Context) (*storebench.Result, error) { return r.submit(ctx, cfg.n/4, 1, false) }},
		{key: "submit16", name: fmt.Sprintf("submit one at a time, %d clients (River: Insert)", cfg.clients),
			latch: func(ctx context.Context) (*storebench.Result, error) { return l.submit(ctx, cfg.n, cfg.clients) },
			river: func(ctx context.Context) (*storebench.Result, error) { return r.submit(ctx, cfg.n, cfg.clients, false) }},
		{key: "submit16u", name: fmt.Sprintf("submit one at a time, %d clients, unique (River: Insert with UniqueOpts ByArgs)", cfg.clients),
			latchOf: "submit16",
			river:   func(ctx context.Context) (*storebench.Result, error) { return r.submit(ctx, cfg.n, cfg.clients, true) }},
		{key: "batch", name: fmt.Sprintf("batch submit, %d per call (River: InsertMany)", cfg.batch),
			latch: l.batch,
			river: func(ctx context.Context) (*storebench.Result, error) { return r.batch(ctx, false) }},
		{key: "batchfast", name: fmt.Sprintf("batch submit, %d per call (River: InsertManyFast, COPY)", cfg.batch),
			latchOf: "batch",
			river:   func(ctx context.Context) (*storebench.Result, error) { return r.batch(ctx, true) }},
		{key: "drain", name: fmt.Sprintf("drain %s jobs, %d worker slots (River: default FetchCooldown %s)", benchcmp.Thousands(float64(cfg.drainN)), cfg.slots, ms(100*time.Millisecond)),
			latch: l.drain,
			river: func(ctx context.Context) (*storebench.Result, error) { return r.drain(ctx, 0) }},
		{key: "drain10", name: fmt.Sprintf("drain %s jobs, %d worker slots (River: FetchCooldown %s)", benchcmp.Thousands(float64(cfg.drainN)), cfg.slots, ms(fastCooldown)),
			latchOf: "drain",
			river:   func(ctx context.Context) (*storebench.Result, error) { return r.drain(ctx, fastCooldown) }},
		{key: "start", name: fmt.Sprintf("submit-to-start at %d/s for %v (River: default FetchCooldown)", cfg.rate, cfg.duration), latency: true,
			latch: func(ctx context.Context) (*storebench.Result, error) { return l.submitToStart(ctx, false) },
			river: func(ctx context.Context) (*storebench.Result, error) { return r.submitToStart(ctx, 0) }},
		{key: "start10", name: fmt.Sprintf("submit-to-start at %d/s for %v (River: FetchCooldown %s)", cfg.rate, cfg.duration, ms(fastCooldown)), latency: true,
			latchOf: "start",
			river:   func(ctx context.Context) (*storebench.Result, error) { return r.submitToStart(ctx, fastCooldown) }},
		{key: "startlocal", name: fmt.Sprintf("submit-to-start at %d/s, latch submitting and working through one Store (in process)", cfg.rate), latency: true,
			latch: func(ctx context.Context) (*storebench.Result, error) { return l.submitToStart(ctx, true) }},
		{key: "contended", name: fmt.Sprintf("%d-way contended same-key submit (River: UniqueOpts ByArgs)", cfg.contenders), latency: true,
			latch: l.contended,
			river: r.contended},
	}
}

func main() {
	log.SetFlags(0)
	cfg := &config{}
	fs := flag.NewFlagSet("river", flag.ExitOnError)
	fs.StringVar(&cfg.db, "db", envOr("LATCH_BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"),
		"PostgreSQL URL both sides use, each in fresh schemas it drops afterwards (LATCH_BENCH_POSTGRES_URL)")
	fs.IntVar(&cfg.n, "n", 20000, "submits of the concurrent one-at-a-time workloads (the 1-client one does n/4)")
	fs.IntVar(&cfg.clients, "clients", 16, "concurrent submitting goroutines")
	fs.IntVar(&cfg.batchN, "batch-n", 50000, "jobs submitted by the batch workloads")
	fs.IntVar(&cfg.batch, "batch", 100, "jobs per batch call")
	fs.IntVar(&cfg.drainN, "drain", 50000, "jobs queued, then drained")
	fs.IntVar(&cfg.slots, "slots", 100, "worker slots (latch Slots, River MaxWorkers) when draining and for submit-to-start")
	fs.IntVar(&cfg.rate, "rate", 500, "submits per second of submit-to-start")
	fs.DurationVar(&cfg.duration, "duration", 10*time.Second, "how long submit-to-start submits")
	fs.IntVar(&cfg.rounds, "rounds", 50, "rounds of the contended workload")
	fs.IntVar(&cfg.contenders, "contenders", 64, "concurrent submits of one key per round")
	pool := fs.Int("pool", 64, "connections of the pool submits go through (each side)")
	workerPool := fs.Int("worker-pool", 20, "connections of the pool workers use (each side; latch's default pool size)")
	only := fs.String("only", "", "comma-separated row keys to run (default all): "+
		"submit1,submit16,submit16u,batch,batchfast,drain,drain10,start,start10,startlocal,contended")
	side := fs.String("side", "both", "both, latch or river")
	jsonOut := fs.String("json", "", "also write the results to this file, for --median")
	median := fs.String("median", "", "comma-separated --json files: print the table of their medians and exit")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of this process to the file")
	fs.BoolVar(&cfg.wal, "wal", false, "also count the server's WAL flushes, writes, records and commits over each side's "+
		"workload (pg_stat_wal, pg_stat_database; setup included), per job: on a server nothing else uses")
	_ = fs.Parse(os.Args[1:])
	cfg.pool, cfg.workerPool = int32(*pool), int32(*workerPool)

	if *median != "" {
		reps, err := benchcmp.ReadFiles(strings.Split(*median, ","))
		if err != nil {
			log.Fatal(err)
		}
		benchcmp.PrintRuns(os.Stdout, reps)
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	rep, err := run(ctx, cfg, *only, *side)
	if rep != nil {
		benchcmp.PrintTable(os.Stdout, rep, 1)
		if *jsonOut != "" {
			if werr := rep.WriteFile(*jsonOut); werr != nil && err == nil {
				err = werr
			}
		}
	}
	if err != nil {
		pprof.StopCPUProfile()
		log.Fatal(err) //nolint:gocritic // the deferred calls have nothing left to do
	}
}

func run(ctx context.Context, cfg *config, only, side string) (*benchcmp.Report, error) {
	schemas, err := newSchemas(ctx, cfg.db)
	if err != nil {
		return nil, err
	}
	defer schemas.dropAll()
	l := &latchSide{cfg: cfg, schemas: schemas}
	r := newRiverSide(cfg, schemas)
	rep := &benchcmp.Report{Peer: "River", Date: time.Now().UTC().Format(time.RFC3339), Params: cfg.String(), LoadBefore: benchcmp.LoadAvg()}
	fmt.Printf("latch vs River on %s\nparameters: %s\nload before: %s\n", redact(cfg.db), cfg.String(), rep.LoadBefore)
	keys := map[string]bool{}
	for _, k := range strings.Split(only, ",") {
		if k = strings.TrimSpace(k); k != "" {
			keys[k] = true
		}
	}
	latchResults := map[string]*benchcmp.Measurement{}
	for _, w := range workloads(cfg, l, r) {
		if len(keys) > 0 && !keys[w.key] {
			continue
		}
		rw := benchcmp.Row{Key: w.key, Workload: w.name, Latency: w.latency}
		if side != "river" {
			if w.latch != nil {
				m, err := measureRun(ctx, cfg, schemas, "latch", w.key, w.latch)
				if err != nil {
					return rep, err
				}
				latchResults[w.key] = m
			}
			rw.Latch = latchResults[cmp.Or(w.latchOf, w.key)]
		}
		if side != "latch" && w.river != nil {
			m, err := measureRun(ctx, cfg, schemas, "river", w.key, w.river)
			if err != nil {
				return rep, err
			}
			rw.Peer = m
		}
		rep.Rows = append(rep.Rows, rw)
	}
	rep.LoadAfter = benchcmp.LoadAvg()
	fmt.Printf("load after: %s\n\n", rep.LoadAfter)
	return rep, nil
}

// measureRun runs one side's workload and prints its result (and with
// --wal, what the server wrote and flushed meanwhile).
func measureRun(ctx context.Context, cfg *config, s *schemas, side, key string, fn runFunc) (*benchcmp.Measurement, error) {
	var before *walStats
	if cfg.wal {
		var err error
		if before, err = s.walStats(ctx); err != nil {
			return nil, fmt.Errorf("--wal: %w", err)
		}
	}
	res, err := fn(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", side, key, err)
	}
	fmt.Printf("%-6s %-10s %v\n", side, key, res)
	if cfg.wal {
		after, err := s.walStats(ctx)
		if err != nil {
			return nil, fmt.Errorf("--wal: %w", err)
		}
		fmt.Printf("%-6s %-10s %v\n", side, key, s.diffWAL(ctx, before, after, res.Ops))
	}
	return benchcmp.Measure(res), nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// redact hides a password in the URL.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
