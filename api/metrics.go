package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
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
}

// Sources of claims: the label source of latch_leases_claimed_total.
const (
	claimsHTTP   = "http"   // POST /api/workers/claim
	claimsWorker = "worker" // in-process workers (Server.OnWorkerClaim)
)

func newMetrics(extra ...prometheus.Collector) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
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
	}
	m.leases.WithLabelValues(claimsHTTP) // 0 until the first claim, not absent
	m.reg.MustRegister(m.requests, m.duration, m.inflight, m.submits, m.leases,
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

// OnWorkerClaim returns the function that counts the leases in-process
// workers claim (give it to engine.WorkerConfig.OnClaim) in
// latch_leases_claimed_total{source="worker"}, beside the claims made
// through the API (source="http"), so the one series counts every claim
// this server makes. The series is served, at 0, from this call on.
func (s *Server) OnWorkerClaim() func(n int) {
	c := s.metrics.leases.WithLabelValues(claimsWorker)
	return func(n int) { c.Add(float64(n)) }
}
