package storetest

import (
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

func (e *env) putRateLimit(tenant, key string, rate int, per time.Duration, burst int, now time.Time) *store.RateLimit {
	e.t.Helper()
	rl, err := e.s.PutRateLimit(e.ctx, &store.PutRateLimitParams{
		Limit: store.RateLimit{Tenant: tenant, Key: key, Rate: rate, Per: per, Burst: burst}, Now: now,
	})
	e.must(err, "PutRateLimit "+key)
	return rl
}

func (e *env) getRateLimit(tenant, key string) *store.RateLimit {
	e.t.Helper()
	rl, err := e.s.GetRateLimit(e.ctx, &store.GetRateLimitParams{Tenant: tenant, Key: key})
	e.must(err, "GetRateLimit "+key)
	return rl
}

// rated is a plain submission of kind echo with a rate key.
func rated(key string) store.Submission {
	s := job("echo")
	s.RateKey = key
	return s
}

// claimRes calls Claim for tenant and returns the whole result.
func (e *env) claimRes(tenant string, max int, now time.Time) *store.ClaimResult {
	e.t.Helper()
	res, err := e.s.Claim(e.ctx, &store.ClaimParams{WorkerID: "worker-1", Tenant: tenant, Max: max,
		LeaseDuration: leaseFor, Now: now})
	e.must(err, "Claim")
	return res
}

// testRateLimit covers invariant I7: starts per rate key over any window W
// stay within burst + rate·W/per, decided inside Claim; a rate-limited
// execution waits without burning attempts and without hiding other work.
func testRateLimit(t *testing.T, ns NewStore) {
	t.Run("PutGetDelete", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		rl := e.putRateLimit(acme, "target", 5, time.Second, 2, base)
		for what, got := range map[string]*store.RateLimit{"Put": rl, "Get": e.getRateLimit(acme, "target")} {
			if got.Tenant != acme || got.Key != "target" || got.Rate != 5 || got.Per != time.Second || got.Burst != 2 {
				t.Errorf("%s: %s, want acme/target 5 per 1s burst 2", what, show(got))
			}
			wantTime(t, what+" CreatedAt", got.CreatedAt, base)
		}
		_, err := e.s.GetRateLimit(e.ctx, &store.GetRateLimitParams{Tenant: globex, Key: "target"})
		wantErr(t, "GetRateLimit of another tenant's key", err, store.ErrNotFound)
		err = e.s.DeleteRateLimit(e.ctx, &store.DeleteRateLimitParams{Tenant: globex, Key: "target"})
		wantErr(t, "DeleteRateLimit of another tenant's key", err, store.ErrNotFound)

		e.putRateLimit(acme, "target", 1, time.Minute, 1, at(time.Second))
		got := e.getRateLimit(acme, "target")
		if got.Rate != 1 || got.Per != time.Minute || got.Burst != 1 {
			t.Errorf("after replace: %s, want 1 per 1m burst 1", show(got))
		}
		wantTime(t, "CreatedAt after replace", got.CreatedAt, base)

		e.must(e.s.DeleteRateLimit(e.ctx, &store.DeleteRateLimitParams{Tenant: acme, Key: "target"}), "DeleteRateLimit")
		_, err = e.s.GetRateLimit(e.ctx, &store.GetRateLimitParams{Tenant: acme, Key: "target"})
		wantErr(t, "GetRateLimit after delete", err, store.ErrNotFound)
		err = e.s.DeleteRateLimit(e.ctx, &store.DeleteRateLimitParams{Tenant: acme, Key: "target"})
		wantErr(t, "second DeleteRateLimit", err, store.ErrNotFound)
	})

	t.Run("PutRefusesBadInput", func(t *testing.T) {
		e := start(t, ns)
		for what, c := range map[string]struct {
			rl   store.RateLimit
			want error
		}{
			"zero rate":      {store.RateLimit{Tenant: acme, Key: "k", Rate: 0, Per: time.Second, Burst: 1}, store.ErrInvalid},
			"zero per":       {store.RateLimit{Tenant: acme, Key: "k", Rate: 1, Burst: 1}, store.ErrInvalid},
			"zero burst":     {store.RateLimit{Tenant: acme, Key: "k", Rate: 1, Per: time.Second}, store.ErrInvalid},
			"empty key":      {store.RateLimit{Tenant: acme, Rate: 1, Per: time.Second, Burst: 1}, store.ErrInvalid},
			"unknown tenant": {store.RateLimit{Tenant: "nobody", Key: "k", Rate: 1, Per: time.Second, Burst: 1}, store.ErrNotFound},
		} {
			_, err := e.s.PutRateLimit(e.ctx, &store.PutRateLimitParams{Limit: c.rl, Now: base})
			wantErr(t, "PutRateLimit "+what, err, c.want)
		}
		_, err := e.s.GetRateLimit(e.ctx, &store.GetRateLimitParams{Tenant: acme, Key: "k"})
		wantErr(t, "GetRateLimit after refused puts", err, store.ErrNotFound)
	})

	t.Run("ClaimDefersBeyondTheBucket", func(t *testing.T) {
		e := start(t, ns)
		e.putRateLimit(acme, "target", 1, time.Second, 1, base)
		var ids []string
		for i := range 3 {
			ids = append(ids, e.submit(acme, at(time.Duration(i)*time.Millisecond), rated("target")).ID)
		}
		now := at(10 * time.Millisecond)
		res := e.claimRes(acme, 10, now)
		if len(res.Leases) != 1 || res.Leases[0].ExecutionID != ids[0] {
			t.Fatalf("I7: a claim under 1/s burst 1 started %d, want only the oldest", len(res.Leases))
		}
		// The other two wait their turn as scheduled, one interval apart,
		// with no attempt spent.
		for i, id := range ids[1:] {
			x := e.wantStatus(id, store.StatusScheduled)
			wantTime(t, fmt.Sprintf("deferred %d RunAt", i+1), x.RunAt, now.Add(time.Duration(i+1)*time.Second))
			if x.Attempt != 0 {
				t.Errorf("deferred %d: Attempt %d, want 0 (waiting burns no attempt)", i+1, x.Attempt)
			}
		}
		wantTime(t, "RetryAt", res.RetryAt, now.Add(time.Second))
		if rl := e.getRateLimit(acme, "target"); !rl.TAT.Equal(now.Add(time.Second)) {
			t.Errorf("TAT after one start = %s, want %s", fmtTime(rl.TAT), fmtTime(now.Add(time.Second)))
		}
		e.claimNone(acme, now.Add(999*time.Millisecond))
		for i, id := range ids[1:] {
			l := e.claimOne(acme, now.Add(time.Duration(i+1)*time.Second))
			if l.ExecutionID != id || l.Attempt != 1 {
				t.Errorf("start %d: %s attempt %d, want %s attempt 1", i+2, l.ExecutionID, l.Attempt, id)
			}
		}
		e.wantInflight(acme, 3)
	})

	t.Run("BurstStartsTogether", func(t *testing.T) {
		e := start(t, ns)
		e.putRateLimit(acme, "target", 2, time.Second, 3, base)
		for range 5 {
			e.submit(acme, base, rated("target"))
		}
		if res := e.claimRes(acme, 10, base); len(res.Leases) != 3 {
			t.Errorf("I7: burst 3 started %d at once", len(res.Leases))
		}
		// One token per 500ms after the burst.
		e.claimNone(acme, at(499*time.Millisecond))
		if ls := e.claim(store.ClaimParams{Tenant: acme, Max: 10, Now: at(500 * time.Millisecond)}); len(ls) != 1 {
			t.Errorf("I7: %d started one interval after the burst, want 1", len(ls))
		}
	})

	t.Run("NoLimitStartsFreely", func(t *testing.T) {
		e := start(t, ns)
		e.putRateLimit(acme, "other", 1, time.Hour, 1, base)
		for range 4 {
			e.submit(acme, base, rated("unlimited"))
		}
		if ls := e.claim(store.ClaimParams{Tenant: acme, Max: 10, Now: base}); len(ls) != 4 {
			t.Errorf("%d of 4 executions with an unlimited rate key started", len(ls))
		}
	})

	t.Run("KeysArePerTenant", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		e.putRateLimit(acme, "target", 1, time.Hour, 1, base)
		for range 3 {
			e.submit(globex, base, rated("target"))
		}
		if ls := e.claim(store.ClaimParams{Tenant: globex, Max: 10, Now: base}); len(ls) != 3 {
			t.Errorf("acme's limit held back globex: %d of 3 started", len(ls))
		}
		if !e.getRateLimit(acme, "target").TAT.IsZero() {
			t.Error("globex's starts took acme's tokens")
		}
	})

	t.Run("DeferredWorkDoesNotHideOtherWork", func(t *testing.T) {
		e := start(t, ns)
		e.putRateLimit(acme, "target", 1, time.Minute, 1, base)
		for range 20 {
			e.submit(acme, base, rated("target"))
		}
		plain := e.submit(acme, at(time.Millisecond), job("echo"))
		ls := e.claim(store.ClaimParams{Tenant: acme, Max: 2, Now: at(time.Millisecond)})
		got := map[string]bool{}
		for _, l := range ls {
			got[l.ExecutionID] = true
		}
		if len(ls) != 2 || !got[plain.ID] {
			t.Errorf("claim of 2 behind a rate-limited backlog got %d leases (plain one: %v), want a limited one and the plain one",
				len(ls), got[plain.ID])
		}
		// Later claims find nothing without rescanning the backlog's tokens.
		e.claimNone(acme, at(2*time.Millisecond))
		e.wantInflight(acme, 21)
	})

	t.Run("ConcurrencyBlockedIsNotCharged", func(t *testing.T) {
		e := start(t, ns)
		e.putRateLimit(acme, "target", 1, time.Minute, 1, base)
		both := rated("target")
		both.ConcurrencyKey, both.ConcurrencyLimit = "customer", 1
		holder := job("echo")
		holder.ConcurrencyKey, holder.ConcurrencyLimit = "customer", 1
		l := e.run(acme, base, holder)
		x := e.submit(acme, at(time.Millisecond), both)
		e.claimNone(acme, at(2*time.Millisecond))
		if !e.getRateLimit(acme, "target").TAT.IsZero() {
			t.Error("a start refused by its concurrency key took a token")
		}
		_, err := e.complete(l, at(3*time.Millisecond), nil)
		e.must(err, "Complete")
		if got := e.claimOne(acme, at(4*time.Millisecond)); got.ExecutionID != x.ID {
			t.Errorf("claimed %s, want %s", got.ExecutionID, x.ID)
		}
	})

	t.Run("DeleteFreesTheKey", func(t *testing.T) {
		e := start(t, ns)
		e.putRateLimit(acme, "target", 1, time.Hour, 1, base)
		for range 3 {
			e.submit(acme, base, rated("target"))
		}
		if ls := e.claim(store.ClaimParams{Tenant: acme, Max: 10, Now: base}); len(ls) != 1 {
			t.Fatalf("%d started under 1/h", len(ls))
		}
		e.must(e.s.DeleteRateLimit(e.ctx, &store.DeleteRateLimitParams{Tenant: acme, Key: "target"}), "DeleteRateLimit")
		// The deferred ones keep their RunAt, then start freely.
		if ls := e.claim(store.ClaimParams{Tenant: acme, Max: 10, Now: at(3 * time.Hour)}); len(ls) != 2 {
			t.Errorf("%d of the 2 deferred started once the limit was deleted", len(ls))
		}
	})

	t.Run("CancelDeferred", func(t *testing.T) {
		e := start(t, ns)
		e.putRateLimit(acme, "target", 1, time.Hour, 1, base)
		e.submit(acme, base, rated("target"))
		x := e.submit(acme, base, rated("target"))
		e.claim(store.ClaimParams{Tenant: acme, Max: 10, Now: base})
		e.wantStatus(x.ID, store.StatusScheduled)
		_, err := e.cancel(acme, x.ID, at(time.Second))
		e.must(err, "Cancel")
		e.wantStatus(x.ID, store.StatusCancelled)
		e.wantInflight(acme, 1)
	})

	t.Run("WindowBoundUnderConcurrentClaims", func(t *testing.T) {
		testRateWindow(t, ns)
	})
}

