package redis_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/redis"
)

var t0 = time.Date(2031, time.March, 14, 9, 0, 0, 0, time.UTC)

func newTestStore(t *testing.T) (*redis.Store, context.Context) {
	t.Helper()
	url := redisURL(t)
	s := open(t, url, newPrefix(t, url))
	t.Cleanup(func() { s.Close() })
	t.Cleanup(func() { redis.CheckConsistency(t, s) })
	ctx := context.Background()
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", Now: t0}); err != nil {
		t.Fatal(err)
	}
	return s, ctx
}

// TestScheduleLiveSetShrinks: the live set of a schedule keeps its
// executions in flight, whatever admitted them, and a fire drops the ones
// that ended or were deleted, so that it stays as small as the schedule's
// work in flight.
func TestScheduleLiveSetShrinks(t *testing.T) {
	s, ctx := newTestStore(t)
	sc := store.Schedule{Tenant: "acme", Name: "s", Every: time.Minute, Kind: "echo",
		Overlap: store.OverlapAllow, Catchup: store.CatchupOne, Enabled: true, NextRunAt: t0.Add(time.Minute)}
	if _, err := s.PutSchedule(ctx, &store.PutScheduleParams{Schedule: sc, Now: t0}); err != nil {
		t.Fatal(err)
	}
	// An execution of the schedule admitted by Admit counts too.
	res, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Now: t0,
		Items: []store.Submission{{Kind: "echo", Schedule: "s"}}})
	if err != nil || res.Items[0].Err != nil {
		t.Fatal(err, res.Items[0].Err)
	}
	admitted := res.Items[0].Execution.ID
	var fired []string
	for i := 1; i <= 3; i++ {
		tick := t0.Add(time.Duration(i) * time.Minute)
		r, err := s.FireSchedule(ctx, &store.FireScheduleParams{Tenant: "acme", Name: "s", Tick: tick,
			Expected: tick, Next: tick.Add(time.Minute), Now: tick})
		if err != nil || r.Execution == nil {
			t.Fatalf("fire %d: %v %+v", i, err, r)
		}
		fired = append(fired, r.Execution.ID)
	}
	live := redis.ScheduleLive(t, s, "acme", "s")
	for _, id := range append([]string{admitted}, fired...) {
		if !slices.Contains(live, id) {
			t.Errorf("live set %v lacks %s", live, id)
		}
	}
	// One cancelled, one force deleted; the next fire drops both.
	if _, err := s.Cancel(ctx, &store.CancelParams{ID: fired[0], Now: t0.Add(4 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, &store.DeleteParams{ID: admitted, Force: true}); err != nil {
		t.Fatal(err)
	}
	tick := t0.Add(4 * time.Minute)
	r, err := s.FireSchedule(ctx, &store.FireScheduleParams{Tenant: "acme", Name: "s", Tick: tick,
		Expected: tick, Next: tick.Add(time.Minute), Now: tick})
	if err != nil {
		t.Fatal(err)
	}
	live = redis.ScheduleLive(t, s, "acme", "s")
	slices.Sort(live)
	want := []string{fired[1], fired[2], r.Execution.ID}
	slices.Sort(want)
	if !slices.Equal(live, want) {
		t.Errorf("live set after a fire = %v, want %v", live, want)
	}
}

// TestRateDeferralOfARetry: a retry the bucket refuses once it is due is
// deferred like a queued execution, and the indexes stay consistent.
func TestRateDeferralOfARetry(t *testing.T) {
	s, ctx := newTestStore(t)
	if _, err := s.PutRateLimit(ctx, &store.PutRateLimitParams{Now: t0,
		Limit: store.RateLimit{Tenant: "acme", Key: "k", Rate: 1, Per: time.Minute, Burst: 1}}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Now: t0,
		Items: []store.Submission{{Kind: "echo", RateKey: "k", ConcurrencyKey: "c", ConcurrencyLimit: 5}}})
	if err != nil || res.Items[0].Err != nil {
		t.Fatal(err, res.Items[0].Err)
	}
	claim := func(now time.Time) *store.ClaimResult {
		t.Helper()
		c, err := s.Claim(ctx, &store.ClaimParams{WorkerID: "w", Max: 5, LeaseDuration: time.Hour, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := claim(t0)
	if len(c.Leases) != 1 || !c.RetryAt.IsZero() {
		t.Fatalf("first claim: %+v", c)
	}
	l := c.Leases[0]
	if _, err := s.Fail(ctx, &store.FailParams{ExecutionID: l.ExecutionID, Token: l.Token, Retry: true,
		RetryDelay: time.Second, Now: t0.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	// Due at 2s, refused until 1m: deferred, attempt kept.
	c = claim(t0.Add(3 * time.Second))
	if len(c.Leases) != 0 || !c.RetryAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("claim of the due retry: %d leases, RetryAt %v; want none and %v", len(c.Leases), c.RetryAt, t0.Add(time.Minute))
	}
	redis.CheckConsistency(t, s)
	x, err := s.Get(ctx, &store.GetParams{ID: l.ExecutionID})
	if err != nil {
		t.Fatal(err)
	}
	if x.Status != store.StatusScheduled || !x.RunAt.Equal(t0.Add(time.Minute)) || x.Attempt != 1 {
		t.Errorf("deferred retry: status %s run_at %v attempt %d", x.Status, x.RunAt, x.Attempt)
	}
	if c := claim(t0.Add(time.Minute)); len(c.Leases) != 1 || c.Leases[0].Attempt != 2 {
		t.Errorf("claim at the bucket's free start: %+v", c)
	}
}

// TestRateIntervalRoundsUp: an interval Per/Rate that is not whole
// microseconds is kept rounded up, so the bucket never allows more than
// the limit.
func TestRateIntervalRoundsUp(t *testing.T) {
	s, ctx := newTestStore(t)
	if _, err := s.PutRateLimit(ctx, &store.PutRateLimitParams{Now: t0,
		Limit: store.RateLimit{Tenant: "acme", Key: "k", Rate: 3, Per: time.Second, Burst: 1}}); err != nil {
		t.Fatal(err)
	}
	items := []store.Submission{{Kind: "echo", RateKey: "k"}, {Kind: "echo", RateKey: "k"}}
	if _, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Now: t0, Items: items}); err != nil {
		t.Fatal(err)
	}
	c, err := s.Claim(ctx, &store.ClaimParams{WorkerID: "w", Max: 5, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	iv := 333334 * time.Microsecond
	if len(c.Leases) != 1 || !c.RetryAt.Equal(t0.Add(iv)) {
		t.Errorf("claim: %d leases, RetryAt %v, want 1 and %v", len(c.Leases), c.RetryAt.Sub(t0), iv)
	}
	rl, err := s.GetRateLimit(ctx, &store.GetRateLimitParams{Tenant: "acme", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if !rl.TAT.Equal(t0.Add(iv)) {
		t.Errorf("TAT %v after one start, want %v", rl.TAT.Sub(t0), iv)
	}
}
