package redis_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// TestRouterFairOrderMatchesClaimLua: the cross-tenant fair order is
// written twice, in claim.lua for one namespace (turns) and in the
// router's Claim (router_claim.go, shardTurns over the tenants'
// namespaces). Random histories of tenant creations, admissions (random
// priorities and kinds) and claims of random size (for every tenant or
// one, some excluding a tenant, some filtered by kind), played alike on a
// Store of Open's and on the router, must lease the same executions in
// the same order at every claim.
func TestRouterFairOrderMatchesClaimLua(t *testing.T) {
	single := redisURL(t)
	cluster := clusterURL(t)
	seeds := 8
	if testing.Short() {
		seeds = 2
	}
	for seed := range seeds {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			s := open(t, single, newPrefix(t, single))
			defer s.Close()
			r := openRouter(t, cluster, newClusterPrefix(t, cluster))
			defer r.Close()
			playFairHistory(t, rand.New(rand.NewPCG(uint64(seed), 27)), s, r)
		})
	}
}

func playFairHistory(t *testing.T, rng *rand.Rand, a, b store.Store) {
	t.Helper()
	ctx := context.Background()
	base := time.Date(2031, time.March, 14, 9, 0, 0, 0, time.UTC)
	var tenants []string
	kinds := []string{"echo", "resize"}
	both := func(step int, fn func(s store.Store) error) {
		for _, s := range []store.Store{a, b} {
			if err := fn(s); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		}
	}
	// leased lists a claim's leases as tenant/payload.
	leased := func(res *store.ClaimResult) []string {
		var out []string
		for _, l := range res.Leases {
			out = append(out, l.Tenant+"/"+string(l.Payload))
		}
		return out
	}
	n := 0
	for step := range 80 {
		switch op := rng.IntN(10); {
		case op < 2 || len(tenants) == 0:
			if len(tenants) == 6 {
				continue
			}
			// Names not in creation order, so that name order (which
			// breaks ties of turns) and creation order differ.
			name := fmt.Sprintf("t%d", rng.IntN(1000))
			if slices.Contains(tenants, name) {
				continue
			}
			tenants = append(tenants, name)
			both(step, func(s store.Store) error {
				_, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: name, Now: base})
				return err
			})
		case op < 6:
			tn := tenants[rng.IntN(len(tenants))]
			var subs []store.Submission
			for range 1 + rng.IntN(5) {
				n++
				subs = append(subs, store.Submission{Kind: kinds[rng.IntN(2)], Payload: fmt.Appendf(nil, `{"n":%d}`, n), Priority: rng.IntN(3)})
			}
			both(step, func(s store.Store) error {
				_, err := s.Admit(ctx, &store.AdmitParams{Tenant: tn, Items: subs, Now: base})
				return err
			})
		default:
			p := store.ClaimParams{WorkerID: "w", Max: 1 + rng.IntN(8), Now: base}
			if rng.IntN(4) == 0 {
				p.Max = 100 // drain: tenants leave the turns and come back later
			}
			switch rng.IntN(10) {
			case 0, 1:
				p.ExcludeTenants = []string{tenants[rng.IntN(len(tenants))]}
			case 2:
				p.Tenant = tenants[rng.IntN(len(tenants))] // a claim for one tenant moves its turn
			case 3, 4:
				p.Kinds = kinds[rng.IntN(2):][:1]
			}
			var got [2][]string
			for i, s := range []store.Store{a, b} {
				pi := p
				res, err := s.Claim(ctx, &pi)
				if err != nil {
					t.Fatalf("step %d: claim: %v", step, err)
				}
				got[i] = leased(res)
			}
			if !slices.Equal(got[0], got[1]) {
				t.Fatalf("step %d: claim %+v leased\n  claim.lua: %v\n  router:    %v", step, p, got[0], got[1])
			}
		}
	}
}