// testRateWindow claims from many goroutines along a fake clock and checks
// I7 on every window of the starts: n starts between s_i and s_j never
// exceed burst + (s_j - s_i)/interval. It also checks that the limit is
// used: starts keep pace with the rate.
func testRateWindow(t *testing.T, ns NewStore) {
	e := start(t, ns)
	const rate, burst = 5, 2
	e.putRateLimit(acme, "target", rate, time.Second, burst, base)
	for range 60 {
		e.submit(acme, base, rated("target"))
	}
	var mu sync.Mutex
	var starts []time.Time
	var errs []error
	const step = 50 * time.Millisecond
	for now := base; now.Before(at(10 * time.Second)); now = now.Add(step) {
		together(6, func(n int) {
			res, err := e.s.Claim(e.ctx, &store.ClaimParams{WorkerID: fmt.Sprint("w", n), Tenant: acme,
				Max: 3, LeaseDuration: time.Hour, Now: now})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			for range res.Leases {
				starts = append(starts, now)
			}
		})
	}
	for _, err := range errs {
		t.Errorf("Claim: %v", err)
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
	interval := time.Second / rate
	for i := range starts {
		for j := i; j < len(starts); j++ {
			allowed := burst + int(starts[j].Sub(starts[i])/interval)
			if n := j - i + 1; n > allowed {
				t.Fatalf("I7: %d starts within %s (from %s), allowed %d (burst %d + %d/s)",
					n, starts[j].Sub(starts[i]), starts[i].Sub(base), allowed, burst, rate)
			}
		}
	}
	// Ten seconds at 5/s with burst 2 allow 52; claims every 50ms must take
	// nearly all of them (deferral spreads retries, it must not starve).
	if len(starts) < 45 {
		t.Errorf("only %d starts in 10s under 5/s burst 2 (at most 52 allowed): the limit is not used", len(starts))
	}
	e.wantInflight(acme, 60)
}
