// Package storemetrics is the Prometheus side of a server's store: how
// long each store operation takes (an Observer of a storewrap.Wrap'ped
// store), what the calls made through this server did that an on-call
// person watches (retries, rate-limit deferrals, suspended flows,
// signals, how long claimed work waited for a worker), and, read from the store at scrape time, how deep each queue
// is (Queues). docs/observability.md lists the series.
package storemetrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/latch-run/latch/internal/labels"
	"github.com/latch-run/latch/internal/storewrap"
	"github.com/latch-run/latch/store"
)

// Results of an operation: the label result of
// latch_store_operation_duration_seconds.
const (
	ResultOK    = "ok"    // the store answered, a business refusal (not found, lease lost, quota...) included
	ResultError = "error" // the call failed: unavailable, timed out or cancelled, or an error of no rule
)

// Outcomes of a signal: the label outcome of latch_signals_total.
const (
	SignalDelivered = "delivered" // it ended a wait at once
	SignalBuffered  = "buffered"  // kept for a later wait of its name
)

// Metrics are the collectors fed by the calls of one server's store.
type Metrics struct {
	ops       *prometheus.HistogramVec
	retries   *prometheus.CounterVec
	deferrals prometheus.Counter
	suspends  *prometheus.CounterVec
	signals   *prometheus.CounterVec
	attempts  *prometheus.HistogramVec
	lifetime  *prometheus.HistogramVec
	claimWait *prometheus.HistogramVec
	kinds     *labels.Bounded // the kind label: kinds are tenants' names
	queues    *labels.Bounded // the queue label: queues are tenants' names too
}

// New returns the collectors, every series without labels or with a
// fixed label set served at 0 from the start.
func New() *Metrics {
	m := &Metrics{
		ops: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "latch_store_operation_duration_seconds",
			Help: "Time of the store operations this server made, by operation (the store.Store method: Claim, " +
				"Complete, ...) and result: ok (the store answered, refusals such as lease lost included) or error " +
				"(unavailable, timed out, or failed otherwise).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"operation", "result"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "latch_retries_total",
			Help: "Failed attempts the store queued again to retry (Fail with attempts left), by kind, from in-process " +
				"workers and POST /api/executions/{id}/fail alike.",
		}, []string{"kind"}),
		deferrals: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "latch_rate_limit_deferrals_total",
			Help: "Executions a claim through this server deferred for their rate limit (made scheduled at the " +
				"bucket's next free start), in-process and HTTP claims alike.",
		}),
		suspends: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "latch_suspends_total",
			Help: "Flows that suspended (to sleep or to wait for a signal) through this server, by kind.",
		}, []string{"kind"}),
		signals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "latch_signals_total",
			Help: "Signals sent through this server that the store took, by outcome: delivered (ended a wait) or " +
				"buffered (kept for a later wait); a repeat of an idempotency key counts again, with the first answer.",
		}, []string{"outcome"}),
		attempts: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "latch_execution_attempts",
			Help: "Starts an execution took, observed when a worker through this server ended it (complete or " +
				"fail to a terminal status), by kind and status: succeeded, failed or cancelled.",
			Buckets: []float64{1, 2, 3, 5, 10, 25, 100},
		}, []string{"kind", "status"}),
		lifetime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "latch_execution_duration_seconds",
			Help: "Time from submit to finish of the executions a worker through this server ended (complete or " +
				"fail to a terminal status), by kind and status: queueing, retries and flows' waits included.",
			Buckets: []float64{.01, .05, .1, .5, 1, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600, 24 * 3600},
		}, []string{"kind", "status"}),
		claimWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "latch_claim_wait_seconds",
			Help: "Time from ready to claimed of the leases claims through this server handed out, by queue: from " +
				"the execution's run_at (its submit, a scheduled one's due time, a retry's backoff end, a resume) to " +
				"the claim, in-process workers' claims and POST /api/workers/claim alike.",
			Buckets: ClaimWaitBuckets,
		}, []string{"queue"}),
	}
	m.signals.WithLabelValues(SignalDelivered)
	m.signals.WithLabelValues(SignalBuffered)
	m.kinds = labels.New(labels.DefaultMax)
	m.queues = labels.New(labels.DefaultMax)
	return m
}

// Collectors are what the server serves on /metrics.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.ops, m.retries, m.deferrals, m.suspends, m.signals, m.attempts, m.lifetime,
		m.claimWait}
}

// Observe counts one store call: give it to storewrap.Wrap.
func (m *Metrics) Observe(c *storewrap.Call) {
	m.ops.WithLabelValues(c.Op, result(c.Err)).Observe(c.Duration.Seconds())
	if c.Err != nil {
		return
	}
	switch r := c.Result.(type) {
	case *store.ClaimResult:
		if r.Deferred > 0 {
			m.deferrals.Add(float64(r.Deferred))
		}
		if len(r.Leases) > 0 {
			m.claimed(c, r.Leases)
		}
	case *store.SignalResult:
		if r.Delivered {
			m.signals.WithLabelValues(SignalDelivered).Inc()
		} else {
			m.signals.WithLabelValues(SignalBuffered).Inc()
		}
	case *store.Execution:
		if (c.Op == "Complete" || c.Op == "Fail") && r.Status.Terminal() {
			m.ended(r)
		}
		switch c.Op {
		case "Fail":
			if r.Status == store.StatusQueued || r.Status == store.StatusScheduled {
				m.retries.WithLabelValues(m.kinds.Value(r.Kind)).Inc()
			}
		case "Suspend":
			if r.Status == store.StatusSuspended {
				m.suspends.WithLabelValues(m.kinds.Value(r.Kind)).Inc()
			}
		}
	}
}

// ClaimWaitBuckets are latch_claim_wait_seconds' buckets: from a hot
// queue's milliseconds to a backlog's hours.
var ClaimWaitBuckets = []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600,
	4 * 3600}

// claimed observes the wait of each lease a claim handed out: from its
// ReadyAt to the claim's time (ClaimParams.Now, the clock the store
// claimed by; the wall clock when it is zero, as for the store). A lease
// of a store that leaves ReadyAt zero is not observed; a wait below 0 (a
// claim's clock behind the clock that made the execution ready) counts
// as 0.
func (m *Metrics) claimed(c *storewrap.Call, leases []store.Lease) {
	var now time.Time
	if p, ok := c.Params.(*store.ClaimParams); ok {
		now = p.Now
	}
	now = store.Now(now)
	for i := range leases {
		l := &leases[i]
		if l.ReadyAt.IsZero() {
			continue
		}
		m.claimWait.WithLabelValues(m.queues.Value(l.Queue)).Observe(max(now.Sub(l.ReadyAt), 0).Seconds())
	}
}

// ended observes an execution a worker just ended.
func (m *Metrics) ended(e *store.Execution) {
	kind, status := m.kinds.Value(e.Kind), string(e.Status)
	m.attempts.WithLabelValues(kind, status).Observe(float64(e.Attempt))
	if e.FinishedAt != nil && !e.CreatedAt.IsZero() {
		m.lifetime.WithLabelValues(kind, status).Observe(max(e.FinishedAt.Sub(e.CreatedAt), 0).Seconds())
	}
}

// result is the result label of an error.
func result(err error) string {
	if err == nil || store.IsRefusal(err) {
		return ResultOK
	}
	return ResultError // unavailable, a context's end, anything else
}
