package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/latch-run/latch"
	"github.com/latch-run/latch/api"
	"github.com/latch-run/latch/auth"
	"github.com/latch-run/latch/console"
	"github.com/latch-run/latch/engine"
	"github.com/latch-run/latch/internal/tracing/otelenv"
	"github.com/latch-run/latch/kinds"
	"github.com/latch-run/latch/schedule"
	"github.com/latch-run/latch/store"
)

// serveConfig is what `latch serve` runs with: each setting (serveSettings)
// comes from its flag, else its environment variable, else the config
// file, else its default.
type serveConfig struct {
	addr          string
	store         string
	workers       int
	tenantSlots   int // 0 = half the workers, at least 1
	leaseSeconds  int64
	rescueEvery   time.Duration
	pruneEvery    time.Duration
	shutdownGrace time.Duration
	logLevel      string
	logFormat     string // auto, json or text (logging.go)
	console       bool
	maxStreams    int // per tenant; 0 = no bound
	maxLongPolls  int // per tenant; 0 = no bound
	bodyBudgetMiB int
	maxSchedules  int // per tenant; 0 = no bound
	minSchedule   time.Duration

	// Checked from the above and the environment by serveFlags, so that
	// nothing is done (no store opened, no admin key made) on a
	// configuration that cannot run.
	level         slog.Level
	httpAllow     []string // LATCH_HTTP_ALLOW; never nil: empty allows every public host
	consoleSecret []byte   // LATCH_CONSOLE_SECRET; nil = one per process
	adminKey      string   // LATCH_ADMIN_KEY; "" = the store's (generated at the first start)
	metricsToken  string   // LATCH_METRICS_TOKEN; "" = /metrics open to anyone who reaches it

	printConfig bool
	resolved    *resolved // where each setting came from, for --print-config
	flags       *pflag.FlagSet
}

// consoleSecretEnv signs the console's sessions; every server behind one
// address must have the same.
const consoleSecretEnv = "LATCH_CONSOLE_SECRET"

// minConsoleSecret is the shortest secret taken, in bytes.
const minConsoleSecret = 32

// adminKeyEnv pins the admin key; minAdminKey is the shortest taken, in
// bytes: the key opens every tenant, so it must not be guessable (a
// generated key has 256 random bits).
const (
	adminKeyEnv = "LATCH_ADMIN_KEY"
	minAdminKey = 32
)

func serveFlags(args []string) (*serveConfig, error) {
	return serveFlagsCtx(context.Background(), args)
}

