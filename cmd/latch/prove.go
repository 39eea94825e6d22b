package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/latch-run/latch"
	"github.com/latch-run/latch/cmd/latch/internal/soak"
)

// errBreach: the soak found breaches; the verdict line says which.
var errBreach = errors.New("breaches found")

// runProve runs the soak (cmd/latch/internal/soak) against a store: steady mixed
// load for --duration, a progress line every --report-every, then the
// invariant, leak and growth checks and a verdict. Exit 1 on any breach.
//
// Without --store it soaks a temporary SQLite file, removed afterwards.
// It never reads LATCH_STORE: a soak writes a tenant's worth of executions
// into the store, so the store is named on the command line or not at all.
func runProve(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("prove")
	storeURL := fs.String("store", "", "store URL; default a temporary SQLite file, removed afterwards (a PostgreSQL store must be migrated first: latch migrate up --store URL)")
	duration := durationFlag(fs, "duration", 10*time.Minute, "how long the load runs")
	rate := fs.Int("rate", 100, "submits per second, steady")
	workers := fs.Int("workers", 0, "worker slots (default 16 + rate/25)")
	every := durationFlag(fs, "report-every", 10*time.Second, "time between progress lines")
	drain := durationFlag(fs, "drain-timeout", time.Minute, "longest wait, after the load, for every execution to finish")
	if err := parse(ctx, fs, args, 0, 0); err != nil {
		return err
	}
	if *duration <= 0 || *rate < 1 || *workers < 0 || *every <= 0 || *drain <= 0 {
		return fmt.Errorf("%w: --duration, --rate, --report-every and --drain-timeout must be positive, --workers not negative", errUsage)
	}

	target := *storeURL
	if target == "" {
		dir, err := os.MkdirTemp("", "latch-prove-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		target = "sqlite:" + filepath.Join(dir, "prove.db")
	}
	st, err := openStore(ctx, target)
	if err != nil {
		if latch.NeedsMigrate(target) && !strings.Contains(err.Error(), "latch migrate up") {
			err = fmt.Errorf("%w (a PostgreSQL store must exist and be migrated first: latch migrate up --store URL)", err)
		}
		return err
	}
	defer st.Close()
	shown := redact(target)
	if *storeURL == "" {
		shown += " (temporary)"
	}
	fmt.Fprintf(out, "latch prove: store %s\n", shown)

	// The engine's warnings (a failed heartbeat, a lost lease) go to
	// stderr; its errors are breaches as well.
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	res, err := soak.Run(ctx, soak.Config{
		Store: st, Duration: *duration, Rate: *rate, Workers: *workers,
		ReportEvery: *every, DrainTimeout: *drain, Out: out, Logger: log,
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(out, res.Verdict())
	if !res.OK() {
		return fmt.Errorf("%w: %d (tenant %s keeps the executions for inspection)", errBreach, res.BreachCount(), res.Tenant)
	}
	return nil
}
