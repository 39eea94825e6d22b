package redis_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/store"
)

// countHook counts the commands of some names a client sends.
type countHook struct {
	names map[string]bool
	n     atomic.Int64
}

func (h *countHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }
func (h *countHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if h.names[cmd.Name()] {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (h *countHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		for _, c := range cmds {
			if h.names[c.Name()] {
				h.n.Add(1)
			}
		}
		return next(ctx, cmds)
	}
}

// TestRouterTokenNamesTenant (B3): the router's lease tokens carry their
// tenant ("<tenant>.<token>"), so an admin's lease calls, which name no
// tenant, go straight to the tenant's namespace: no SMEMBERS of the
// registry, no EXISTS over the tenants. A token naming another tenant than
// the call, or none, is a wrong token (ErrLeaseLost).
func TestRouterTokenNamesTenant(t *testing.T) {
	r, t0 := routerWithWork(t, "acme", "beta", "gamma")
	ctx := t.Context()
	c, err := r.Claim(ctx, &store.ClaimParams{WorkerID: "w", Max: 6, LeaseDuration: time.Minute, Now: t0})
	if err != nil || len(c.Leases) != 6 {
		t.Fatalf("claim: %v %v", c, err)
	}
	for _, l := range c.Leases {
		if !strings.HasPrefix(l.Token, l.Tenant+".") {
			t.Fatalf("lease token %q does not name its tenant %s", l.Token, l.Tenant)
		}
	}
	one, err := r.Claim(ctx, &store.ClaimParams{Tenant: "acme", WorkerID: "w", Max: 1, LeaseDuration: time.Minute, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Leases) != 0 {
		t.Fatalf("acme had two executions, both leased: got %v", one.Leases)
	}

	hook := &countHook{names: map[string]bool{"smembers": true, "exists": true}}
	r.RawClient().AddHook(hook)
	l0, l1, l2 := c.Leases[0], c.Leases[1], c.Leases[2]
	if _, err := r.Heartbeat(ctx, &store.HeartbeatParams{ExecutionID: l0.ExecutionID, Token: l0.Token, LeaseDuration: time.Minute, Now: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.RecordStep(ctx, &store.RecordStepParams{ExecutionID: l0.ExecutionID, Token: l0.Token, Name: "s", Result: []byte("1"), Now: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Complete(ctx, &store.CompleteParams{ExecutionID: l0.ExecutionID, Token: l0.Token, Now: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Fail(ctx, &store.FailParams{ExecutionID: l1.ExecutionID, Token: l1.Token, Error: "x", Retry: true, Now: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Release(ctx, &store.ReleaseParams{ExecutionID: l2.ExecutionID, Token: l2.Token, Now: t0}); err != nil {
		t.Fatal(err)
	}
	l3 := c.Leases[3]
	if _, err := r.Suspend(ctx, &store.SuspendParams{ExecutionID: l3.ExecutionID, Token: l3.Token, Step: "nap", Until: t0.Add(time.Hour), Now: t0}); err != nil {
		t.Fatal(err)
	}
	if n := hook.n.Load(); n != 0 {
		t.Errorf("an admin's six lease calls sent %d SMEMBERS/EXISTS, want none (no fan-out over the tenants)", n)
	}

	// Wrong tenants and tokens that name none are wrong tokens.
	l4 := c.Leases[4]
	other := "acme"
	if l4.Tenant == "acme" {
		other = "beta"
	}
	_, bare, _ := strings.Cut(l4.Token, ".")
	for _, bad := range []struct{ tenant, token string }{
		{other, l4.Token}, {"", bare}, {"", ""}, {"", other + "." + bare}, {"", "."}, {"", "Acme." + bare},
	} {
		_, err := r.Heartbeat(ctx, &store.HeartbeatParams{ExecutionID: l4.ExecutionID, Tenant: bad.tenant, Token: bad.token, LeaseDuration: time.Minute, Now: t0})
		if !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("heartbeat as %q with token %q: %v, want ErrLeaseLost", bad.tenant, bad.token, err)
		}
		_, err = r.Complete(ctx, &store.CompleteParams{ExecutionID: l4.ExecutionID, Tenant: bad.tenant, Token: bad.token, Now: t0})
		if !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("complete as %q with token %q: %v, want ErrLeaseLost", bad.tenant, bad.token, err)
		}
	}
	// ... and the right one still holds the lease, named or not.
	if _, err := r.Complete(ctx, &store.CompleteParams{ExecutionID: l4.ExecutionID, Tenant: l4.Tenant, Token: l4.Token, Now: t0}); err != nil {
		t.Fatal(err)
	}
}

// TestRouterShortenedLeaseIsRescued: a heartbeat may give a lease a
// shorter duration than its claim did; the tenant's rescue hint follows
// it down, so Rescue finds the lease once it expires (the hint of the
// claim's longer lease hid it: found by TestProperty).
func TestRouterShortenedLeaseIsRescued(t *testing.T) {
	r, t0 := routerWithWork(t, "acme")
	ctx := t.Context()
	c, err := r.Claim(ctx, &store.ClaimParams{Tenant: "acme", WorkerID: "w", Max: 1, LeaseDuration: 45 * time.Second, Now: t0})
	if err != nil || len(c.Leases) != 1 {
		t.Fatalf("claim: %v %v", c, err)
	}
	l := c.Leases[0]
	if _, err := r.Heartbeat(ctx, &store.HeartbeatParams{ExecutionID: l.ExecutionID, Token: l.Token,
		LeaseDuration: 10 * time.Second, Now: t0}); err != nil {
		t.Fatal(err)
	}
	res, err := r.Rescue(ctx, &store.RescueParams{Now: t0.Add(30 * time.Second)})
	if err != nil || res.Requeued != 1 {
		t.Fatalf("rescue after the shortened lease expired: %+v, %v; want 1 requeued", res, err)
	}
}