// serveFlagsCtx is serveFlags with the command's context (cli.go).
func serveFlagsCtx(ctx context.Context, args []string) (*serveConfig, error) {
	fs := newFlags("serve")
	c := &serveConfig{flags: fs}
	fs.StringVar(&c.addr, "addr", "127.0.0.1:8080", "listen address (LATCH_ADDR)")
	fs.StringVar(&c.store, "store", "sqlite:latch.db", "store URL (LATCH_STORE)")
	fs.IntVar(&c.workers, "workers", 10, "in-process worker slots; 0 runs no in-process worker (LATCH_WORKERS)")
	fs.IntVar(&c.tenantSlots, "tenant-slots", 0, "each tenant's share of the in-process worker slots: past it a tenant may borrow free slots but never the last; 0 = half of --workers (at least 1); the --workers value lets one tenant take every slot (LATCH_TENANT_SLOTS)")
	c.leaseSeconds = 30
	fs.Var((*secondsValue)(&c.leaseSeconds), "lease-seconds", "lease of in-process workers: a dead worker's executions run again after it; a duration (30s) or seconds (LATCH_LEASE_SECONDS)")
	c.rescueEvery, c.pruneEvery, c.shutdownGrace = engine.DefaultRescueInterval, engine.DefaultPruneInterval, 30*time.Second
	fs.Var((*durationValue)(&c.rescueEvery), "rescue-interval", "how often expired leases are recovered (LATCH_RESCUE_INTERVAL)")
	fs.Var((*durationValue)(&c.pruneEvery), "prune-interval", "how often retention is applied (LATCH_PRUNE_INTERVAL)")
	fs.Var((*durationValue)(&c.shutdownGrace), "shutdown-grace", "on SIGINT/SIGTERM, how long running work may finish before it is cancelled and released; a second signal stops at once (LATCH_SHUTDOWN_GRACE)")
	fs.StringVar(&c.logLevel, "log-level", "info", "debug, info, warn or error (LATCH_LOG_LEVEL)")
	offer(fs, "log-level", "debug", "info", "warn", "error")
	fs.StringVar(&c.logFormat, "log-format", logAuto, "auto (text on a terminal, else JSON), json or text (LATCH_LOG_FORMAT)")
	offer(fs, "log-format", logAuto, logJSON, logText)
	fs.BoolVar(&c.console, "console", true, "serve the web console at /; false leaves only the API (LATCH_CONSOLE)")
	fs.IntVar(&c.maxStreams, "max-streams", api.DefaultMaxStreams, "event streams one tenant, and live console views one console session, may hold open on this server; 0 = no bound (LATCH_MAX_STREAMS)")
	fs.IntVar(&c.maxLongPolls, "max-long-polls", api.DefaultMaxLongPolls, "long polls (wait_seconds) one tenant may hold open on this server; 0 = no bound (LATCH_MAX_LONG_POLLS)")
	fs.IntVar(&c.bodyBudgetMiB, "body-budget-mib", api.DefaultMaxBodyInFlight>>20, "MiB of large request bodies this server reads at once; beyond, requests are refused with 503 (LATCH_BODY_BUDGET_MIB)")
	fs.IntVar(&c.maxSchedules, "max-schedules", api.DefaultMaxSchedules, "schedules one tenant may have; 0 = no bound (LATCH_MAX_SCHEDULES)")
	c.minSchedule = schedule.MinEvery
	fs.Var((*durationValue)(&c.minSchedule), "min-schedule-interval", "shortest time between two ticks of a schedule; a put of one that ticks more often is refused (LATCH_MIN_SCHEDULE_INTERVAL)")
	configFile := fs.String("config", "", "config file of settings (YAML, keys named like the flags); flags, then the environment, then the file, then the defaults (LATCH_CONFIG)")
	fs.BoolVar(&c.printConfig, "print-config", false, "print the effective settings, secrets masked, and where each came from, then exit")
	if err := parse(ctx, fs, args, 0, 0); err != nil {
		return nil, err
	}
	if *configFile == "" {
		*configFile = os.Getenv(configEnv)
	}
	r, err := resolveSettings(fs, *configFile)
	if err != nil {
		return nil, err
	}
	c.resolved = r
	for _, b := range []struct {
		key  string
		bad  bool
		rule string
	}{
		{"workers", c.workers < 0, ">= 0"},
		{"tenant-slots", c.tenantSlots < 0 || c.workers > 0 && c.tenantSlots > c.workers, "from 0 to --workers"},
		{"lease-seconds", c.leaseSeconds < 1, ">= 1"},
		{"rescue-interval", c.rescueEvery <= 0, "> 0"},
		{"prune-interval", c.pruneEvery <= 0, "> 0"},
		{"shutdown-grace", c.shutdownGrace < 0, ">= 0"},
		{"max-streams", c.maxStreams < 0, ">= 0"},
		{"max-long-polls", c.maxLongPolls < 0, ">= 0"},
		{"max-schedules", c.maxSchedules < 0, ">= 0"},
		{"min-schedule-interval", c.minSchedule < schedule.MinEvery || c.minSchedule > schedule.MaxEvery, "from 1s to 8784h"},
		{"body-budget-mib", c.bodyBudgetMiB < 1, ">= 1"},
	} {
		if b.bad {
			return nil, fmt.Errorf("%w: %s must be %s", errUsage, r.from[b.key], b.rule)
		}
	}
	if err := c.level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errUsage, r.from["log-level"], err)
	}
	if err := checkLogFormat(c.logFormat); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errUsage, r.from["log-format"], err)
	}
	if _, err := otelenv.Enabled(os.Getenv); err != nil {
		return nil, fmt.Errorf("%w: tracing: %w", errUsage, err)
	}
	c.httpAllow = []string{}
	if c.workers > 0 { // the http kind runs only on in-process workers
		allow, err := kinds.ParseAllow(r.envOnly["http-allow"])
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", errUsage, r.from["http-allow"], err)
		}
		c.httpAllow = append(c.httpAllow, allow...)
	}
	c.metricsToken = r.envOnly["metrics-token"]
	if v := r.envOnly["admin-key"]; v != "" {
		if len(v) < minAdminKey {
			return nil, fmt.Errorf("%w: %s must be at least %d bytes (say, openssl rand -hex 32), or unset to have "+
				"latch generate one and print it once", errUsage, r.from["admin-key"], minAdminKey)
		}
		c.adminKey = v
	}
	if v := r.envOnly["console-secret"]; v != "" {
		if len(v) < minConsoleSecret {
			return nil, fmt.Errorf("%w: %s must be at least %d bytes (say, openssl rand -hex 32)",
				errUsage, r.from["console-secret"], minConsoleSecret)
		}
		c.consoleSecret = []byte(v)
	}
	return c, nil
}

