package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/latch-run/latch/internal/labels"
	"github.com/latch-run/latch/store"
)

// metrics are the server's Prometheus collectors, on a registry the server
// owns (never the global one, so two servers in one process, as in tests,
// do not collide).
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inflight prometheus.Gauge
	submits  *prometheus.CounterVec
	leases   *prometheus.CounterVec
	runs     *prometheus.CounterVec
	runTime  *prometheus.HistogramVec
	// kinds bounds the kind label: kinds are tenants' names.
	kinds *labels.Bounded
}

// Sources of claims: the label source of latch_leases_claimed_total.
const (
	claimsHTTP   = "http"   // POST /api/workers/claim
	claimsWorker = "worker" // in-process workers (Server.OnWorkerClaim)
)

func newMetrics(extra ...prometheus.Collector) *metrics {
	m := &metrics{
		kinds: labels.New(labels.DefaultMax),
		reg:   prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "latch_http_requests_total",
			Help: "HTTP requests answered, by route pattern and status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "latch_http_request_duration_seconds",
			Help:    "Time to answer HTTP requests, by route pattern (long polls and event streams included).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"route"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "latch_http_requests_in_flight",
			Help: "HTTP requests being served.",
		}),
		submits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "latch_submits_total",
			Help: "Submitted executions (single and batch items) by outcome: created, deduplicated, or the problem code.",
		}, []string{"outcome"}),
		leases: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "latch_leases_claimed_total",
			Help: "Leases this server handed out, by source: http (POST /api/workers/claim) or worker (its in-process workers).",
		}, []string{"source"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "latch_runs_total",
			Help: "Attempts that ended through this server, run by its in-process workers or by HTTP workers " +
				"(POST /api/executions/{id}/complete|fail|suspend), by kind and outcome: succeeded, retried, failed, " +
				"cancelled, suspended, released, lease_lost, unrecorded (the last three from in-process workers only).",
		}, []string{"kind", "outcome"}),
		runTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "latch_run_duration_seconds",
			Help: "Run time of the attempts of latch_runs_total, by kind and outcome: an in-process handler's run " +
				"(the write of the outcome not included); for an HTTP worker, from its claim to its complete, fail or suspend.",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600,
				1800, 3600},
		}, []string{"kind", "outcome"}),
	}
	m.leases.WithLabelValues(claimsHTTP) // 0 until the first claim, not absent
	m.reg.MustRegister(m.requests, m.duration, m.inflight, m.submits, m.leases, m.runs, m.runTime,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reg.MustRegister(extra...)
	return m
}

func (m *metrics) observe(route string, code int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
	m.duration.WithLabelValues(route).Observe(d.Seconds())
}

// submitted counts one submit outcome.
func (m *metrics) submitted(outcome string) { m.submits.WithLabelValues(outcome).Inc() }

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// metricsHandler serves /metrics, to a request bearing Config.MetricsToken
// only when one is set (401 unauthorized otherwise, compared in constant
// time).
func (s *Server) metricsHandler() http.Handler {
	h := s.metrics.handler()
	if s.cfg.MetricsToken == "" {
		return h
	}
	want := sha256.Sum256([]byte(s.cfg.MetricsToken))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, _ := bearer(r.Header.Get("Authorization"))
		got := sha256.Sum256([]byte(token))
		if token == "" || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			writeProblem(w, unauthorized("/metrics needs Authorization: Bearer <the metrics token>"))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// OnWorkerClaim returns the function that counts the leases in-process
// workers claim (give it to engine.WorkerConfig.OnClaim) in
// latch_leases_claimed_total{source="worker"}, beside the claims made
// through the API (source="http"), so the one series counts every claim
// this server makes. The series is served, at 0, from this call on.
func (s *Server) OnWorkerClaim() func(n int) {
	c := s.metrics.leases.WithLabelValues(claimsWorker)
	return func(n int) { c.Add(float64(n)) }
}

// OnWorkerRun returns the function that counts an attempt an in-process
// worker ran, of kind, ended with outcome (the engine's name for it, such
// as "succeeded"), its handler having run for d, in latch_runs_total and
// latch_run_duration_seconds: the series that also count the attempts HTTP
// workers end through POST /api/executions/{id}/complete, /fail and
// /suspend, so there is one series of runs by kind and outcome, wherever
// they ran (claims are told apart by source in latch_leases_claimed_total).
// The binary's wiring calls it from the worker's run hook
// (engine.WorkerConfig.OnRun), the API taking no engine type.
func (s *Server) OnWorkerRun() func(kind, outcome string, d time.Duration) {
	return s.metrics.ran
}

func (m *metrics) ran(kind, outcome string, d time.Duration) {
	kind = m.kinds.Value(kind)
	m.runs.WithLabelValues(kind, outcome).Inc()
	m.runTime.WithLabelValues(kind, outcome).Observe(d.Seconds())
}

// Outcomes of the attempts HTTP workers end, the labels of
// latch_runs_total: the names the engine gives the same outcomes of its
// in-process workers (engine.Outcome), so one series counts both.
const (
	outcomeSucceeded = "succeeded"
	outcomeRetried   = "retried"
	outcomeFailed    = "failed"
	outcomeCancelled = "cancelled"
	outcomeSuspended = "suspended"
)

// ranHTTP counts an attempt an HTTP worker ended (complete, fail, or,
// with suspended, suspend) with the execution the store answered, its run
// time from the attempt's start to now. Its outcome is what an in-process
// worker's would be for the same answer.
func (m *metrics) ranHTTP(e *store.Execution, now time.Time, suspended bool) {
	outcome := outcomeRetried
	switch {
	case e.Status == store.StatusCancelled:
		outcome = outcomeCancelled
	case suspended:
		outcome = outcomeSuspended // asleep, waiting, or resumed at once
	case e.Status == store.StatusSucceeded:
		outcome = outcomeSucceeded
	case e.Status == store.StatusFailed:
		outcome = outcomeFailed
	}
	var d time.Duration
	if e.StartedAt != nil {
		d = max(now.Sub(*e.StartedAt), 0)
	}
	m.ran(e.Kind, outcome, d)
}
