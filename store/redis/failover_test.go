package redis_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/redis"
)

// TestClusterFailover kills the primary that holds a tenant's slot, on a
// Redis Cluster of the test's own (three primaries, a replica each, started
// here on free ports: the shared test cluster is never disturbed), while
// two tenant routers (two servers) are open on the namespace (the home
// namespace's primary may be that one or another). It asserts:
//
//   - synced: every change acknowledged before the replica had caught up
//     (a WAIT 1 on the primary after the last of them) is there after the
//     failover: the tenant, the queued executions, the leases (their
//     tokens still complete them), the completed ones, the dedup keys;
//   - the tail: of the changes acknowledged after that point (one at a
//     time, in order) the promoted replica holds a prefix — what
//     asynchronous replication can lose is a suffix, never a change from
//     the middle, never part of one (each script's effects are replicated
//     whole), and the namespace's indexes agree with its executions;
//   - the same Stores carry on without reopening: once the replica is
//     promoted their calls succeed again (until then they fail with
//     store.ErrUnavailable, nothing else), a lost completion is redone with
//     the lease's token, a lost submit is resubmitted under its dedup key,
//     new work is submitted, claimed and completed, and a change through
//     one Store wakes the other (its subscription moved to the new primary).
func TestClusterFailover(t *testing.T) {
	nodes := startCluster(t, 6)
	ctx := t.Context()
	prefix := "failover"
	url := "redis-cluster://" + nodes[0].addr + "," + nodes[1].addr + "," + nodes[2].addr + "?prefix=" + prefix
	a, err := redis.OpenRouter(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := redis.OpenRouter(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	// The primary holding the tenant's namespace, and its replica.
	cc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{nodes[0].addr}})
	defer cc.Close()
	tag := a.TenantNamespace("acme")
	pc, err := cc.MasterForKey(ctx, tag)
	if err != nil {
		t.Fatal(err)
	}
	primary := nodeByAddr(t, nodes, pc.Options().Addr)
	replica := replicaOf(t, ctx, nodes, primary)
	hc, err := cc.MasterForKey(ctx, "{"+prefix+"}")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("tenant namespace %s on primary %s, replica %s; home on %s", tag, primary.addr, replica.addr, hc.Options().Addr)

	// Synced: a tenant, ten executions (five with dedup keys), six leased,
	// three of those completed.
	if _, err := a.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", MaxInflight: 1000}); err != nil {
		t.Fatal(err)
	}
	var synced []string
	for i := range 10 {
		sub := store.Submission{Kind: "echo"}
		if i%2 == 0 {
			sub.DedupKey = "synced-" + strconv.Itoa(i)
		}
		synced = append(synced, admitOne(t, a, sub).ID)
	}
	claim, err := a.Claim(ctx, &store.ClaimParams{WorkerID: "w1", Max: 6, LeaseDuration: time.Hour})
	if err != nil || len(claim.Leases) != 6 {
		t.Fatalf("claim: %v, %d leases, want 6", err, len(claim.Leases))
	}
	leases := claim.Leases
	for _, l := range leases[:3] {
		if _, err := a.Complete(ctx, &store.CompleteParams{ExecutionID: l.ExecutionID, Token: l.Token}); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]store.Status{}
	for _, id := range synced {
		want[id] = store.StatusQueued
	}
	for i, l := range leases {
		want[l.ExecutionID] = store.StatusRunning
		if i < 3 {
			want[l.ExecutionID] = store.StatusSucceeded
		}
	}
	// The replication stream is one ordered stream: once the replica has
	// acknowledged a write made after all of those, it has them all.
	conn := pc.Conn()
	if err := conn.Set(ctx, tag+"sync", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := conn.Do(ctx, "WAIT", 1, 2000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT 1: %d replicas, %v", n, err)
	}
	conn.Close()

	// The tail: one change at a time, each acknowledged before the next,
	// submits and completions of the remaining leases, then at once the
	// primary's SIGKILL. (On loopback the replica usually has them all:
	// whatever it lacks, the checks below hold.)
	type change struct {
		name string
		took func() bool // after the failover: is the change there?
		redo func()      // after the failover, when it is not
	}
	var tail []change
	get := func(id string) *store.Execution {
		e, err := a.Get(ctx, &store.GetParams{ID: id})
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	for i := range 6 {
		key := "tail-" + strconv.Itoa(i)
		id := admitOne(t, a, store.Submission{Kind: "echo", DedupKey: key}).ID
		tail = append(tail, change{"submit " + key,
			func() bool { return get(id) != nil },
			func() { admitOne(t, a, store.Submission{Kind: "echo", DedupKey: key}) }})
		if i%2 == 1 {
			l := leases[3+i/2]
			complete := func() error {
				_, err := a.Complete(ctx, &store.CompleteParams{ExecutionID: l.ExecutionID, Token: l.Token})
				return err
			}
			if err := complete(); err != nil {
				t.Fatal(err)
			}
			tail = append(tail, change{"complete " + l.ExecutionID,
				func() bool { return get(l.ExecutionID).Status == store.StatusSucceeded },
				func() {
					if err := complete(); err != nil {
						t.Fatalf("complete %s again with its lease's token: %v", l.ExecutionID, err)
					}
				}})
		}
	}

	primary.kill(t)
	start := time.Now()
	waitPromoted(t, ctx, replica, 20*time.Second)
	t.Logf("replica %s promoted %v after the primary's SIGKILL", replica.addr, time.Since(start).Round(time.Millisecond))

	// The Stores reach the new primary: until go-redis has the new map of
	// the cluster, a call fails with ErrUnavailable and nothing else.
	for _, s := range []*redis.Router{a, b} {
		waitFor(t, 15*time.Second, "the Store reaches the new primary", func() bool {
			_, err := s.GetTenant(ctx, &store.GetTenantParams{Name: "acme"})
			if err != nil && !errors.Is(err, store.ErrUnavailable) {
				t.Fatalf("after the failover: %v", err)
			}
			return err == nil
		})
	}
	t.Logf("the Store answers %v after the primary's SIGKILL", time.Since(start).Round(time.Millisecond))

	for id, st := range want {
		e := get(id)
		if e != nil && st == store.StatusRunning && e.Status == store.StatusSucceeded {
			continue // one of the tail's completions: checked below
		}
		if e == nil || e.Status != st {
			t.Errorf("synced execution %s: %+v after the failover, want %s", id, e, st)
		}
	}
	kept := 0
	for kept < len(tail) && tail[kept].took() {
		kept++
	}
	for _, c := range tail[kept:] {
		if c.took() {
			t.Errorf("the tail kept %d changes, then %q: not a prefix of the acknowledged changes", kept, c.name)
		}
	}
	t.Logf("the tail: %d of %d acknowledged changes survived the failover", kept, len(tail))
	redis.CheckRouterConsistency(t, a)

	// Carry on: redo what was lost, resubmit the synced dedup keys (they
	// still name their executions), submit new work, and drain it all.
	for _, c := range tail[kept:] {
		c.redo()
	}
	for i := 0; i < 10; i += 2 {
		if e := admitOne(t, b, store.Submission{Kind: "echo", DedupKey: "synced-" + strconv.Itoa(i)}); e.ID != synced[i] {
			t.Errorf("dedup key synced-%d names %s after the failover, want %s", i, e.ID, synced[i])
		}
	}
	for range 5 {
		admitOne(t, b, store.Submission{Kind: "echo"})
	}
	done := 0
	for {
		res, err := b.Claim(ctx, &store.ClaimParams{WorkerID: "w2", Max: 50, LeaseDuration: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Leases) == 0 {
			break
		}
		for _, l := range res.Leases {
			if _, err := b.Complete(ctx, &store.CompleteParams{ExecutionID: l.ExecutionID, Token: l.Token}); err != nil {
				t.Fatal(err)
			}
			done++
		}
	}
	// 10 synced - 6 leased + 6 tail submits + 5 new: all queued, all run.
	if done != 4+6+5 {
		t.Errorf("claimed and completed %d after the failover, want 15", done)
	}
	ten, err := a.GetTenant(ctx, &store.GetTenantParams{Name: "acme"})
	if err != nil || ten.Inflight != 0 {
		t.Errorf("tenant after the drain: %+v %v, want inflight 0", ten, err)
	}
	redis.CheckRouterConsistency(t, a)

	// Changes through one Store wake the other again: its subscription
	// found the new primary.
	for i := range 3 {
		ch := b.Changed()
		admitOne(t, a, store.Submission{Kind: "echo", DedupKey: "wake-" + strconv.Itoa(i)})
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatal("a change through one Store no longer wakes the other after the failover")
		}
	}
}

func admitOne(t *testing.T, s store.Store, sub store.Submission) *store.Execution {
	t.Helper()
	res, err := s.Admit(t.Context(), &store.AdmitParams{Tenant: "acme", Items: []store.Submission{sub}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Items[0].Err != nil {
		t.Fatal(res.Items[0].Err)
	}
	return res.Items[0].Execution
}

// clusterNode is one redis-server process of a test's own cluster.
type clusterNode struct {
	addr string
	cmd  *exec.Cmd
	rdb  *goredis.Client
}

func (n *clusterNode) kill(t *testing.T) {
	t.Helper()
	if err := n.cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = n.cmd.Wait()
	n.cmd = nil
}

// startCluster starts n redis-server processes in cluster mode on free
// loopback ports (no persistence, cluster-node-timeout 1000 ms), makes them
// a cluster with a replica per primary (redis-cli --cluster create) and
// waits until every node reports cluster_state:ok. The processes are
// killed when t ends; their logs are printed if t failed (or whenever
// LATCH_FAILOVER_LOGS is set). Without redis-server the test is skipped,
// or fails under LATCH_REQUIRE_BACKENDS.
func startCluster(t *testing.T, n int) []*clusterNode {
	t.Helper()
	server, err1 := exec.LookPath("redis-server")
	cli, err2 := exec.LookPath("redis-cli")
	if err := errors.Join(err1, err2); err != nil {
		if os.Getenv(testdb.RequireEnv) != "" {
			t.Fatalf("%s is set, but the failover test needs redis-server and redis-cli: %v", testdb.RequireEnv, err)
		}
		t.Skipf("SKIP: the failover test needs redis-server and redis-cli: %v", err)
	}
	dir := t.TempDir()
	t.Cleanup(func() { // registered first: runs after the nodes are killed
		if !t.Failed() && os.Getenv("LATCH_FAILOVER_LOGS") == "" {
			return
		}
		logs, _ := filepath.Glob(filepath.Join(dir, "*", "redis.log"))
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			t.Logf("node %s:\n%s", filepath.Base(filepath.Dir(l)), b)
		}
	})
	nodes := make([]*clusterNode, n)
	for i := range nodes {
		port := clusterPort(t)
		// A directory per node: a replica's full sync goes through its
		// dump.rdb, which nodes sharing a directory would overwrite.
		nodeDir := filepath.Join(dir, strconv.Itoa(port))
		if err := os.Mkdir(nodeDir, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(server, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(nodeDir, "nodes.conf"),
			"--cluster-node-timeout", "1000", "--save", "", "--appendonly", "no", "--dir", nodeDir,
			"--repl-diskless-sync-delay", "0", "--logfile", filepath.Join(nodeDir, "redis.log"))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		node := &clusterNode{addr: "127.0.0.1:" + strconv.Itoa(port), cmd: cmd}
		node.rdb = goredis.NewClient(&goredis.Options{Addr: node.addr})
		nodes[i] = node
		t.Cleanup(func() {
			node.rdb.Close()
			if node.cmd != nil {
				_ = node.cmd.Process.Kill()
				_ = node.cmd.Wait()
			}
		})
	}
	ctx := t.Context()
	for _, node := range nodes {
		waitFor(t, 10*time.Second, node.addr+" answers", func() bool { return node.rdb.Ping(ctx).Err() == nil })
	}
	args := []string{"--cluster", "create"}
	for _, node := range nodes {
		args = append(args, node.addr)
	}
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	for _, node := range nodes {
		waitFor(t, 20*time.Second, node.addr+" reports cluster_state:ok", func() bool { return clusterOK(ctx, node.rdb) })
	}
	// Every replica has made its first full sync: until then it has
	// nothing to fail over with.
	for _, node := range nodes {
		waitFor(t, 20*time.Second, node.addr+" is a primary or a replica in sync", func() bool {
			info, err := node.rdb.Info(ctx, "replication").Result()
			return err == nil && (strings.Contains(info, "role:master") || strings.Contains(info, "master_link_status:up"))
		})
	}
	return nodes
}

// clusterPort returns a free loopback port whose cluster bus port (+10000)
// is free too.
func clusterPort(t *testing.T) int {
	t.Helper()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if port+10000 > 65535 {
			continue
		}
		bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000))
		if err != nil {
			continue
		}
		bus.Close()
		return port
	}
	t.Fatal("no free port with a free cluster bus port")
	return 0
}

