package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testClaimExclude covers ClaimParams.ExcludeTenants: a claim never leases
// an excluded tenant's executions, leaves them as they were (no run, no
// attempt, no run_at, no rate token, no turn), and serves the other tenants
// as fairly as if the excluded one had no work.
func testClaimExclude(t *testing.T, ns NewStore) {
	t.Run("SkipsExcludedTenants", func(t *testing.T) {
		e := startEmpty(t, ns)
		for _, n := range []string{acme, globex, initech} {
			e.createTenant(store.CreateTenantParams{Name: n})
		}
		// acme's work is the oldest: queued, scheduled and due, and one
		// limited by a rate key whose bucket has one token; initech's
		// second execution carries a concurrency key (a limited candidate,
		// decided under its lock where a backend does so).
		e.putRateLimit(acme, "r", 1, time.Hour, 1, at(0))
		var acmes []*store.Execution
		for i := range 3 {
			acmes = append(acmes, e.submit(acme, at(time.Duration(i)*time.Millisecond), job(fmt.Sprintf("a%d", i))))
		}
		later := job("a-due")
		later.RunAt = at(time.Second)
		acmes = append(acmes, e.submit(acme, at(0), later))
		rated := job("a-rated")
		rated.RateKey = "r"
		acmes = append(acmes, e.submit(acme, at(3*time.Millisecond), rated))
		for i := range 2 {
			e.submit(globex, at(time.Minute+time.Duration(i)*time.Millisecond), job(fmt.Sprintf("g%d", i)))
			sub := job(fmt.Sprintf("i%d", i))
			if i == 1 {
				sub.ConcurrencyKey, sub.ConcurrencyLimit = "k", 1
			}
			e.submit(initech, at(time.Minute+time.Duration(i)*time.Millisecond), sub)
		}
		now := at(2 * time.Minute)
		var got []string
		for _, max := range []int{3, 10} {
			for _, l := range e.claim(store.ClaimParams{Max: max, Now: now, ExcludeTenants: []string{acme}}) {
				got = append(got, l.Kind)
			}
		}
		// Never served, globex and initech tie and take turns by name; the
		// second claim begins with initech, served least recently.
		if want := []string{"g0", "i0", "g1", "i1"}; !slices.Equal(got, want) {
			t.Errorf("claims excluding acme: got %v, want %v", got, want)
		}
		for _, x := range acmes {
			got := e.get(x.ID)
			if got.Status == store.StatusRunning || got.Attempt != 0 || !got.RunAt.Equal(x.RunAt) {
				t.Errorf("acme's %s after claims excluding acme: status %s attempt %d run_at %s, want untouched (attempt 0, run_at %s)",
					x.Kind, got.Status, got.Attempt, fmtTime(got.RunAt), fmtTime(x.RunAt))
			}
			runs, err := e.s.Runs(e.ctx, &store.RunsParams{Tenant: acme, ID: x.ID})
			e.must(err, "Runs")
			if len(runs) != 0 {
				t.Errorf("acme's %s has %d runs after claims excluding acme, want none", x.Kind, len(runs))
			}
		}
	})

	t.Run("ExcludedTenantKeepsItsTurnAndToken", func(t *testing.T) {
		e := startEmpty(t, ns)
		for _, n := range []string{acme, globex} {
			e.createTenant(store.CreateTenantParams{Name: n})
		}
		e.putRateLimit(acme, "r", 1, time.Hour, 1, at(0))
		rated := job("a-rated")
		rated.RateKey = "r"
		a := e.submit(acme, at(0), rated)
		for i := range 3 {
			e.submit(globex, at(time.Duration(i)*time.Millisecond), job(fmt.Sprintf("g%d", i)))
		}
		now := at(time.Second)
		for i := range 2 {
			ls := e.claim(store.ClaimParams{Max: 1, Now: now, ExcludeTenants: []string{acme, "nobody"}})
			if len(ls) != 1 || ls[0].Kind != fmt.Sprintf("g%d", i) {
				t.Fatalf("claim %d excluding acme: got %v, want globex's g%d", i+1, kinds(ls), i)
			}
		}
		// acme was never served while globex was twice: acme leads, and its
		// bucket still has the token the excluded claims did not take.
		ls := e.claim(store.ClaimParams{Max: 1, Now: now})
		if len(ls) != 1 || ls[0].ExecutionID != a.ID {
			t.Fatalf("claim without exclusions: got %v, want acme's rate-limited one", kinds(ls))
		}
		if ls[0].Attempt != 1 {
			t.Errorf("acme's first start: attempt %d, want 1", ls[0].Attempt)
		}
	})

	t.Run("ExcludedBacklogCostsNothing", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		backlog := make([]store.Submission, 500)
		for i := range backlog {
			backlog[i] = job("echo")
			backlog[i].Priority = 9
		}
		for range 2 {
			e.admit(acme, base, backlog...)
		}
		for i := range 3 {
			e.submit(globex, at(time.Duration(i)*time.Millisecond), job("echo"))
		}
		before, counts := int64(0), false
		if ex, ok := e.s.(ClaimExaminer); ok {
			before, counts = ex.ClaimExamined(), true
		}
		claims := 0
		for _, kinds := range [][]string{nil, {"echo"}, nil, {"echo"}} {
			ls := e.claim(store.ClaimParams{Kinds: kinds, Now: at(time.Minute), ExcludeTenants: []string{acme}})
			claims++
			if len(ls) > 0 && ls[0].Tenant != globex {
				t.Fatalf("claim excluding acme leased %s's %s", ls[0].Tenant, ls[0].ExecutionID)
			}
		}
		if counts {
			ex := e.s.(ClaimExaminer).ClaimExamined() - before
			if limit := int64(8 * claims); ex > limit {
				t.Errorf("%d claims excluding acme examined %d ready entries, want at most %d (acme's backlog of %d is not theirs to read)",
					claims, ex, limit, 2*len(backlog))
			}
		}
		e.wantInflight(acme, 2*len(backlog))
	})

	t.Run("OnlyExcludedWork", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme})
		x := e.submit(acme, at(0), job("a"))
		for _, p := range []store.ClaimParams{
			{Max: 5, Now: at(time.Second), ExcludeTenants: []string{acme}},
			{Max: 5, Now: at(time.Second), Tenant: acme, ExcludeTenants: []string{acme}},
			{Max: 5, Now: at(time.Second), Kinds: []string{"a"}, ExcludeTenants: []string{acme}},
		} {
			if ls := e.claim(p); len(ls) != 0 {
				t.Errorf("claim %+v: got %v, want nothing", p, kinds(ls))
			}
		}
		if got := e.wantStatus(x.ID, store.StatusQueued); got.Attempt != 0 {
			t.Errorf("attempt %d after claims excluding its tenant, want 0", got.Attempt)
		}
		e.claimOne(acme, at(time.Second))
	})

	t.Run("BadExclusionsAreRefused", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme})
		x := e.submit(acme, at(0), job("a"))
		many := make([]string, store.MaxExcludeTenants+1)
		for i := range many {
			many[i] = fmt.Sprintf("t%d", i)
		}
		for _, ex := range [][]string{many, {globex, ""}} {
			_, err := e.s.Claim(e.ctx, &store.ClaimParams{WorkerID: "w", Max: 1, Now: at(time.Second), ExcludeTenants: ex})
			if !errors.Is(err, store.ErrInvalid) {
				t.Errorf("claim excluding %d tenants (%q...): err %v, want ErrInvalid", len(ex), ex[0], err)
			}
		}
		e.wantStatus(x.ID, store.StatusQueued)
		// The bound itself is accepted.
		if ls := e.claim(store.ClaimParams{Max: 1, Now: at(time.Second), ExcludeTenants: many[:store.MaxExcludeTenants]}); len(ls) != 1 {
			t.Errorf("claim excluding %d other tenants: got %d leases, want acme's one", store.MaxExcludeTenants, len(ls))
		}
	})
}
