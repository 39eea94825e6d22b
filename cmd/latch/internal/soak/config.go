package soak

import (
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/latch-run/latch/store"
)

// Config configures a soak. Zero fields take the stated defaults.
type Config struct {
	// Store is the store to soak. Required; the caller opens and closes it.
	// Run adds a tenant of its own (left behind, with its executions, for
	// inspection) and two schedules and a rate limit of that tenant, which
	// it removes at the end.
	Store store.Store

	// Duration is how long the load runs. Required.
	Duration time.Duration

	// Rate is the steady submit rate, per second. Default 100.
	Rate int

	// Workers is the number of worker slots, split over two engine.Workers.
	// Default 16 + Rate/25.
	Workers int

	// Clients is the number of concurrent submitters. Default 4 + Rate/50.
	Clients int

	// ReportEvery is the time between two progress lines. Default 10s.
	ReportEvery time.Duration

	// SampleEvery is the time between two samples of the heap, the
	// goroutines, the open files and the inflight count, which the growth
	// checks fit. Default Duration/60, within [100ms, 5s].
	SampleEvery time.Duration

	// DrainTimeout bounds the wait, after the load, for every execution to
	// finish. Default 60s.
	DrainTimeout time.Duration

	// Out receives the progress lines and the summary. Default: none.
	Out io.Writer

	// Logger receives the engine's logs. Default: none. The records at
	// level error are counted either way, and each is a breach.
	Logger *slog.Logger

	// TempDir holds the journal while the soak runs. Default os.TempDir().
	TempDir string
}

// Plan constants: what the load is made of (see plan.go).
const (
	// Kind is the kind of every execution the soak submits.
	Kind = "latch-soak"
	// RateKey and ConcurrencyKey are the limited keys.
	RateKey        = "soak-rate"
	ConcurrencyKey = "soak-conc"
	// ConcurrencyLimit is ConcurrencyKey's limit.
	ConcurrencyLimit = 2
	// RateBurst is the burst of RateKey's limit; its rate is twice the
	// average rate of the executions that carry it (Rate/5 per second).
	RateBurst = 2
	// The tenant's two schedules.
	SkipSchedule  = "soak-skip"  // every 1s, overlap skip
	QueueSchedule = "soak-queue" // every 2s, overlap queue
)

func (c *Config) setDefaults() error {
	if c.Store == nil {
		return errors.New("soak: no Store")
	}
	if c.Duration <= 0 {
		return errors.New("soak: Duration must be positive")
	}
	if c.Rate < 0 || c.Workers < 0 || c.Clients < 0 {
		return errors.New("soak: Rate, Workers and Clients must not be negative")
	}
	if c.Rate == 0 {
		c.Rate = 100
	}
	if c.Workers == 0 {
		c.Workers = 16 + c.Rate/25
	}
	c.Workers = max(c.Workers, 2)
	if c.Clients == 0 {
		c.Clients = 4 + c.Rate/50
	}
	if c.ReportEvery <= 0 {
		c.ReportEvery = 10 * time.Second
	}
	if c.SampleEvery <= 0 {
		c.SampleEvery = min(max(c.Duration/60, 100*time.Millisecond), 5*time.Second)
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = time.Minute
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	return nil
}

// rateLimit is the limit on RateKey for the configured rate: twice the
// average rate of the executions that carry it (a tenth of the submits).
func (c *Config) rateLimit() store.RateLimit {
	return store.RateLimit{Key: RateKey, Rate: max(1, c.Rate/5), Per: time.Second, Burst: RateBurst}
}

// concurrentWork is how long a ConcurrencyKey job works: short enough
// that a group of 5 is done well before the next group comes (the key's
// executions hold 2 slots for 3 rounds of it per 50 submits), long enough
// that the group's jobs overlap and the limit is reached.
func (c *Config) concurrentWork() time.Duration {
	return min(100*time.Millisecond, 8*time.Second/time.Duration(c.Rate))
}