func clusterOK(ctx context.Context, rdb *goredis.Client) bool {
	info, err := rdb.ClusterInfo(ctx).Result()
	return err == nil && strings.Contains(info, "cluster_state:ok")
}

func nodeByAddr(t *testing.T, nodes []*clusterNode, addr string) *clusterNode {
	t.Helper()
	for _, n := range nodes {
		if n.addr == addr {
			return n
		}
	}
	t.Fatalf("no node %s", addr)
	return nil
}

// replicaOf returns the node that replicates primary (ROLE).
func replicaOf(t *testing.T, ctx context.Context, nodes []*clusterNode, primary *clusterNode) *clusterNode {
	t.Helper()
	_, port, _ := net.SplitHostPort(primary.addr)
	for _, n := range nodes {
		role, err := n.rdb.Do(ctx, "ROLE").Slice()
		if err != nil {
			t.Fatal(err)
		}
		if len(role) >= 3 && role[0] == "slave" && fmt.Sprint(role[2]) == port {
			return n
		}
	}
	t.Fatalf("no replica of %s", primary.addr)
	return nil
}

// waitPromoted waits until replica is a primary and reports
// cluster_state:ok: the cluster has failed over. (Polled: the cluster
// announces a failover to its nodes, not to a client.)
func waitPromoted(t *testing.T, ctx context.Context, replica *clusterNode, within time.Duration) {
	t.Helper()
	waitFor(t, within, replica.addr+" promoted", func() bool {
		role, err := replica.rdb.Do(ctx, "ROLE").Slice()
		return err == nil && len(role) > 0 && role[0] == "master" && clusterOK(ctx, replica.rdb)
	})
}

// waitFor polls cond every 20 ms until it holds, failing t after within:
// for the state of redis-server processes, which send no event.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
