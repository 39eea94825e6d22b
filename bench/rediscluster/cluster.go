package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// cluster is a Redis Cluster the benchmark runs on: one it started (procs
// set, removed by stop) or one it was pointed at.
type cluster struct {
	name      string
	seeds     []string // host:port addresses for the store URL
	primaries []node   // by address, read by discover
	procs     []*exec.Cmd
	dir       string
}

// node is one primary of a cluster.
type node struct {
	Addr  string `json:"addr"`
	Slots int    `json:"slots"` // hash slots it serves
}

// startCluster starts n redis-server processes on 127.0.0.1 ports
// base..base+n-1 (cluster bus ports 10000 higher), primaries only, without
// persistence, and makes them one cluster: with redis-cli --cluster create
// for three or more (as test/rediscluster/start.sh does), by hand for fewer
// (redis-cli refuses a cluster of fewer than three primaries): the nodes
// meet and split the 16384 slots. It returns once every node reports
// cluster_state:ok. On an error it stops what it started.
func startCluster(ctx context.Context, name string, base, n int, log io.Writer) (c *cluster, err error) {
	for _, tool := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("%s is not on PATH: %w", tool, err)
		}
	}
	if base < 1024 || base+n-1+10000 > 65535 {
		return nil, fmt.Errorf("ports %d-%d: want ports whose cluster bus port (+10000) is at most 65535", base, base+n-1)
	}
	for p := base; p < base+n; p++ {
		for _, q := range []int{p, p + 10000} {
			if err := portFree(q); err != nil {
				return nil, fmt.Errorf("port %d is in use (pick others with -ports1/-ports3): %w", q, err)
			}
		}
	}
	dir, err := os.MkdirTemp("", "latch-rediscluster-"+name+"-")
	if err != nil {
		return nil, err
	}
	c = &cluster{name: name, dir: dir}
	defer func() {
		if err != nil {
			c.stop()
			c = nil
		}
	}()
	for p := base; p < base+n; p++ {
		pd := filepath.Join(dir, strconv.Itoa(p))
		if err := os.MkdirAll(pd, 0o755); err != nil {
			return c, err
		}
		cmd := exec.Command("redis-server",
			"--bind", "127.0.0.1", "--port", strconv.Itoa(p),
			"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(pd, "nodes.conf"),
			"--cluster-node-timeout", "5000",
			"--save", "", "--appendonly", "no",
			"--dir", pd, "--logfile", filepath.Join(pd, "redis.log"), "--daemonize", "no")
		cmd.SysProcAttr = procAttr()
		if err := cmd.Start(); err != nil {
			return c, fmt.Errorf("redis-server on port %d: %w", p, err)
		}
		c.procs = append(c.procs, cmd)
		c.seeds = append(c.seeds, fmt.Sprintf("127.0.0.1:%d", p))
	}
	for _, a := range c.seeds {
		if err := waitPing(ctx, a); err != nil {
			return c, fmt.Errorf("node %s does not answer (see %s): %w", a, dir, err)
		}
	}
	if n >= 3 {
		args := append([]string{"--cluster", "create"}, c.seeds...)
		args = append(args, "--cluster-replicas", "0", "--cluster-yes")
		out, err := exec.CommandContext(ctx, "redis-cli", args...).CombinedOutput()
		fmt.Fprintf(log, "%s: redis-cli --cluster create %s\n", name, strings.Join(c.seeds, " "))
		if err != nil {
			return c, fmt.Errorf("redis-cli --cluster create: %w\n%s", err, out)
		}
	} else if err := createByHand(ctx, c.seeds); err != nil {
		return c, err
	}
	if err := waitOK(ctx, c.seeds, n); err != nil {
		return c, err
	}
	return c, nil
}

