package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/latch-run/latch/api"
	"github.com/latch-run/latch/engine"
	"github.com/latch-run/latch/internal/buildinfo"
	"github.com/latch-run/latch/internal/storemetrics"
	"github.com/latch-run/latch/internal/storewrap"
	"github.com/latch-run/latch/store"
)

// engineMetrics are the Prometheus collectors of what latch serve runs
// beside the API (the scheduler, the rescuer, the store it wraps with
// instrument), fed by those services' hooks and served on /metrics through
// api.Config.Collectors, and the server's reports (engine.Reporter). The
// API's own series are the API's: claims (api.Server.OnWorkerClaim) and
// runs (workerRuns) of the in-process workers are counted there, beside
// the HTTP workers'. docs/observability.md lists them all.
type engineMetrics struct {
	build    prometheus.Gauge
	ticks    *prometheus.CounterVec
	rescues  *prometheus.CounterVec
	store    *storemetrics.Metrics
	queues   *storemetrics.Queues // set by instrument
	reporter *engine.Reporter     // set by instrument
}

// Outcomes of a rescue: the labels of latch_rescues_total.
const (
	rescueRequeued  = "requeued"
	rescueFailed    = "failed"
	rescueCancelled = "cancelled"
)

// reporterStopGrace bounds the last report at shutdown.
const reporterStopGrace = 5 * time.Second

func newEngineMetrics() *engineMetrics {
	b := buildinfo.Current()
	m := &engineMetrics{
		build: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "latch_build_info",
			Help: "1, labelled with the build of this server: version (latch version's word), revision (the VCS commit, " +
				"empty when unknown) and goversion.",
			ConstLabels: prometheus.Labels{"version": b.Short(), "revision": b.Revision, "goversion": b.GoVersion},
		}),
		ticks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "latch_schedule_ticks_total",
			Help: "Schedule ticks this server fired or dropped, by outcome: admitted, skipped, deduplicated, dropped, quota_exceeded, storage_exceeded.",
		}, []string{"outcome"}),
		rescues: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "latch_rescues_total",
			Help: "Executions whose lease expired that this server's rescuer ended, by outcome: requeued (to run again), " +
				"failed (no attempt left) or cancelled (cancel was requested).",
		}, []string{"outcome"}),
		store: storemetrics.New(),
	}
	m.build.Set(1)
	for _, o := range []string{rescueRequeued, rescueFailed, rescueCancelled} {
		m.rescues.WithLabelValues(o) // 0 until the first rescue, not absent
	}
	for _, o := range []string{"admitted", "skipped", "deduplicated", "dropped", "quota_exceeded", "storage_exceeded"} {
		m.ticks.WithLabelValues(o) // the scheduler's outcomes, 0 until the first tick
	}
	return m
}

// instrument returns st wrapped so that every call through it is timed
// (latch_store_operation_duration_seconds), counted where it matters
// (retries, deferrals, suspends, signals, claim waits) and counted in the server's
// reports; everything latch serve does goes through it. It also makes the
// queue gauges, read through it at scrape time.
func (m *engineMetrics) instrument(st store.Store, log *slog.Logger) store.Store {
	var rep *engine.Reporter
	wrapped := storewrap.Wrap(st, m.store.Observe, func(c *storewrap.Call) { rep.Observe(c) })
	rep = engine.NewReporter(engine.ReporterConfig{Store: wrapped, Logger: log})
	m.reporter = rep
	m.queues = storemetrics.NewQueues(storemetrics.QueuesConfig{Store: wrapped, Logger: log})
	return wrapped
}

// startReporter starts the server's reports; the returned stop writes the
// last one (call it once everything else has stopped, so it has their
// last counts).
func (m *engineMetrics) startReporter(ctx context.Context) (stop func(), err error) {
	if err := m.reporter.Start(ctx); err != nil {
		return nil, err
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), reporterStopGrace)
		defer cancel()
		_ = m.reporter.Stop(ctx)
	}, nil
}

// collectors are what api.Config.Collectors serves.
func (m *engineMetrics) collectors() []prometheus.Collector {
	return append([]prometheus.Collector{m.build, m.ticks, m.rescues, m.queues}, m.store.Collectors()...)
}

// fired counts a schedule tick (engine.SchedulerConfig.OnFire).
func (m *engineMetrics) fired(outcome string) { m.ticks.WithLabelValues(outcome).Inc() }

// rescued counts what a rescue pass did (engine.RescuerConfig.OnRescue).
func (m *engineMetrics) rescued(r store.RescueResult) {
	m.rescues.WithLabelValues(rescueRequeued).Add(float64(r.Requeued))
	m.rescues.WithLabelValues(rescueFailed).Add(float64(r.Failed))
	m.rescues.WithLabelValues(rescueCancelled).Add(float64(r.Cancelled))
}

// workerRuns is the in-process workers' run hook (engine.WorkerConfig.OnRun):
// it counts each run in the API's runs series (api.Server.OnWorkerRun),
// beside the HTTP workers', by its kind, its outcome's name and its
// handler's run time. The API takes plain values and imports no engine;
// the engine's outcome becomes its name here.
func workerRuns(srv *api.Server) func(r *engine.Run) {
	ran := srv.OnWorkerRun()
	return func(r *engine.Run) { ran(r.Kind, string(r.Outcome), r.Duration) }
}