func runServe(ctx context.Context, args []string, out io.Writer) error {
	cfg, err := serveFlagsCtx(ctx, args)
	if err != nil {
		return err
	}
	if cfg.printConfig {
		return printConfig(out, cfg.flags, cfg.resolved)
	}
	return serve(ctx, cfg, out, os.Stderr, nil)
}

// serve runs the server until ctx is done, then shuts down. It logs to
// logOut and calls listening (when not nil) with the address it listens on.
func serve(ctx context.Context, cfg *serveConfig, out, logOut io.Writer, listening func(net.Addr)) error {
	log := newLogger(logOut, cfg.logFormat, cfg.level)

	// Take the address before touching the store: a port in use must not
	// leave a generated admin key behind.
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	defer ln.Close() // after Serve, a no-op

	st, err := openStore(ctx, cfg.store)
	if err != nil {
		return err
	}
	defer st.Close()

	if err := warnDurability(ctx, st, log); err != nil {
		return err
	}
	tracing, err := startTracing(ctx, log)
	if err != nil {
		return err
	}
	defer stopTracing(tracing, log)
	adminHash, err := adminKey(ctx, st, cfg.adminKey, out)
	if err != nil {
		return err
	}
	// Every server runs the scheduler: FireSchedule makes each tick one
	// execution however many fire it, so there is no leader to elect.
	metrics := newEngineMetrics()
	st = metrics.instrument(st, log) // timed and counted from here on
	sched := engine.NewScheduler(engine.SchedulerConfig{Store: st, Logger: log, OnFire: metrics.fired})
	apiCfg := api.Config{Store: st, AdminKeyHash: adminHash, Logger: log,
		OnScheduleChange: sched.Kick, Collectors: metrics.collectors(),
		MaxStreamsPerTenant: noBound(cfg.maxStreams), MaxLongPollsPerTenant: noBound(cfg.maxLongPolls),
		MaxBodyBytesInFlight: int64(cfg.bodyBudgetMiB) << 20, MaxSchedulesPerTenant: noBound(cfg.maxSchedules),
		MinScheduleInterval: cfg.minSchedule, TracerProvider: tracing.Provider, MetricsToken: cfg.metricsToken}
	var cons *console.Console
	if cfg.console {
		authn := auth.Authenticator{Store: st, AdminKeyHash: adminHash}
		cons = console.New(console.Config{Store: st, Auth: authn, Logger: log, SessionSecret: cfg.consoleSecret,
			MaxStreamsPerSession: noBound(cfg.maxStreams)})
		warnConsoleSecret(st, cfg.consoleSecret, log)
		apiCfg.Console = cons
	}
	srv := api.New(apiCfg)

	services := []engine.Service{
		engine.NewRescuer(engine.RescuerConfig{Store: st, Interval: cfg.rescueEvery, Logger: log,
			OnRescue: metrics.rescued}),
		engine.NewPruner(engine.PrunerConfig{Store: st, Interval: cfg.pruneEvery, Logger: log}),
		engine.NewWaker(engine.WakerConfig{Store: st, Logger: log}),
		sched,
	}
	if cfg.workers > 0 {
		w := engine.NewWorker(engine.WorkerConfig{
			Store: st, Slots: cfg.workers, TenantSlots: cfg.tenantSlots, Logger: log, TracerProvider: tracing.Provider,
			LeaseDuration: time.Duration(cfg.leaseSeconds) * time.Second,
			OnClaim:       srv.OnWorkerClaim(), // counted beside the API's claims
			OnRun:         workerRuns(srv),     // counted beside the HTTP workers' runs
		})
		// The patterns were checked by serveFlags; this cannot fail.
		if err := kinds.Register(w, kinds.Options{HTTPAllow: cfg.httpAllow}); err != nil {
			return err
		}
		services = append(services, w)
	}
	group := engine.NewGroup(services...)

	hs := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		// Long polls and event streams push their own write deadline out.
		WriteTimeout: 60 * time.Second,
		IdleTimeout:  120 * time.Second,
		// The API answers headers over api.MaxHeaderBytes with a problem
		// document; net/http's own limit, which answers in plain text
		// before any handler, is only the hard backstop above it.
		MaxHeaderBytes: api.HeaderBytesBackstop,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	// Shutdown ends long polls and event streams at once instead of
	// waiting out the grace period for them.
	hs.RegisterOnShutdown(srv.Close)
	if cons != nil {
		hs.RegisterOnShutdown(cons.Close)
	}
	stopReporter, err := metrics.startReporter(ctx)
	if err != nil {
		return err
	}
	defer stopReporter() // last, with the last counts of everything else
	if err := group.Start(ctx); err != nil {
		return err
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	log.Info("latch serving", "addr", "http://"+ln.Addr().String(), "store", redact(cfg.store),
		"workers", cfg.workers)
	if listening != nil {
		listening(ln.Addr())
	}

	select {
	case <-ctx.Done():
	case err := <-served:
		_ = group.Stop(context.Background())
		return err
	}

	// Shutdown, all under the one grace period: the workers stop claiming
	// at once and their running work may finish within it, then is
	// cancelled and released; at the same time the HTTP server stops
	// accepting and drains its requests, closing what is left at the end.
	// Neither waits for the other: a slow client cannot eat the grace of
	// running work, and nothing new is claimed while requests drain.
	log.Info("latch shutting down: no new claims or connections; send the signal again to stop at once, "+
		"leaving running executions to be rescued when their leases expire", "grace", cfg.shutdownGrace)
	graceCtx, cancel := context.WithTimeout(context.Background(), cfg.shutdownGrace)
	defer cancel()
	var stopErr, httpErr error
	var wg sync.WaitGroup
	wg.Go(func() { stopErr = group.Stop(graceCtx) })
	wg.Go(func() {
		httpErr = hs.Shutdown(graceCtx)
		if errors.Is(httpErr, context.DeadlineExceeded) {
			log.Warn("HTTP requests still open at the end of the grace period; closing their connections")
			httpErr = hs.Close()
		}
	})
	wg.Wait()
	log.Info("latch stopped")
	return errors.Join(httpErr, stopErr)
}

// noBound maps a flag's 0 (no bound) onto api.Config's (< 0; its 0 is the
// default).
func noBound(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// warnDurability logs, for a store whose durability depends on its
// server's settings, what those settings can lose.
func warnDurability(ctx context.Context, st store.Store, log *slog.Logger) error {
	dc, ok := st.(store.DurabilityChecker)
	if !ok {
		return nil
	}
	warning, err := dc.CheckDurability(ctx)
	if err != nil {
		return err
	}
	if warning != "" {
		log.Warn("the store can lose acknowledged executions: " + warning)
	}
	return nil
}

// warnConsoleSecret logs, for a store that servers in other processes
// share (store.Sharer), that console sessions signed with a secret of this
// process work on this server only.
func warnConsoleSecret(st store.Store, secret []byte, log *slog.Logger) {
	if secret == nil && store.SharedAcrossProcesses(st) {
		log.Warn("console sessions are signed with a secret of this process: behind one address with "+
			"other servers, a session opened on one is refused by the others, and all end when it stops; "+
			"set the same "+consoleSecretEnv+" on every server", "env", consoleSecretEnv)
	}
}

// adminKey returns the hash the API checks the admin key against. With k
// set (LATCH_ADMIN_KEY or admin-key in the config file), that key is the
// admin. Without it, the first start on a store generates a key, stores its
// hash and prints the key once; later starts use the stored hash (the API
// resolves it through the store).
func adminKey(ctx context.Context, st store.Store, k string, out io.Writer) (string, error) {
	if k != "" {
		return auth.HashKey(k), nil
	}
	key := auth.NewKey()
	res, err := st.EnsureAdminKey(ctx, &store.EnsureAdminKeyParams{KeyHash: auth.HashKey(key)})
	if err != nil {
		return "", fmt.Errorf("admin key: %w", err)
	}
	if res.Created {
		fmt.Fprintf(out, "latch: generated the admin key (shown once, keep it safe):\n\n    %s\n\n", key)
	}
	return "", nil
}

// openStore opens a store by URL.
func openStore(ctx context.Context, storeURL string) (store.Store, error) {
	c, err := latch.Open(ctx, storeURL)
	if err != nil {
		return nil, err
	}
	return c.Store(), nil
}

// redact hides a password in a store URL for logs.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable store URL)"
	}
	return u.Redacted()
}
