package redis_test

import (
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// TestRouterPassesSkipAFailingTenant: one tenant whose namespace fails
// (its running, sched, due, wake and nextrun keys made strings, so its
// scripts answer WRONGTYPE, as an unreachable primary answers an error)
// holds back no other tenant: Rescue, Promote and Wake still do the
// healthy tenant's work, ListSchedules DueBy still lists its schedule, and
// each reports the failing tenant's error. Its name sorts first and its
// hints are as early as the healthy tenant's, so it is visited first.
func TestRouterPassesSkipAFailingTenant(t *testing.T) {
	url := clusterURL(t)
	r := openRouter(t, url, newClusterPrefix(t, url))
	defer r.Close()
	ctx := t.Context()
	t0 := time.Now().Truncate(time.Second)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	const bad, good = "a-bad", "b-good"
	for _, ten := range []string{bad, good} {
		if _, err := r.CreateTenant(ctx, &store.CreateTenantParams{Name: ten, KeyHash: "h-" + ten}); err != nil {
			t.Fatal(err)
		}
		// Two queued (one to lease until it expires, one to suspend
		// until a wake time) and one scheduled.
		res, err := r.Admit(ctx, &store.AdmitParams{Tenant: ten, Now: t0, Items: []store.Submission{
			{Kind: "lease"}, {Kind: "sleep"}, {Kind: "later", RunAt: at(time.Second)}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range res.Items {
			if it.Err != nil {
				t.Fatal(it.Err)
			}
		}
		c, err := r.Claim(ctx, &store.ClaimParams{Tenant: ten, WorkerID: "w", Max: 2, LeaseDuration: time.Second, Now: t0})
		if err != nil || len(c.Leases) != 2 {
			t.Fatalf("claim %s: %v %v", ten, c, err)
		}
		for _, l := range c.Leases {
			if l.Kind == "sleep" {
				if _, err := r.Suspend(ctx, &store.SuspendParams{ExecutionID: l.ExecutionID, Tenant: ten, Token: l.Token,
					Step: "nap", Until: at(time.Second), Now: t0}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if _, err := r.PutSchedule(ctx, &store.PutScheduleParams{Now: t0, Schedule: store.Schedule{
			Tenant: ten, Name: "tick", Every: time.Minute, Kind: "tick", Enabled: true,
			Overlap: store.OverlapAllow, Catchup: store.CatchupOne, Timezone: "UTC", Payload: []byte("{}"), NextRunAt: at(time.Second)}}); err != nil {
			t.Fatal(err)
		}
	}
	// Break the bad tenant's namespace.
	ns := r.TenantNamespace(bad)
	for _, k := range []string{"running", "sched", "due", "wake", "nextrun"} {
		if err := r.RawClient().Set(ctx, ns+":"+k, "broken", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	later := at(10 * time.Minute)

	rs, err := r.Rescue(ctx, &store.RescueParams{Now: later, Limit: 100})
	wantTenantErr(t, "Rescue", err, bad)
	if rs == nil || rs.Requeued != 1 {
		t.Errorf("Rescue: %+v, want the healthy tenant's expired lease requeued", rs)
	}
	ps, err := r.Promote(ctx, &store.PromoteParams{Now: later, Limit: 100})
	wantTenantErr(t, "Promote", err, bad)
	if ps == nil || ps.Promoted != 1 {
		t.Errorf("Promote: %+v, want the healthy tenant's scheduled execution promoted", ps)
	}
	ws, err := r.Wake(ctx, &store.WakeParams{Now: later, Limit: 100})
	wantTenantErr(t, "Wake", err, bad)
	if ws == nil || ws.Woken != 1 {
		t.Errorf("Wake: %+v, want the healthy tenant's sleeper woken", ws)
	}
	due, err := r.ListSchedules(ctx, &store.ListSchedulesParams{DueBy: later, Limit: 100})
	wantTenantErr(t, "ListSchedules DueBy", err, bad)
	if len(due) != 1 || due[0].Tenant != good {
		t.Errorf("ListSchedules DueBy: %v, want the healthy tenant's schedule", due)
	}
	// Prune reports the tenant's error and still repairs the hints: a
	// healthy tenant's hint it lost comes back.
	if err := r.RawClient().ZRem(ctx, r.HintKey("claim"), good).Err(); err != nil {
		t.Fatal(err)
	}
	_, err = r.Prune(ctx, &store.PruneParams{Now: later, Limit: 100})
	wantTenantErr(t, "Prune", err, bad)
	if _, err := r.RawClient().ZScore(ctx, r.HintKey("claim"), good).Result(); err != nil {
		t.Errorf("after Prune, the healthy tenant's claim hint: %v, want it re-derived", err)
	}
	c, err := r.Claim(ctx, &store.ClaimParams{WorkerID: "w", Max: 10, LeaseDuration: time.Minute, Now: later})
	if err != nil || len(c.Leases) != 3 {
		t.Errorf("claim after the passes: %v %v, want the healthy tenant's three executions", c, err)
	}
}

func wantTenantErr(t *testing.T, what string, err error, tenant string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), "tenant "+tenant) {
		t.Errorf("%s: err = %v, want the failing tenant %s's error", what, err, tenant)
	}
}
