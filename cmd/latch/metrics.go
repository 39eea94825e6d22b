package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/latch-run/latch/engine"
	"github.com/latch-run/latch/store"
)

// engineMetrics are the Prometheus collectors of the services latch serve
// runs beside the API (the scheduler, the in-process workers, the
// rescuer), fed by those services' hooks and served on /metrics through
// api.Config.Collectors. The API's own series, claims included, are the
// API's (api.Server.OnWorkerClaim counts the workers' claims there).
type engineMetrics struct {
	ticks   *prometheus.CounterVec
	runs    *prometheus.CounterVec
	runTime *prometheus.HistogramVec
	rescues *prometheus.CounterVec
}

// Outcomes of a rescue: the labels of latch_rescues_total.
const (
	rescueRequeued  = "requeued"
	rescueFailed    = "failed"
	rescueCancelled = "cancelled"
)

func newEngineMetrics() *engineMetrics {
	m := &engineMetrics{
		ticks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "latch_schedule_ticks_total",
			Help: "Schedule ticks this server fired or dropped, by outcome: admitted, skipped, deduplicated, dropped, quota_exceeded.",
		}, []string{"outcome"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "latch_runs_total",
			Help: "Attempts this server's in-process workers ran, by kind and outcome: succeeded, retried, failed, " +
				"cancelled, released, lease_lost, unrecorded.",
		}, []string{"kind", "outcome"}),
		runTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "latch_run_duration_seconds",
			Help: "Time the handlers of this server's in-process workers ran, by kind and outcome (the write of the outcome not included).",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600,
				1800, 3600},
		}, []string{"kind", "outcome"}),
		rescues: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "latch_rescues_total",
			Help: "Executions whose lease expired that this server's rescuer ended, by outcome: requeued (to run again), " +
				"failed (no attempt left) or cancelled (cancel was requested).",
		}, []string{"outcome"}),
	}
	for _, o := range []string{rescueRequeued, rescueFailed, rescueCancelled} {
		m.rescues.WithLabelValues(o) // 0 until the first rescue, not absent
	}
	return m
}

// collectors are what api.Config.Collectors serves.
func (m *engineMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.ticks, m.runs, m.runTime, m.rescues}
}

// fired counts a schedule tick (engine.SchedulerConfig.OnFire).
func (m *engineMetrics) fired(outcome string) { m.ticks.WithLabelValues(outcome).Inc() }

// ran counts an attempt and its run time (engine.WorkerConfig.OnRun).
func (m *engineMetrics) ran(r *engine.Run) {
	m.runs.WithLabelValues(r.Kind, string(r.Outcome)).Inc()
	m.runTime.WithLabelValues(r.Kind, string(r.Outcome)).Observe(r.Duration.Seconds())
}

// rescued counts what a rescue pass did (engine.RescuerConfig.OnRescue).
func (m *engineMetrics) rescued(r store.RescueResult) {
	m.rescues.WithLabelValues(rescueRequeued).Add(float64(r.Requeued))
	m.rescues.WithLabelValues(rescueFailed).Add(float64(r.Failed))
	m.rescues.WithLabelValues(rescueCancelled).Add(float64(r.Cancelled))
}
