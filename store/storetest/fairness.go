package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// initech is a third tenant the fairness tests create.
const initech = "initech"

// testFairness covers the claim order across tenants (I12): tenants with
// ready work take turns, least recently served first, one execution each per
// turn; priority orders only a tenant's own executions.
func testFairness(t *testing.T, ns NewStore) {
	prio := func(kind string, p int) store.Submission { s := job(kind); s.Priority = p; return s }

	t.Run("BacklogDoesNotHoldBackAnotherTenant", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme, MaxInflight: 20000})
		e.createTenant(store.CreateTenantParams{Name: globex})
		const backlog = 10000
		batch := make([]store.Submission, 500)
		for i := range batch {
			batch[i] = prio("big", 1000)
		}
		for range backlog / len(batch) {
			e.admit(acme, at(0), batch...)
		}
		// acme has been served before globex has anything to run.
		for range 3 {
			if l := e.claim(store.ClaimParams{Max: 1, Now: at(time.Second)}); len(l) != 1 || l[0].Tenant != acme {
				t.Fatalf("claim before globex submits: got %v, want one of acme's", tenants(l))
			}
		}
		small := e.submit(globex, at(2*time.Second), prio("small", -1000))
		ls := e.claim(store.ClaimParams{Max: 1, Now: at(3 * time.Second)})
		if len(ls) != 1 || ls[0].ExecutionID != small.ID {
			t.Fatalf("next claim after globex submitted behind acme's backlog of %d: got %v, want globex's one",
				backlog, tenants(ls))
		}
		if l := e.claim(store.ClaimParams{Max: 1, Now: at(3 * time.Second)}); len(l) != 1 || l[0].Tenant != acme {
			t.Errorf("claim after globex's: got %v, want acme's backlog again", tenants(l))
		}
		e.wantInflight(globex, 1)
	})

	t.Run("MaxInterleavesTenants", func(t *testing.T) {
		e := startEmpty(t, ns)
		for _, n := range []string{acme, globex, initech} {
			e.createTenant(store.CreateTenantParams{Name: n})
		}
		// acme's work is all older and of higher priority than the others'.
		for i := range 5 {
			e.submit(acme, at(time.Duration(i)*time.Millisecond), prio(fmt.Sprintf("a%d", i), 9))
		}
		for i := range 5 {
			e.submit(globex, at(time.Second+time.Duration(i)*time.Millisecond), prio(fmt.Sprintf("g%d", i), 0))
			e.submit(initech, at(time.Second+time.Duration(i)*time.Millisecond), prio(fmt.Sprintf("i%d", i), -5))
		}
		ls := e.claim(store.ClaimParams{Max: 7, Now: at(time.Minute)})
		// Never served, the three tie and take turns in name order.
		want := []string{"a0", "g0", "i0", "a1", "g1", "i1", "a2"}
		if got := kinds(ls); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Claim Max 7 over three tenants: got %v, want %v", got, want)
		}
		// acme was served last: globex and initech come first now.
		ls = e.claim(store.ClaimParams{Max: 4, Now: at(time.Minute)})
		want = []string{"g2", "i2", "a3", "g3"}
		if got := kinds(ls); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("next Claim Max 4: got %v, want %v", got, want)
		}
	})

	t.Run("TenantsTakeTurnsOverClaims", func(t *testing.T) {
		e := startEmpty(t, ns)
		for _, n := range []string{acme, globex, initech} {
			e.createTenant(store.CreateTenantParams{Name: n})
		}
		// Each tenant's executions come out in its own priority, then
		// run_at order, whatever the other tenants' priorities.
		e.submit(initech, at(0), prio("i-low", 1))
		e.submit(initech, at(1*time.Millisecond), prio("i-high", 7))
		e.submit(acme, at(2*time.Millisecond), prio("a-mid-old", 3))
		e.submit(acme, at(3*time.Millisecond), prio("a-mid-new", 3))
		e.submit(acme, at(4*time.Millisecond), prio("a-top", 50))
		e.submit(globex, at(5*time.Millisecond), prio("g-only", -50))
		var got []string
		for range 6 {
			ls := e.claim(store.ClaimParams{Max: 1, Now: at(time.Minute)})
			if len(ls) != 1 {
				t.Fatalf("claim %d: got %d leases, want 1", len(got)+1, len(ls))
			}
			got = append(got, ls[0].Kind)
		}
		want := []string{"a-top", "g-only", "i-high", "a-mid-old", "i-low", "a-mid-new"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("six claims of Max 1: got %v, want %v", got, want)
		}
		e.claimNone("", at(time.Minute))
	})

	t.Run("LeastRecentlyServedFirst", func(t *testing.T) {
		e := startEmpty(t, ns)
		for _, n := range []string{acme, globex, initech} {
			e.createTenant(store.CreateTenantParams{Name: n})
		}
		for _, n := range []string{acme, globex, initech} {
			for i := range 3 {
				e.submit(n, at(0), prio(fmt.Sprintf("%s-%d", n, i), 0))
			}
		}
		// A claim for one tenant is a turn of that tenant: initech, then
		// globex, were served last, so acme leads the next claim.
		e.claimOne(initech, at(time.Second))
		e.claimOne(globex, at(time.Second))
		ls := e.claim(store.ClaimParams{Max: 3, Now: at(time.Second)})
		want := []string{"acme", "initech", "globex"}
		if got := tenants(ls); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Claim Max 3 after initech then globex were served: got %v, want %v", got, want)
		}
	})

	t.Run("LimitsKeepTheTurns", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme})
		e.createTenant(store.CreateTenantParams{Name: globex})
		// Candidates with limits are decided under their locks (some
		// backends take another path for them): the turns hold there too.
		_, err := e.s.PutRateLimit(e.ctx, &store.PutRateLimitParams{Limit: store.RateLimit{Tenant: globex,
			Key: "r", Rate: 100, Per: time.Second, Burst: 100}, Now: base})
		e.must(err, "PutRateLimit")
		for i := range 4 {
			s := prio(fmt.Sprintf("a%d", i), 9)
			s.ConcurrencyKey, s.ConcurrencyLimit = "k", 2
			e.submit(acme, at(time.Duration(i)), s)
			s = prio(fmt.Sprintf("g%d", i), 0)
			s.RateKey = "r"
			e.submit(globex, at(time.Second+time.Duration(i)), s)
		}
		ls := e.claim(store.ClaimParams{Max: 5, Now: at(time.Minute)})
		// acme's key lets two run.
		want := []string{"a0", "g0", "a1", "g1", "g2"}
		if got := kinds(ls); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Claim Max 5: got %v, want %v", got, want)
		}
	})

	// A candidate whose concurrency key this very claim filled gives up
	// no turn of its tenant: the tenant's next startable execution takes
	// it, however many of the key's executions wait ahead of it.
	t.Run("KeyFilledByTheClaimKeepsTheTurn", func(t *testing.T) {
		for _, keyed := range []int{2, 9} {
			t.Run(fmt.Sprint(keyed), func(t *testing.T) {
				e := startEmpty(t, ns)
				e.createTenant(store.CreateTenantParams{Name: acme})
				e.createTenant(store.CreateTenantParams{Name: globex})
				for i := range keyed {
					s := prio(fmt.Sprintf("a-k%d", i), 9)
					s.ConcurrencyKey = "k" // limit 1
					e.submit(acme, at(time.Duration(i)), s)
				}
				e.submit(acme, at(time.Second), prio("a-free", 0))
				for i := range 4 {
					e.submit(globex, at(2*time.Second+time.Duration(i)), prio(fmt.Sprintf("g%d", i), 0))
				}
				ls := e.claim(store.ClaimParams{Max: 4, Now: at(time.Minute)})
				want := []string{"a-k0", "g0", "a-free", "g1"}
				if got := kinds(ls); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("Claim Max 4 with %d of acme's on key k (limit 1) ahead of a-free: got %v, want %v",
						keyed, got, want)
				}
				// acme was served last.
				ls = e.claim(store.ClaimParams{Max: 2, Now: at(time.Minute)})
				want = []string{"g2", "g3"}
				if got := kinds(ls); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("next Claim Max 2: got %v, want %v", got, want)
				}
			})
		}
	})

	// Likewise a candidate its bucket refuses: the tenant's next
	// startable execution takes the turn.
	t.Run("BucketRefusalKeepsTheTurn", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme})
		e.createTenant(store.CreateTenantParams{Name: globex})
		_, err := e.s.PutRateLimit(e.ctx, &store.PutRateLimitParams{Limit: store.RateLimit{Tenant: acme,
			Key: "r", Rate: 1, Per: time.Hour, Burst: 1}, Now: base})
		e.must(err, "PutRateLimit")
		for i := range 3 {
			s := prio(fmt.Sprintf("a-r%d", i), 9)
			s.RateKey = "r"
			e.submit(acme, at(time.Duration(i)), s)
		}
		e.submit(acme, at(time.Second), prio("a-free", 0))
		for i := range 4 {
			e.submit(globex, at(2*time.Second+time.Duration(i)), prio(fmt.Sprintf("g%d", i), 0))
		}
		ls := e.claim(store.ClaimParams{Max: 4, Now: at(time.Minute)})
		want := []string{"a-r0", "g0", "a-free", "g1"}
		if got := kinds(ls); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Claim Max 4 with acme's bucket r taking one start: got %v, want %v", got, want)
		}
	})

	t.Run("FiltersFindWorkBehindOtherKinds", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme})
		e.createTenant(store.CreateTenantParams{Name: globex})
		// Backends may bound how far a claim walks a tenant's work its
		// filters refuse; the work past the bound is still found.
		other := make([]store.Submission, 1500)
		for i := range other {
			other[i] = prio("other", 9)
		}
		e.admit(acme, at(0), other...)
		e.admit(globex, at(0), other[:500]...)
		wanted := e.submit(acme, at(time.Second), prio("x", 0))
		ls := e.claim(store.ClaimParams{Kinds: []string{"x"}, Max: 2, Now: at(time.Minute)})
		if len(ls) != 1 || ls[0].ExecutionID != wanted.ID {
			t.Errorf("Claim of kind x behind 2,000 of another kind: got %v, want acme's one", kinds(ls))
		}
	})

	t.Run("FiltersKeepTheTurns", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme})
		e.createTenant(store.CreateTenantParams{Name: globex})
		sub := func(queue, kind string, p int) store.Submission {
			s := prio(kind, p)
			s.Queue = queue
			return s
		}
		for i := range 4 {
			e.submit(acme, at(time.Duration(i)), sub("mail", fmt.Sprintf("a%d", i), 9))
		}
		e.submit(acme, at(0), sub("other", "a-other", 99))
		e.submit(globex, at(time.Second), sub("mail", "g0", 0))
		e.submit(globex, at(time.Second), sub("other", "g-other", 99))
		ls := e.claim(store.ClaimParams{Queues: []string{"mail"}, Max: 3, Now: at(time.Minute)})
		want := []string{"a0", "g0", "a1"}
		if got := kinds(ls); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Claim queue mail Max 3: got %v, want %v", got, want)
		}
		ls = e.claim(store.ClaimParams{Kinds: []string{"a2", "a3", "g-other"}, Max: 3, Now: at(time.Minute)})
		want = []string{"g-other", "a2", "a3"}
		if got := kinds(ls); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Claim by kinds Max 3: got %v, want %v", got, want)
		}
	})

	// A disabled tenant's executions do not start, by any claim, until it
	// is enabled again; its turn is kept meanwhile.
	t.Run("DisabledTenantIsNotClaimed", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme})
		e.createTenant(store.CreateTenantParams{Name: globex})
		for i := range 3 {
			e.submit(acme, at(time.Duration(i)), prio(fmt.Sprintf("a%d", i), 9))
		}
		g := e.submit(globex, at(time.Second), prio("g0", 0))
		setDisabled := func(v bool) {
			t.Helper()
			tn, err := e.s.UpdateTenant(e.ctx, &store.UpdateTenantParams{Name: acme, Disabled: &v})
			e.must(err, "UpdateTenant disabled")
			if tn.Disabled != v {
				t.Fatalf("UpdateTenant: Disabled = %v, want %v", tn.Disabled, v)
			}
		}
		setDisabled(true)
		for _, p := range []store.ClaimParams{
			{Tenant: acme, Max: 5},
			{Kinds: []string{"a0", "a1", "a2"}, Max: 5},
		} {
			p.Now = at(time.Minute)
			if ls := e.claim(p); len(ls) != 0 {
				t.Errorf("Claim %+v while acme is disabled: got %v, want none", p, kinds(ls))
			}
		}
		ls := e.claim(store.ClaimParams{Max: 5, Now: at(time.Minute)})
		if len(ls) != 1 || ls[0].ExecutionID != g.ID {
			t.Errorf("Claim while acme is disabled: got %v, want globex's one", kinds(ls))
		}
		setDisabled(false)
		ls = e.claim(store.ClaimParams{Max: 5, Now: at(time.Minute)})
		if want := []string{"a0", "a1", "a2"}; fmt.Sprint(kinds(ls)) != fmt.Sprint(want) {
			t.Errorf("Claim once acme is enabled again: got %v, want %v", kinds(ls), want)
		}
		e.wantInflight(acme, 3)
	})
}

func tenants(ls []store.Lease) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Tenant
	}
	return out
}

func kinds(ls []store.Lease) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Kind
	}
	return out
}
