package redis_test

import (
	"context"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// TestRouterClaimKeepsHintOfBacklog: tenants whose only ready work is of a
// kind no claim takes cost a claim filtered to another kind one script
// call each (their lanes of the claim's kinds are empty), and no re-derive
// of their claim hint: they still have ready work, so the hint stays. (A
// re-derive is three round trips to the home node, one tenant after the
// other: 30 such tenants cost each claim ~90.)
func TestRouterClaimKeepsHintOfBacklog(t *testing.T) {
	url := clusterURL(t)
	r := openRouter(t, url, newClusterPrefix(t, url))
	defer r.Close()
	ctx := context.Background()
	base := time.Date(2031, time.March, 14, 9, 0, 0, 0, time.UTC)
	tenants := []string{"acme", "globex", "initech", "umbrella"}
	for i, tn := range tenants {
		if _, err := r.CreateTenant(ctx, &store.CreateTenantParams{Name: tn, Now: base}); err != nil {
			t.Fatal(err)
		}
		kind := "nobody"
		if i == 0 {
			kind = "echo"
		}
		var subs []store.Submission
		for range 20 {
			subs = append(subs, store.Submission{Kind: kind, Payload: []byte(`{}`)})
		}
		if _, err := r.Admit(ctx, &store.AdmitParams{Tenant: tn, Items: subs, Now: base}); err != nil {
			t.Fatal(err)
		}
	}
	before := r.HintRefreshes()
	for i := range 10 {
		res, err := r.Claim(ctx, &store.ClaimParams{WorkerID: "w", Kinds: []string{"echo"}, Max: 1, Now: base})
		if err != nil || len(res.Leases) != 1 || res.Leases[0].Tenant != "acme" {
			t.Fatalf("claim %d: %+v, %v; want one of acme's echo", i, res, err)
		}
	}
	if n := r.HintRefreshes() - before; n != 0 {
		t.Errorf("10 claims re-derived %d claim hints of tenants with ready work left, want none", n)
	}
	// A tenant whose ready work is gone has its hint re-derived (and
	// dropped) by the claim that found it so.
	res, err := r.Claim(ctx, &store.ClaimParams{WorkerID: "w", Tenant: "globex", Max: 100, Now: base})
	if err != nil || len(res.Leases) != 20 {
		t.Fatalf("claim of globex's 20: %d, %v", len(res.Leases), err)
	}
	if n := r.HintRefreshes() - before; n != 1 {
		t.Errorf("the claim that emptied globex's queue re-derived %d hints, want 1", n)
	}
}
