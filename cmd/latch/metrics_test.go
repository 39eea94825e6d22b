package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scrape reads base's /metrics and returns each sample's value by its
// series as written (`name{label="v",...}`).
func scrape(t *testing.T, base string) map[string]float64 {
	t.Helper()
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d, %v", res.StatusCode, err)
	}
	samples := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if i < 0 || err != nil {
			t.Fatalf("/metrics: unreadable line %q", line)
		}
		samples[line[:i]] = v
	}
	return samples
}

// A server's /metrics counts the work it does: claims by its in-process
// workers and over HTTP, runs by kind and outcome with their run time, and
// the expired leases its rescuer ended.
func TestServeMetricsCountRealWork(t *testing.T) {
	base := startServe(t, "--workers", "2", "--rescue-interval", "100ms", "--shutdown-grace", "3s")
	key := newTenant(t, base, testAdminKey)
	for _, body := range []string{
		`{"kind":"echo","payload":{"n":1}}`,
		`{"kind":"echo","payload":{"n":2}}`,
		`{"kind":"sleep","payload":{}}`, // a payload the kind refuses: failed at once
		// Times out twice: retried, then failed.
		`{"kind":"sleep","payload":{"seconds":60},"timeout_seconds":1,"max_attempts":2}`,
		// Claimed over HTTP below and left to expire: rescued.
		`{"kind":"external","max_attempts":1}`,
		`{"kind":"external","max_attempts":2}`,
	} {
		call(t, base, "POST", "/api/executions", key, body, http.StatusCreated, nil)
	}
	var claimed struct {
		Leases []struct{} `json:"leases"`
	}
	call(t, base, "POST", "/api/workers/claim", key,
		`{"worker_id":"gone","kinds":["external"],"max":2,"lease_seconds":1}`, http.StatusOK, &claimed)
	if len(claimed.Leases) != 2 {
		t.Fatalf("the HTTP worker claimed %d executions, want 2", len(claimed.Leases))
	}

	want := map[string]float64{
		`latch_leases_claimed_total{source="http"}`:                                  2,
		`latch_leases_claimed_total{source="worker"}`:                                5,
		`latch_runs_total{kind="echo",outcome="succeeded"}`:                          2,
		`latch_runs_total{kind="sleep",outcome="retried"}`:                           1,
		`latch_runs_total{kind="sleep",outcome="failed"}`:                            2,
		`latch_run_duration_seconds_count{kind="echo",outcome="succeeded"}`:          2,
		`latch_run_duration_seconds_count{kind="sleep",outcome="retried"}`:           1,
		`latch_run_duration_seconds_bucket{kind="sleep",outcome="retried",le="0.5"}`: 0, // it ran its 1s timeout
		`latch_run_duration_seconds_bucket{kind="sleep",outcome="retried",le="2.5"}`: 1,
		`latch_rescues_total{outcome="requeued"}`:                                    1,
		`latch_rescues_total{outcome="failed"}`:                                      1,
		`latch_rescues_total{outcome="cancelled"}`:                                   0,
	}
	// The sleep's second attempt comes after its backoff (up to 1s), and
	// the expired leases after a second and a rescue interval.
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := scrape(t, base)
		var wrong []string
		for series, v := range want {
			switch g, ok := got[series]; {
			case !ok:
				wrong = append(wrong, fmt.Sprintf("%s absent, want %g", series, v))
			case g != v:
				wrong = append(wrong, fmt.Sprintf("%s = %g, want %g", series, g, v))
			}
		}
		if len(wrong) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics after 20s:\n%s", strings.Join(wrong, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Nothing beyond that work was counted.
	got := scrape(t, base)
	for series, v := range got {
		if strings.HasPrefix(series, "latch_runs_total{") && want[series] != v {
			t.Errorf("%s = %g, not counted by the work above", series, v)
		}
	}
}
