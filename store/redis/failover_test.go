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
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/redis"
)

// TestClusterFailover kills the primary that holds a tenant's executions,
// on a Redis Cluster of the test's own (three primaries, a replica each,
// started here on free ports: the shared test cluster is never disturbed),
// while two tenant routers (two servers) are open on the namespace (its
// home may be on that primary or another), and makes the
// failover lose acknowledged changes, every time: once the replica has
// applied everything up to a point (its replication offset reaches the
// primary's), it is stopped (SIGSTOP) and its replication link closed on
// the primary (CLIENT KILL TYPE replica), so the changes the Stores then
// make reach the primary's memory and its backlog only; the primary is
// killed (SIGKILL), the replica continued (SIGCONT) and promoted without
// them (cluster-replica-validity-factor 0). The nodes are found by the keys
// the Store wrote (SCAN of each primary), never by the namespace's slot.
// It asserts:
//
//   - synced: every change the replica had applied is there after the
//     failover: the tenant, its API keys, the queued executions, the
//     leases (their tokens still complete them), the completed ones, the
//     dedup keys;
//   - lost: every change acknowledged after the link was closed is gone,
//     all of it, and the namespace is what it was before them (its
//     indexes, quota counters and dedup mappings agree with its
//     executions): a submit (Get answers ErrNotFound; its dedup key maps to
//     nothing, so resubmitting creates a new execution), completions (the
//     execution is running again under the same lease: the worker's token
//     completes it, or the lease expires and Rescue queues it again, after
//     which the old token is refused), a claim (the execution is queued
//     again and claimed anew, while the lost lease's worker may still run
//     it: its token is refused), a tenant's setting, an API key added (it
//     is refused) and one revoked (it is accepted again) — each lost when
//     its key was on that primary, kept otherwise;
//   - nothing is started twice but what a lost change left to do: draining
//     the queue after the failover claims each execution once, and never
//     one whose completion survived;
//   - the same Stores carry on without reopening: once the replica is
//     promoted their calls succeed again (until then they fail with
//     store.ErrUnavailable, nothing else), new work is submitted, claimed
//     and completed, and a change through one Store wakes the other (its
//     subscription moved to the new primary).
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
	get := func(id string) *store.Execution {
		t.Helper()
		e, err := a.Get(ctx, &store.GetParams{ID: id})
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	complete := func(s *redis.Router, l store.Lease) error {
		_, err := s.Complete(ctx, &store.CompleteParams{ExecutionID: l.ExecutionID, Token: l.Token})
		return err
	}

	// Synced: a tenant and two API keys, ten executions (five with dedup
	// keys), six leased, three of those completed.
	if _, err := a.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", MaxInflight: 1000}); err != nil {
		t.Fatal(err)
	}
	for i, h := range []string{"synced-key-hash", "revoked-key-hash"} {
		if err := a.AddAPIKey(ctx, &store.AddAPIKeyParams{Tenant: "acme", KeyHash: h, KeyID: "k" + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
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
		if err := complete(a, l); err != nil {
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

	// The primary that holds the tenant's executions (where the Store wrote
	// one of them), and its replica.
	prim := primaries(t, ctx, nodes)
	primary := primaryHolding(t, ctx, prim, "exec:"+synced[0])
	replica := replicaOf(t, ctx, nodes, primary)
	t.Logf("execution %s on primary %s, replica %s", synced[0], primary.addr, replica.addr)
	// Where the tenant's hash and an API key are: on the killed primary
	// their changes below are lost, elsewhere they are kept.
	// The tenant's hash in its own namespace ({prefix/acme}), not the home's
	// creation record.
	tenantOnPrimary := primaryHolding(t, ctx, prim, "/acme}:tenant:acme") == primary
	revokedOnPrimary := primaryHolding(t, ctx, prim, "apikey:revoked-key-hash") == primary

	// The replica has applied every change so far: its offset in the
	// replication stream (one ordered stream) reaches the primary's.
	synced1 := replOffset(t, ctx, primary, "master_repl_offset")
	waitFor(t, 10*time.Second, "the replica applies the primary's changes", func() bool {
		return replOffset(t, ctx, replica, "slave_repl_offset") >= synced1
	})

	// Cut the replica off: stopped, it cannot reconnect, and the primary
	// sends it nothing more, so what follows is acknowledged by the
	// primary alone. (Stopped for milliseconds, well under
	// cluster-node-timeout; a stop of 2.5 s was tried too: the replica is
	// then flagged failing until it answers again, and promoted all the
	// same.)
	replica.signal(t, syscall.SIGSTOP)
	stopped := time.Now()
	if n, err := primary.rdb.ClientKillByFilter(ctx, "TYPE", "replica").Result(); err != nil || n != 1 {
		t.Fatalf("CLIENT KILL TYPE replica: %d, %v; want 1 link closed", n, err)
	}

	// Lost: each change acknowledged by the Stores.
	lostSub := admitOne(t, a, store.Submission{Kind: "echo", DedupKey: "lost-submit"})
	for _, l := range leases[3:5] { // 3 is redone by its worker, 4 left to Rescue
		if err := complete(b, l); err != nil {
			t.Fatal(err)
		}
	}
	lostClaim, err := b.Claim(ctx, &store.ClaimParams{WorkerID: "w-lost", Max: 1, LeaseDuration: time.Hour})
	if err != nil || len(lostClaim.Leases) != 1 {
		t.Fatalf("claim: %v, %d leases, want 1", err, len(lostClaim.Leases))
	}
	lostLease := lostClaim.Leases[0]
	if want[lostLease.ExecutionID] != store.StatusQueued {
		t.Fatalf("claimed %s, not one of the queued executions", lostLease.ExecutionID)
	}
	five := 5
	if _, err := a.UpdateTenant(ctx, &store.UpdateTenantParams{Name: "acme", MaxInflight: &five}); err != nil {
		t.Fatal(err)
	}
	if err := a.AddAPIKey(ctx, &store.AddAPIKeyParams{Tenant: "acme", KeyHash: "lost-key-hash", KeyID: "k9"}); err != nil {
		t.Fatal(err)
	}
	keyOnPrimary := primaryHolding(t, ctx, prim, "apikey:lost-key-hash") == primary
	if err := a.DeleteAPIKey(ctx, &store.DeleteAPIKeyParams{Tenant: "acme", KeyID: "k1"}); err != nil {
		t.Fatal(err)
	}
	acked := replOffset(t, ctx, primary, "master_repl_offset")

	primary.kill(t)
	replica.signal(t, syscall.SIGCONT)
	start := time.Now()
	t.Logf("replica stopped %v; the primary acknowledged up to offset %d, the replica applied %d; the tenant's key on that primary: %v, the API keys': %v %v",
		start.Sub(stopped).Round(time.Millisecond), acked, synced1, tenantOnPrimary, keyOnPrimary, revokedOnPrimary)
	waitPromoted(t, ctx, replica, 20*time.Second)
	t.Logf("replica %s promoted %v after the primary's SIGKILL", replica.addr, time.Since(start).Round(time.Millisecond))
	if got := replOffset(t, ctx, replica, "master_repl_offset"); got >= acked {
		t.Fatalf("the promoted replica is at offset %d, the killed primary acknowledged up to %d: nothing was lost", got, acked)
	}

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

	// Synced: all there. Lost: all gone, and the rest agrees.
	for id, st := range want {
		if e := get(id); e == nil || e.Status != st {
			t.Errorf("synced execution %s: %+v after the failover, want %s", id, e, st)
		}
	}
	if e := get(lostSub.ID); e != nil {
		t.Errorf("lost submit %s: %s after the failover, want not found", lostSub.ID, e.Status)
	}
	for _, l := range leases[3:5] {
		if e := get(l.ExecutionID); e == nil || e.Status != store.StatusRunning || e.Attempt != 1 || e.WorkerID != "w1" {
			t.Errorf("lost complete of %s: %+v after the failover, want running, attempt 1, under w1's lease", l.ExecutionID, e)
		}
	}
	if e := get(lostLease.ExecutionID); e == nil || e.Status != store.StatusQueued || e.Attempt != 0 {
		t.Errorf("lost claim of %s: %+v after the failover, want queued, attempt 0", lostLease.ExecutionID, e)
	}
	ten, err := a.GetTenant(ctx, &store.GetTenantParams{Name: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	// In flight: 4 queued (the lost claim's one again) and 3 running.
	if wantMax := map[bool]int{true: 1000, false: 5}[tenantOnPrimary]; ten.MaxInflight != wantMax || ten.Inflight != 7 {
		t.Errorf("tenant after the failover: max_inflight %d inflight %d, want %d and 7 (its key on the killed primary: %v)",
			ten.MaxInflight, ten.Inflight, wantMax, tenantOnPrimary)
	}
	if _, err := a.LookupAPIKey(ctx, &store.LookupAPIKeyParams{KeyHash: "synced-key-hash"}); err != nil {
		t.Errorf("synced API key: %v", err)
	}
	if _, err := a.LookupAPIKey(ctx, &store.LookupAPIKeyParams{KeyHash: "lost-key-hash"}); errors.Is(err, store.ErrNotFound) != keyOnPrimary {
		t.Errorf("API key added after the link closed: %v after the failover, its key on the killed primary: %v", err, keyOnPrimary)
	}
	// A lost revocation: the revoked key is accepted again.
	if _, err := a.LookupAPIKey(ctx, &store.LookupAPIKeyParams{KeyHash: "revoked-key-hash"}); (err == nil) != revokedOnPrimary {
		t.Errorf("API key revoked after the link closed: %v after the failover, its key on the killed primary: %v", err, revokedOnPrimary)
	}
	redis.CheckRouterConsistency(t, a)

	// What a user does then. A lost submit is resubmitted under its dedup
	// key: the key maps to nothing, so it is a new execution. The synced
	// dedup keys still name their executions (exactly once on what
	// survived).
	resub, err := b.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: []store.Submission{{Kind: "echo", DedupKey: "lost-submit"}}})
	if err != nil || resub.Items[0].Err != nil {
		t.Fatalf("resubmit: %v %+v", err, resub)
	}
	if r := resub.Items[0]; r.Deduplicated || r.Execution.ID == lostSub.ID || get(r.Execution.ID) == nil {
		t.Errorf("resubmit of the lost submit: %+v, want a new execution", r)
	}
	for i := 0; i < 10; i += 2 {
		if e := admitOne(t, b, store.Submission{Kind: "echo", DedupKey: "synced-" + strconv.Itoa(i)}); e.ID != synced[i] {
			t.Errorf("dedup key synced-%d names %s after the failover, want %s", i, e.ID, synced[i])
		}
	}
	// The lost claim's lease is no lease: its worker's heartbeat and
	// completion are refused.
	if _, err := a.Heartbeat(ctx, &store.HeartbeatParams{ExecutionID: lostLease.ExecutionID, Token: lostLease.Token}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("heartbeat of the lost claim's lease: %v, want ErrLeaseLost", err)
	}
	if err := complete(a, lostLease); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("complete of the lost claim's lease: %v, want ErrLeaseLost", err)
	}
	// A lost completion is redone by its worker with the same token...
	if err := complete(a, leases[3]); err != nil {
		t.Errorf("complete %s again with its lease's token: %v", leases[3].ExecutionID, err)
	}
	// ...or, its worker gone, the lease expires and Rescue queues the
	// execution again (with the lease never completed, leases[5]); nothing
	// else was running.
	later := time.Now().Add(2 * time.Hour)
	res, err := a.Rescue(ctx, &store.RescueParams{Now: later})
	if err != nil || res.Requeued != 2 || res.Failed+res.Cancelled != 0 {
		t.Errorf("rescue: %+v %v, want 2 requeued", res, err)
	}
	for _, l := range leases[4:6] {
		if e := get(l.ExecutionID); e == nil || e.Status != store.StatusQueued || e.Attempt != 1 {
			t.Errorf("rescued %s: %+v, want queued after attempt 1", l.ExecutionID, e)
		}
		if err := complete(a, l); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("complete %s with its rescued lease's token: %v, want ErrLeaseLost", l.ExecutionID, err)
		}
	}

	// Carry on: new work, and a drain that claims each execution once:
	// the queued synced ones (the lost claim's among them), the rescued
	// ones, the resubmit and the new ones; never one that completed.
	for range 5 {
		admitOne(t, b, store.Submission{Kind: "echo"})
	}
	started := map[string]int{}
	for {
		res, err := b.Claim(ctx, &store.ClaimParams{WorkerID: "w2", Max: 50, LeaseDuration: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Leases) == 0 {
			break
		}
		for _, l := range res.Leases {
			started[l.ExecutionID]++
			if err := complete(b, l); err != nil {
				t.Fatal(err)
			}
		}
	}
	for id, n := range started {
		if n != 1 || want[id] == store.StatusSucceeded || id == leases[3].ExecutionID {
			t.Errorf("the drain started %s %d times (before it: %s)", id, n, want[id])
		}
	}
	for _, id := range []string{lostLease.ExecutionID, leases[4].ExecutionID, leases[5].ExecutionID, resub.Items[0].Execution.ID} {
		if started[id] != 1 {
			t.Errorf("the drain did not start %s", id)
		}
	}
	// 4 synced queued + 2 rescued + the resubmit + 5 new.
	if len(started) != 4+2+1+5 {
		t.Errorf("claimed and completed %d after the failover, want 12", len(started))
	}
	if ten, err := a.GetTenant(ctx, &store.GetTenantParams{Name: "acme"}); err != nil || ten.Inflight != 0 {
		t.Errorf("tenant after the drain: %+v %v, want inflight 0", ten, err)
	}
	redis.CheckRouterConsistency(t, a)

	// Changes through one Store wake the other again: its subscription
	// found the new primary (and the version counter, which went back with
	// the lost changes, wakes it all the same).
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

// signal sends sig (SIGSTOP, SIGCONT) to the node's process.
func (n *clusterNode) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := n.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// startCluster starts n redis-server processes in cluster mode on free
// loopback ports (no persistence, cluster-node-timeout 1000 ms, a replica
// may be promoted however long its link was down), makes them
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
			"--cluster-node-timeout", "1000", "--cluster-replica-validity-factor", "0", "--save", "", "--appendonly", "no", "--dir", nodeDir,
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

// primaries returns the nodes that are primaries (ROLE).
func primaries(t *testing.T, ctx context.Context, nodes []*clusterNode) []*clusterNode {
	t.Helper()
	var out []*clusterNode
	for _, n := range nodes {
		role, err := n.rdb.Do(ctx, "ROLE").Slice()
		if err != nil {
			t.Fatal(err)
		}
		if len(role) > 0 && role[0] == "master" {
			out = append(out, n)
		}
	}
	return out
}

// primaryHolding returns the one of primaries that has a key ending with
// name (SCAN): the node a Store wrote that key on. It fails t unless
// exactly one primary has such a key.
func primaryHolding(t *testing.T, ctx context.Context, primaries []*clusterNode, name string) *clusterNode {
	t.Helper()
	var found []*clusterNode
	for _, n := range primaries {
		iter := n.rdb.Scan(ctx, 0, "*"+name, 1000).Iterator()
		if iter.Next(ctx) {
			found = append(found, n)
		}
		if err := iter.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d primaries hold a key ending with %q, want 1", len(found), name)
	}
	return found[0]
}

// replOffset returns field (master_repl_offset, slave_repl_offset) of the
// node's INFO replication: its position in the replication stream.
func replOffset(t *testing.T, ctx context.Context, n *clusterNode, field string) int64 {
	t.Helper()
	info, err := n.rdb.Info(ctx, "replication").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			off, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return off
		}
	}
	t.Fatalf("%s: no %s in INFO replication", n.addr, field)
	return 0
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
