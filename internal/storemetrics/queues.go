package storemetrics

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/latch-run/latch/internal/labels"
	"github.com/latch-run/latch/store"
)

// Defaults of QueuesConfig.
const (
	DefaultCacheFor    = 5 * time.Second
	DefaultReadTimeout = 2 * time.Second
)

// QueuesConfig configures Queues.
type QueuesConfig struct {
	Store store.Store // required
	// CacheFor is how long one read of the store answers scrapes: however
	// many scrape, the store is read at most once per CacheFor. Default
	// DefaultCacheFor.
	CacheFor time.Duration
	// ReadTimeout bounds one read (QueueStats and ConcurrencyKeys). Default
	// DefaultReadTimeout.
	ReadTimeout time.Duration
	Logger      *slog.Logger     // default slog.Default()
	Now         func() time.Time // default time.Now
}

// Queues is a prometheus.Collector that reads the store at scrape time
// (store.Store.QueueStats and ConcurrencyKeys, every tenant summed per
// queue) and serves the queue gauges. A read that fails reports
// latch_store_up 0 and no queue gauge, never a failed scrape; it is logged
// once, and its recovery once.
type Queues struct {
	cfg   QueuesConfig
	names *labels.Bounded // the queue label

	mu     sync.Mutex // held through a read: concurrent scrapes wait for it, then share it
	readAt time.Time
	snap   *snapshot // nil until the first read
	failed bool      // the latest read failed (logged once)
}

// snapshot is one read of the store.
type snapshot struct {
	err     error
	queues  map[string]*store.QueueStats // summed over tenants; OldestReadyAt the oldest of any
	atLimit int
}

var (
	descUp = prometheus.NewDesc("latch_store_up",
		"1 when this server's latest read of the queue figures from the store succeeded, else 0 (the queue gauges are then absent).",
		nil, nil)
	descReady = prometheus.NewDesc("latch_queue_ready",
		"Executions ready to be claimed (queued, or scheduled and due), every tenant's, by queue.",
		[]string{"queue"}, nil)
	descOldest = prometheus.NewDesc("latch_queue_oldest_ready_age_seconds",
		"How long the oldest ready execution of the queue has been ready (since its run_at); 0 when none is.",
		[]string{"queue"}, nil)
	descExecutions = prometheus.NewDesc("latch_executions",
		"Executions that are not terminal and not ready, by queue and status: scheduled (run_at in the future), "+
			"running, suspended (flows waiting for a time or a signal).",
		[]string{"queue", "status"}, nil)
	descAtLimit = prometheus.NewDesc("latch_concurrency_keys_at_limit",
		"Concurrency keys with as many running executions as their limit: their other executions wait.",
		nil, nil)
)

// NewQueues returns the collector; it reads nothing until scraped.
func NewQueues(cfg QueuesConfig) *Queues {
	if cfg.CacheFor <= 0 {
		cfg.CacheFor = DefaultCacheFor
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = DefaultReadTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Queues{cfg: cfg, names: labels.New(labels.DefaultMax)}
}

// Describe implements prometheus.Collector.
func (q *Queues) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descUp, descReady, descOldest, descExecutions, descAtLimit} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (q *Queues) Collect(ch chan<- prometheus.Metric) {
	s, now := q.read()
	if s.err != nil {
		ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(descAtLimit, prometheus.GaugeValue, float64(s.atLimit))
	for name, st := range s.queues {
		ch <- prometheus.MustNewConstMetric(descReady, prometheus.GaugeValue, float64(st.Ready), name)
		age := 0.0
		if st.OldestReadyAt != nil {
			age = max(now.Sub(*st.OldestReadyAt).Seconds(), 0)
		}
		ch <- prometheus.MustNewConstMetric(descOldest, prometheus.GaugeValue, age, name)
		for status, n := range map[store.Status]int{store.StatusScheduled: st.Scheduled,
			store.StatusRunning: st.Running, store.StatusSuspended: st.Suspended} {
			ch <- prometheus.MustNewConstMetric(descExecutions, prometheus.GaugeValue, float64(n), name, string(status))
		}
	}
}

// read returns the cached snapshot, reading the store when it is older
// than CacheFor, and the time the ages are measured at.
func (q *Queues) read() (*snapshot, time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.cfg.Now()
	if q.snap != nil && now.Sub(q.readAt) < q.cfg.CacheFor && !now.Before(q.readAt) {
		return q.snap, now
	}
	ctx, cancel := context.WithTimeout(context.Background(), q.cfg.ReadTimeout)
	defer cancel()
	s := &snapshot{queues: map[string]*store.QueueStats{}}
	stats, err := q.cfg.Store.QueueStats(ctx, &store.QueueStatsParams{Now: now})
	var keys []*store.ConcurrencyKeyUse
	if err == nil {
		keys, err = q.cfg.Store.ConcurrencyKeys(ctx, &store.ConcurrencyKeysParams{})
	}
	switch {
	case err != nil && !q.failed:
		q.cfg.Logger.Error("metrics: reading the queue figures from the store failed; latch_store_up is 0 "+
			"until a read succeeds (not logged again until then)", "err", err)
	case err == nil && q.failed:
		q.cfg.Logger.Info("metrics: reading the queue figures from the store works again")
	}
	q.failed = err != nil
	s.err = err
	for _, st := range stats {
		name := q.names.Value(st.Queue) // queues are tenants' names: at most DefaultMax series
		sum := s.queues[name]
		if sum == nil {
			sum = &store.QueueStats{Queue: name}
			s.queues[name] = sum
		}
		sum.Ready += st.Ready
		sum.Scheduled += st.Scheduled
		sum.Running += st.Running
		sum.Suspended += st.Suspended
		if st.OldestReadyAt != nil && (sum.OldestReadyAt == nil || st.OldestReadyAt.Before(*sum.OldestReadyAt)) {
			sum.OldestReadyAt = st.OldestReadyAt
		}
	}
	for _, k := range keys {
		if k.Running >= k.Limit {
			s.atLimit++
		}
	}
	q.snap, q.readAt = s, now
	return s, now
}
