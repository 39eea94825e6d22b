// Command rediscluster measures latch on a Redis Cluster of one primary
// against one of three, to show how a namespace's work divides over the
// primaries. It starts both clusters itself with redis-server on loopback
// (primaries only, no persistence; ports 7100+ and 7200+, cluster bus ports
// 10000 higher) and stops and removes them at exit, Ctrl-C included:
//
//	go run ./bench/rediscluster -tenants 16 -n 40000 -clients 16 -slots 100 -rounds 3 -json /tmp/rc.json
//
// Each round, on each cluster (the order alternates from round to round),
// opens a Store under a fresh prefix, creates the tenants, then times two
// phases: submit, n one-item Admits from -clients goroutines, round-robin
// over the tenants, each with its own dedup key; and drain, one
// engine.Worker of -slots slots claiming for every tenant until the store
// has acknowledged n Completes. Around each phase it reads INFO of every
// primary: the Redis CPU (used_cpu_sys + used_cpu_user) spent per
// operation, each primary's share of the commands run (commandstats, the
// commands a script runs included) and of the keys. It then checks that
// every submitted execution was started exactly once and is succeeded under
// its tenant, and deletes the prefix's keys.
//
// -cluster1 and -cluster3 run on clusters already up instead (a comma-
// separated list of host:port; the primaries are read from CLUSTER NODES);
// the benchmark then deletes only its own keys.
//
// Both clusters share this machine's cores with the client, so a cluster
// of three cannot show more throughput on a small machine; the report says
// so, and what it can show.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"
)

func main() {
	var (
		cfg      config
		rounds   int
		ports1   int
		ports3   int
		cluster1 string
		cluster3 string
		jsonPath string
	)
	flag.IntVar(&cfg.Tenants, "tenants", 16, "tenants the executions are spread over, round-robin")
	flag.IntVar(&cfg.N, "n", 40000, "executions submitted and drained per round")
	flag.IntVar(&cfg.Clients, "clients", 16, "concurrent submitting goroutines")
	flag.IntVar(&cfg.Slots, "slots", 100, "the draining worker's handler slots")
	flag.StringVar(&cfg.Layout, "layout", "tenant", "the store's layout: tenant (a hash slot per tenant) or single (the namespace in one slot)")
	flag.DurationVar(&cfg.Timeout, "timeout", 10*time.Minute, "limit of each phase")
	flag.IntVar(&rounds, "rounds", 3, "rounds; each runs both clusters, the order alternating")
	flag.IntVar(&ports1, "ports1", 7100, "first port of the one-primary cluster it starts")
	flag.IntVar(&ports3, "ports3", 7200, "first port of the three-primary cluster it starts (three ports)")
	flag.StringVar(&cluster1, "cluster1", "", "host:port[,host:port...] of an existing cluster to use instead of starting the one-primary one")
	flag.StringVar(&cluster3, "cluster3", "", "host:port[,host:port...] of an existing cluster to use instead of starting the three-primary one")
	flag.StringVar(&jsonPath, "json", "", "also write the figures to this file as JSON")
	flag.Parse()
	if cfg.Tenants < 1 || cfg.N < 1 || cfg.Clients < 1 || cfg.Slots < 1 || rounds < 1 || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, cfg, rounds, []spec{
		{name: "one-primary", primaries: 1, base: ports1, existing: cluster1},
		{name: "three-primaries", primaries: 3, base: ports3, existing: cluster3},
	}, jsonPath, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "rediscluster:", err)
		os.Exit(1)
	}
}

// spec says which cluster to run on: one to start (primaries nodes from
// port base) or an existing one (existing, its seed addresses).
type spec struct {
	name      string
	primaries int
	base      int
	existing  string
}

// run starts or finds the clusters, runs the rounds, prints the report to
// out (progress to log) and writes jsonPath. It stops the clusters it
// started before it returns, whatever happened.
func run(ctx context.Context, cfg config, rounds int, specs []spec, jsonPath string, out, log io.Writer) (err error) {
	var cs []*cluster
	defer func() {
		for _, c := range cs {
			c.stop()
		}
	}()
	for _, s := range specs {
		var c *cluster
		if s.existing != "" {
			c = &cluster{name: s.name, seeds: strings.Split(s.existing, ",")}
		} else {
			fmt.Fprintf(log, "%s: starting %d redis-server on 127.0.0.1:%d+\n", s.name, s.primaries, s.base)
			if c, err = startCluster(ctx, s.name, s.base, s.primaries, log); err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
		}
		cs = append(cs, c)
		if err := c.discover(ctx); err != nil {
			return err
		}
	}
	rec := record{Config: cfg, Rounds: rounds, Caveat: caveat(), CPUs: runtime.NumCPU()}
	for _, c := range cs {
		rec.Clusters = append(rec.Clusters, clusterDesc{Name: c.name, Primaries: c.primaries})
	}
	for r := 1; r <= rounds; r++ {
		order := cs
		if r%2 == 0 {
			order = reversed(cs)
		}
		for _, c := range order {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			fmt.Fprintf(log, "round %d: %s ...", r, c.name)
			res, err := round(ctx, c, cfg, r, log)
			if err != nil {
				fmt.Fprintln(log)
				return fmt.Errorf("round %d on %s: %w", r, c.name, err)
			}
			for _, p := range res {
				fmt.Fprintf(log, " %s %.0f/s", p.Phase, p.PerSecond)
			}
			fmt.Fprintln(log)
			rec.Results = append(rec.Results, res...)
		}
	}
	if len(rec.Results) == 0 {
		return errors.New("no results")
	}
	writeReport(out, rec)
	if jsonPath != "" {
		return writeJSON(jsonPath, rec)
	}
	return nil
}

func reversed[T any](s []T) []T {
	out := make([]T, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}