// createByHand makes the nodes at addrs one cluster: they meet, and each
// takes an equal run of the slots.
func createByHand(ctx context.Context, addrs []string) error {
	for i, a := range addrs {
		rdb := goredis.NewClient(&goredis.Options{Addr: a})
		lo, hi := i*16384/len(addrs), (i+1)*16384/len(addrs)-1
		err := rdb.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err()
		if err == nil && i > 0 {
			host, port, _ := net.SplitHostPort(addrs[0])
			err = rdb.ClusterMeet(ctx, host, port).Err()
		}
		rdb.Close()
		if err != nil {
			return fmt.Errorf("node %s: %w", a, err)
		}
	}
	return nil
}

func portFree(p int) error {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
	if err != nil {
		return err
	}
	return l.Close()
}

func waitPing(ctx context.Context, addr string) error {
	rdb := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if err = rdb.Ping(ctx).Err(); err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}

// waitOK waits until every node at addrs reports cluster_state:ok and knows
// n nodes.
func waitOK(ctx context.Context, addrs []string, n int) error {
	want := []string{"cluster_state:ok", fmt.Sprintf("cluster_known_nodes:%d", n)}
	var last string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		ok := true
		for _, a := range addrs {
			info, err := clusterInfo(ctx, a)
			if err != nil {
				return err
			}
			lines := strings.Split(strings.ReplaceAll(info, "\r", ""), "\n")
			for _, w := range want {
				if !slices.Contains(lines, w) {
					ok, last = false, a+": "+info
				}
			}
		}
		if ok {
			return nil
		}
	}
	return fmt.Errorf("the cluster did not reach cluster_state:ok in 60 s; last:\n%s", last)
}

func clusterInfo(ctx context.Context, addr string) (string, error) {
	rdb := goredis.NewClient(&goredis.Options{Addr: addr})
	defer rdb.Close()
	return rdb.ClusterInfo(ctx).Result()
}

// discover reads the cluster's primaries and their slot counts from
// CLUSTER NODES of its first reachable seed.
func (c *cluster) discover(ctx context.Context) error {
	var err error
	for _, a := range c.seeds {
		var s string
		rdb := goredis.NewClient(&goredis.Options{Addr: a})
		s, err = rdb.ClusterNodes(ctx).Result()
		rdb.Close()
		if err != nil {
			continue
		}
		c.primaries, err = parseNodes(s)
		if err == nil {
			// A node that never met another knows no address of its own.
			host, _, _ := net.SplitHostPort(a)
			for i, p := range c.primaries {
				if strings.HasPrefix(p.Addr, ":") {
					c.primaries[i].Addr = host + p.Addr
				}
			}
			return nil
		}
	}
	return fmt.Errorf("%s: CLUSTER NODES: %w", c.name, err)
}

// parseNodes reads the primaries of a CLUSTER NODES reply: address
// (without the bus port) and how many slots each serves.
func parseNodes(s string) ([]node, error) {
	var out []node
	for _, line := range strings.Split(strings.ReplaceAll(s, "\r", ""), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		flags := strings.Split(f[2], ",")
		if !slices.Contains(flags, "master") || slices.Contains(flags, "fail") {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		addr, _, _ = strings.Cut(addr, ",")
		nd := node{Addr: addr}
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") {
				continue // a slot being migrated
			}
			lo, hi, isRange := strings.Cut(r, "-")
			a, err1 := strconv.Atoi(lo)
			b := a
			var err2 error
			if isRange {
				b, err2 = strconv.Atoi(hi)
			}
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("bad slot range %q in %q", r, line)
			}
			nd.Slots += b - a + 1
		}
		out = append(out, nd)
	}
	if len(out) == 0 {
		return nil, errors.New("no primary in CLUSTER NODES")
	}
	slices.SortFunc(out, func(a, b node) int { return strings.Compare(a.Addr, b.Addr) })
	return out, nil
}

// stop stops the processes startCluster started (SIGTERM, then SIGKILL
// after 5 s) and removes their directory. A cluster it did not start is
// left alone.
func (c *cluster) stop() {
	for _, p := range c.procs {
		_ = p.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range c.procs {
		done := make(chan struct{})
		go func() { _ = p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = p.Process.Kill()
			<-done
		}
	}
	c.procs = nil
	if c.dir != "" {
		os.RemoveAll(c.dir)
		c.dir = ""
	}
}
