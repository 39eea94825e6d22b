package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// needRedis skips the test without redis-server and redis-cli on PATH, or
// fails it when LATCH_REQUIRE_BACKENDS is set.
func needRedis(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("LATCH_REQUIRE_BACKENDS") != "" {
				t.Fatalf("LATCH_REQUIRE_BACKENDS is set but %s is not on PATH", tool)
			}
			t.Skipf("%s is not on PATH", tool)
		}
	}
}

// freeBase finds n consecutive free ports whose cluster bus ports (+10000)
// are free too.
func freeBase(t *testing.T, n int) int {
	t.Helper()
	for range 200 {
		base := 30000 + rand.IntN(20000)
		ok := true
		for p := base; p < base+n && ok; p++ {
			ok = portFree(p) == nil && portFree(p+10000) == nil
		}
		if ok {
			return base
		}
	}
	t.Fatal("no free ports")
	return 0
}

// TestRun runs the benchmark at a tiny size on the two clusters it starts,
// one primary and three, two rounds: round checks that every submitted
// execution was started exactly once and is succeeded under its tenant,
// so a nil error is that check passing. The report and the JSON must
// account for every primary, and the clusters must be gone afterwards.
func TestRun(t *testing.T) {
	needRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b1 := freeBase(t, 1)
	b3 := freeBase(t, 3)
	for b3 <= b1 && b1 < b3+3 {
		b3 = freeBase(t, 3)
	}
	cfg := config{Tenants: 3, N: 90, Clients: 4, Slots: 5, Timeout: time.Minute}
	jsonPath := filepath.Join(t.TempDir(), "rc.json")
	var out, log bytes.Buffer
	err := run(ctx, cfg, 2, []spec{
		{name: "one-primary", primaries: 1, base: b1},
		{name: "three-primaries", primaries: 3, base: b3},
	}, jsonPath, &out, &log)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	for _, p := range []int{b1, b3, b3 + 1, b3 + 2} {
		if err := portFree(p); err != nil {
			t.Errorf("port %d still in use after run: %v", p, err)
		}
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.Results) != 2*2*2 {
		t.Fatalf("%d results, want 8 (2 rounds x 2 clusters x 2 phases)", len(rec.Results))
	}
	for _, p := range rec.Results {
		if p.Ops != cfg.N || p.PerSecond <= 0 {
			t.Errorf("%s %s round %d: %d ops at %.0f/s, want %d", p.Cluster, p.Phase, p.Round, p.Ops, p.PerSecond, cfg.N)
		}
		if len(p.Nodes) != p.Primaries {
			t.Errorf("%s: %d nodes, want %d", p.Cluster, len(p.Nodes), p.Primaries)
		}
		var slots int
		var calls, share float64
		for _, n := range p.Nodes {
			slots += n.Slots
			calls += float64(n.Calls)
			share += n.CallsShare
		}
		if slots != 16384 || calls == 0 || share < 0.999 || share > 1.001 {
			t.Errorf("%s %s: nodes serve %d slots, ran %.0f commands with shares summing to %.3f", p.Cluster, p.Phase, slots, calls, share)
		}
		if p.Phase == "submit" {
			var added int64
			for _, n := range p.Nodes {
				added += n.KeysAdded
			}
			if added < int64(cfg.N) {
				t.Errorf("%s submit added %d keys for %d executions", p.Cluster, added, cfg.N)
			}
		}
	}
	for _, want := range []string{"one-primary", "three-primaries", "Caveat:", "| drain |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
}

// TestRunStopsOnCancel cancels a run mid-way: it must return the context's
// error and leave no redis-server behind.
func TestRunStopsOnCancel(t *testing.T) {
	needRedis(t)
	ctx, cancel := context.WithCancel(context.Background())
	b1 := freeBase(t, 1)
	var log bytes.Buffer
	go func() {
		time.Sleep(1500 * time.Millisecond)
		cancel()
	}()
	err := run(ctx, config{Tenants: 2, N: 1_000_000, Clients: 2, Slots: 2, Timeout: time.Minute}, 1,
		[]spec{{name: "one-primary", primaries: 1, base: b1}}, "", &bytes.Buffer{}, &log)
	if err == nil {
		t.Fatal("a cancelled run returned no error")
	}
	if err := portFree(b1); err != nil {
		t.Errorf("port %d still in use after a cancelled run: %v", b1, err)
	}
}

func TestVerifyCountsStarts(t *testing.T) {
	ids := []string{"a", "b", "c"}
	for _, tc := range []struct {
		starts []int32
		want   string
	}{
		{[]int32{1, 2, 1}, "execution 1 (b) was started 2 times"},
		{[]int32{1, 1, 0}, "execution 2 (c) was started 0 times"},
	} {
		starts := make([]atomic.Int32, len(ids))
		for i, n := range tc.starts {
			starts[i].Store(n)
		}
		err := verify(context.Background(), nil, []string{"t"}, "bench", ids, starts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("starts %v: error %v, want %q", tc.starts, err, tc.want)
		}
	}
}

func TestParseNodes(t *testing.T) {
	s := "07c3 127.0.0.1:7201@17201 master - 0 1 2 connected 5461-10922\n" +
		"e1d2 127.0.0.1:7200@17200,host myself,master - 0 0 1 connected 0-5460 [93->-abcd]\n" +
		"aa11 127.0.0.1:7203@17203 slave 07c3 0 1 2 connected\n" +
		"bb22 127.0.0.1:7204@17204 master,fail - 0 1 4 connected\n" +
		"f00d 127.0.0.1:7202@17202 master - 0 1 3 connected 10923-16383\n"
	got, err := parseNodes(s)
	if err != nil {
		t.Fatal(err)
	}
	want := []node{{"127.0.0.1:7200", 5461}, {"127.0.0.1:7201", 5462}, {"127.0.0.1:7202", 5461}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("parseNodes = %v, want %v", got, want)
	}
}

func TestParseInfo(t *testing.T) {
	s := "# CPU\r\nused_cpu_sys:1.25\r\nused_cpu_user:2.50\r\n# Commandstats\r\n" +
		"cmdstat_fcall:calls=10,usec=100,usec_per_call=10.00\r\ncmdstat_hset:calls=30,usec=3\r\n" +
		"cmdstat_info:calls=7,usec=1\r\ncmdstat_cluster|nodes:calls=5,usec=1\r\n# Keyspace\r\ndb0:keys=42,expires=1,avg_ttl=0\r\n"
	got := parseInfo(s)
	if got.cpu != 3.75 || got.calls != 40 || got.keys != 42 {
		t.Errorf("parseInfo = %+v, want cpu 3.75, calls 40, keys 42", got)
	}
}

// TestRunExisting runs on a cluster that is already up (-cluster3): run
// must find its three primaries, leave the cluster running, and delete its
// own keys and no other.
func TestRunExisting(t *testing.T) {
	needRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var log bytes.Buffer
	c, err := startCluster(ctx, "existing", freeBase(t, 3), 3, &log)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	defer c.stop()
	if err := c.discover(ctx); err != nil {
		t.Fatal(err)
	}
	other := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: c.seeds})
	defer other.Close()
	if err := other.Set(ctx, "someone-else", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	jsonPath := filepath.Join(t.TempDir(), "rc.json")
	err = run(ctx, config{Tenants: 2, N: 40, Clients: 2, Slots: 3, Timeout: time.Minute}, 1,
		[]spec{{name: "three-primaries", primaries: 3, existing: c.seeds[0]}}, jsonPath, &bytes.Buffer{}, &log)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.Clusters) != 1 || len(rec.Clusters[0].Primaries) != 3 {
		t.Fatalf("run found %+v, want one cluster of three primaries", rec.Clusters)
	}
	var keys int64
	for _, n := range c.primaries {
		rdb := goredis.NewClient(&goredis.Options{Addr: n.Addr})
		k, err := rdb.DBSize(ctx).Result()
		rdb.Close()
		if err != nil {
			t.Fatalf("the cluster is down after run: %v", err)
		}
		keys += k
	}
	if v, err := other.Get(ctx, "someone-else").Result(); err != nil || v != "x" || keys != 1 {
		t.Errorf("after run the cluster holds %d keys and someone-else's is %q (%v), want that one key only", keys, v, err)
	}
}
