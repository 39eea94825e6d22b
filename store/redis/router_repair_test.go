package redis_test

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/redis"
)

func routerWithWork(t *testing.T, tenants ...string) (*redis.Router, time.Time) {
	t.Helper()
	url := clusterURL(t)
	r := openRouter(t, url, newClusterPrefix(t, url))
	t.Cleanup(func() { r.Close() })
	t0 := time.Now().Truncate(time.Second)
	for _, ten := range tenants {
		if _, err := r.CreateTenant(t.Context(), &store.CreateTenantParams{Name: ten, KeyHash: "h-" + ten}); err != nil {
			t.Fatal(err)
		}
		res, err := r.Admit(t.Context(), &store.AdmitParams{Tenant: ten, Now: t0, Items: []store.Submission{{Kind: "k"}, {Kind: "k"}}})
		if err != nil || res.Items[0].Err != nil {
			t.Fatalf("admit: %v %v", err, res)
		}
	}
	return r, t0
}

// TestRouterCancelledCallAsksNoRepair: a call that fails because its
// caller went away (an HTTP client that disconnected) does not set the
// router repairing every tenant's hints.
func TestRouterCancelledCallAsksNoRepair(t *testing.T) {
	r, t0 := routerWithWork(t, "acme")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, ten := range []string{"acme", ""} {
		if _, err := r.Claim(ctx, &store.ClaimParams{Tenant: ten, WorkerID: "w", Max: 1, LeaseDuration: time.Minute, Now: t0}); err == nil {
			t.Fatalf("claim (tenant %q) on a cancelled context succeeded", ten)
		}
	}
	if _, err := r.Complete(ctx, &store.CompleteParams{ExecutionID: "nope", Tenant: "acme", Token: "x", Now: t0}); err == nil {
		t.Fatal("complete on a cancelled context succeeded")
	}
	dctx, dcancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer dcancel()
	if _, err := r.Admit(dctx, &store.AdmitParams{Tenant: "acme", Now: t0, Items: []store.Submission{{Kind: "k"}}}); err == nil {
		t.Fatal("admit past its deadline succeeded")
	}
	if r.NeedsRepair() {
		t.Error("a cancelled or timed-out call asked for a hint repair")
	}
}

// TestRouterNoRepairInline: with a repair asked for and another in
// progress (holding the repair lock), Claim, Rescue, Promote, Wake and
// ListSchedules DueBy answer without waiting for it: none runs a repair
// inline.
func TestRouterNoRepairInline(t *testing.T) {
	r, t0 := routerWithWork(t, "acme", "beta")
	release := r.HoldRepair()
	defer release()
	r.AskRepair()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	c, err := r.Claim(ctx, &store.ClaimParams{WorkerID: "w", Max: 10, LeaseDuration: time.Minute, Now: t0})
	if err != nil || len(c.Leases) != 4 {
		t.Fatalf("claim with a repair in progress: %v %v", c, err)
	}
	if _, err := r.Rescue(ctx, &store.RescueParams{Now: t0, Limit: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Promote(ctx, &store.PromoteParams{Now: t0, Limit: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wake(ctx, &store.WakeParams{Now: t0, Limit: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ListSchedules(ctx, &store.ListSchedulesParams{DueBy: t0, Limit: 10}); err != nil {
		t.Fatal(err)
	}
}

// TestRouterPeriodicRepairBoundsLostHints (H1): a process that crashed
// after claim.lua committed its leases but before it wrote their rescue
// hint (here: the hint removed) loses no work for long: every running
// router repairs every tenant's hints about every 10 s, with no error seen
// and no Prune, and the expired leases are then rescued.
func TestRouterPeriodicRepairBoundsLostHints(t *testing.T) {
	r, t0 := routerWithWork(t, "acme")
	ctx := t.Context()
	c, err := r.Claim(ctx, &store.ClaimParams{Tenant: "acme", WorkerID: "w", Max: 2, LeaseDuration: time.Second, Now: t0})
	if err != nil || len(c.Leases) != 2 {
		t.Fatalf("claim: %v %v", c, err)
	}
	if err := r.RawClient().ZRem(ctx, r.HintKey("rescue"), "acme").Err(); err != nil {
		t.Fatal(err)
	}
	later := t0.Add(time.Minute)
	if res, err := r.Rescue(ctx, &store.RescueParams{Now: later, Limit: 10}); err != nil || res.Requeued != 0 {
		t.Fatalf("rescue without the hint: %+v %v, want nothing (the hint is what names the tenant)", res, err)
	}
	start := time.Now()
	for {
		if _, err := r.RawClient().ZScore(ctx, r.HintKey("rescue"), "acme").Result(); err == nil {
			break
		}
		if time.Since(start) > 15*time.Second {
			t.Fatal("the lost rescue hint was not repaired within 15 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("repaired after %v", time.Since(start).Round(100*time.Millisecond))
	if res, err := r.Rescue(ctx, &store.RescueParams{Now: later, Limit: 10}); err != nil || res.Requeued != 2 {
		t.Fatalf("rescue after the repair: %+v %v, want both expired leases requeued", res, err)
	}
}

// refuseRepairReads makes every pipeline that reads a hint's count of
// lowerings (the repair's first step) fail as an unreachable node does,
// and counts them: one a repair.
type refuseRepairReads struct{ n *atomic.Int64 }

func (h refuseRepairReads) DialHook(next goredis.DialHook) goredis.DialHook { return next }
func (h refuseRepairReads) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return next
}

func (h refuseRepairReads) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		for _, c := range cmds {
			if k, _ := c.Args()[len(c.Args())-1].(string); c.Name() == "get" && strings.Contains(k, ":shard:gen:") {
				h.n.Add(1)
				err := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
				for _, c := range cmds {
					c.SetErr(err)
				}
				return err
			}
		}
		return next(ctx, cmds)
	}
}

// TestRouterRepairPausesWhileFailing: while a node is out of reach the
// hint repair fails, and its own failed calls ask for another repair at
// once; it must still wait its second between attempts rather than spin
// (before, 100,000 repairs in 3 s).
func TestRouterRepairPausesWhileFailing(t *testing.T) {
	url := clusterURL(t)
	r := openRouter(t, url, newClusterPrefix(t, url))
	if _, err := r.CreateTenant(t.Context(), &store.CreateTenantParams{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	r.HomeCluster().AddHook(refuseRepairReads{&n})
	r.AskRepair()
	time.Sleep(3 * time.Second)
	if got := n.Load(); got < 1 || got > 6 {
		t.Fatalf("%d repairs in 3 s while failing, want 1 to 6 (one a second)", got)
	}
}
