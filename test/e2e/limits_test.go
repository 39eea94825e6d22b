package e2e

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"testing"
	"time"

	"github.com/latch-run/latch/internal/testdb"
)

// listed is an execution as GET /api/executions lists it.
type listed struct {
	ID        string     `json:"execution_id"`
	Status    string     `json:"status"`
	DedupKey  string     `json:"dedup_key"`
	RateKey   *string    `json:"rate_key"`
	Attempt   int        `json:"attempt"`
	CreatedAt time.Time  `json:"created_at"`
	StartedAt *time.Time `json:"started_at"`
}

// listAll pages through GET /api/executions with the query q.
func listAll(ctx context.Context, c *client, q string) ([]listed, error) {
	var all []listed
	cursor := ""
	for {
		var page struct {
			Items      []listed `json:"items"`
			NextCursor *string  `json:"next_cursor"`
		}
		path := "/api/executions?limit=500&" + q
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		if _, err := c.call(ctx, "GET", path, nil, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Items...)
		if page.NextCursor == nil || *page.NextCursor == "" {
			return all, nil
		}
		cursor = *page.NextCursor
	}
}

// testLimits is the black-box scenario of the limits, run on every backend: three
// `latch serve` processes on one store.
//
//   - A concurrency limit of 2 is used fully but never exceeded, as the
//     target sees it.
//   - 60 jobs on a rate limit of 5/s (burst 2) from three servers: no
//     window of W seconds holds more than 2 + 5·W starts (I7), and every
//     job runs.
//   - A schedule every 1s whose job takes 2.5s with overlap skip: the
//     target never sees two at once, no tick yields two executions,
//     skipped ticks are recorded, and when a server is SIGKILLed mid-
//     schedule the ticks go on from the others (I6).
func testLimits(t *testing.T, store string) {
	g := newGauge(t)
	servers, clients := startCluster(t, store, "limits")
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	submit := func(i int, body map[string]any) string {
		var e execution
		if _, err := clients[i%len(clients)].call(ctx, "POST", "/api/executions", body, &e); err != nil {
			t.Fatalf("submit: %v", err)
		}
		return e.ID
	}
	waitAll := func(ids []string) {
		for _, id := range ids {
			e, err := waitTerminal(ctx, clients[0], id)
			if err != nil || e.Status != "succeeded" {
				t.Fatalf("execution %s: %+v, %v; want succeeded", id, e, err)
			}
		}
	}

	t.Run("ConcurrencyLimitUsedFullyNeverExceeded", func(t *testing.T) {
		var ids []string
		for i := range 12 {
			ids = append(ids, submit(i, map[string]any{
				"kind": "http", "concurrency_key": "customer-7", "concurrency_limit": 2,
				"payload": map[string]any{"url": g.url + "/conc/" + fmt.Sprint(i) + "?hold=400ms"},
			}))
		}
		waitAll(ids)
		most, arrived := g.stats("conc")
		if most != 2 {
			t.Errorf("I4: the target saw at most %d requests of a key with limit 2 at once, want exactly 2", most)
		}
		if arrived != 12 {
			t.Errorf("%d requests arrived for 12 jobs", arrived)
		}
	})

	t.Run("RateLimitHoldsAcrossServers", func(t *testing.T) {
		const rate, burst = 5, 2
		var rl map[string]any
		if _, err := clients[0].call(ctx, "PUT", "/api/rate-limits/target",
			map[string]any{"rate": rate, "per_seconds": 1, "burst": burst}, &rl); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for i := range 60 {
			ids = append(ids, submit(i, map[string]any{
				"kind": "http", "rate_key": "target",
				"payload": map[string]any{"url": g.url + "/rate/" + fmt.Sprint(i)},
			}))
		}
		waitAll(ids)
		list, err := listAll(ctx, clients[1], "kind=http")
		if err != nil {
			t.Fatal(err)
		}
		var starts []time.Time
		for _, x := range list {
			if x.RateKey != nil && *x.RateKey == "target" && x.StartedAt != nil {
				starts = append(starts, *x.StartedAt)
			}
		}
		if len(starts) != 60 {
			t.Fatalf("%d of 60 rate-limited executions have started", len(starts))
		}
		sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
		interval := time.Second / rate
		for i := range starts {
			for j := i; j < len(starts); j++ {
				if n, allowed := j-i+1, burst+int(starts[j].Sub(starts[i])/interval); n > allowed {
					t.Fatalf("I7: %d starts within %s, allowed %d (burst %d + %d/s)",
						n, starts[j].Sub(starts[i]), allowed, burst, rate)
				}
			}
		}
		if _, arrived := g.stats("rate"); arrived != 60 {
			t.Errorf("%d requests arrived for 60 jobs", arrived)
		}
		span := starts[len(starts)-1].Sub(starts[0])
		t.Logf("60 starts under 5/s burst 2 over three servers took %s (the limit allows no less than %s)",
			span.Round(time.Millisecond), (58 * interval).Round(time.Millisecond))
	})

	t.Run("ScheduleSkipAcrossServersAndAKill", func(t *testing.T) {
		var sc map[string]any
		code, err := clients[0].call(ctx, "PUT", "/api/schedules/sweep", map[string]any{
			"every": "1s", "kind": "http", "overlap": "skip",
			"payload": map[string]any{"url": g.url + "/sweep/run?hold=2500ms", "timeout_seconds": 10},
		}, &sc)
		if err != nil || code != http.StatusCreated {
			t.Fatalf("PUT schedule: %d %v", code, err)
		}
		time.Sleep(6 * time.Second)
		servers[0].kill()
		killed := time.Now()
		time.Sleep(7 * time.Second)
		if _, err := clients[1].call(ctx, "PUT", "/api/schedules/sweep", map[string]any{
			"every": "1s", "kind": "http", "overlap": "skip", "enabled": false,
			"payload": map[string]any{"url": g.url + "/sweep/run?hold=2500ms", "timeout_seconds": 10},
		}, &sc); err != nil {
			t.Fatal(err)
		}
		list, err := listAll(ctx, clients[1], "schedule=sweep")
		if err != nil {
			t.Fatal(err)
		}
		ticks := map[string]int{}
		skipped, afterKill := 0, 0
		for _, x := range list {
			ticks[x.DedupKey]++
			if x.Status == "skipped" {
				skipped++
			}
			if x.CreatedAt.After(killed.Add(time.Second)) {
				afterKill++
			}
		}
		for k, n := range ticks {
			if n != 1 {
				t.Errorf("I6: tick %s has %d executions", k, n)
			}
		}
		if most, _ := g.stats("sweep"); most != 1 {
			t.Errorf("I6: the target saw %d sweeps at once under overlap skip, want 1", most)
		}
		if skipped == 0 {
			t.Errorf("no skipped tick recorded over 13 ticks of a 2.5s job every 1s: %d executions", len(list))
		}
		if afterKill < 4 {
			t.Errorf("only %d ticks fired in the 6s after a server was killed; the others must go on", afterKill)
		}
		t.Logf("%d ticks: %d skipped, %d after the kill", len(list), skipped, afterKill)
	})
}

// Three `latch serve` processes on one SQLite file.
func TestLimitsSQLite(t *testing.T) {
	t.Parallel()
	testLimits(t, "sqlite:"+testdb.SQLite(t))
}

// Three `latch serve` processes on one PostgreSQL schema.
func TestLimitsPostgres(t *testing.T) {
	t.Parallel()
	testLimits(t, postgresStore(t))
}

// Three `latch serve` processes on one Redis key prefix.
func TestLimitsRedis(t *testing.T) {
	t.Parallel()
	testLimits(t, redisStore(t))
}
