package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testTenantList covers ListTenants: every tenant once, in name order, a
// page at a time, with its settings and counters.
func testTenantList(t *testing.T, ns NewStore) {
	t.Run("PagesInNameOrder", func(t *testing.T) {
		e := startEmpty(t, ns)
		if got := e.listTenants("", 0); len(got) != 0 {
			t.Errorf("no tenants yet, listed %d", len(got))
		}
		names := []string{"delta", "alpha", "echo", "charlie", "bravo"}
		for _, n := range names {
			e.createTenant(store.CreateTenantParams{Name: n, MaxInflight: 7})
		}
		e.submit("charlie", base, job("echo"))
		_, err := e.s.UpdateTenant(e.ctx, &store.UpdateTenantParams{Name: "echo", Disabled: ptrTo(true)})
		e.must(err, "UpdateTenant")

		var seen []string
		after := ""
		for range 10 {
			page := e.listTenants(after, 2)
			if len(page) > 2 {
				t.Fatalf("a page of Limit 2 holds %d", len(page))
			}
			if len(page) == 0 {
				break
			}
			for _, tn := range page {
				seen = append(seen, tn.Name)
				if tn.MaxInflight != 7 {
					t.Errorf("tenant %s MaxInflight %d, want 7", tn.Name, tn.MaxInflight)
				}
				if want := tn.Name == "charlie"; (tn.Inflight == 1) != want {
					t.Errorf("tenant %s Inflight %d", tn.Name, tn.Inflight)
				}
				if tn.Disabled != (tn.Name == "echo") {
					t.Errorf("tenant %s Disabled %v", tn.Name, tn.Disabled)
				}
			}
			after = page[len(page)-1].Name
		}
		want := slices.Clone(names)
		slices.Sort(want)
		if !slices.Equal(seen, want) {
			t.Errorf("paged through %v, want %v", seen, want)
		}
		if got := e.listTenants("", 0); len(got) != len(names) {
			t.Errorf("default page listed %d tenants, want %d", len(got), len(names))
		}
		e.must(e.s.DeleteTenant(e.ctx, &store.DeleteTenantParams{Name: "bravo", Force: true, Now: base}), "DeleteTenant")
		if got := e.listTenants("alpha", 1); len(got) != 1 || got[0].Name != "charlie" {
			t.Errorf("after alpha, without bravo: %v", tenantNames(got))
		}
	})
}

func (e *env) listTenants(after string, limit int) []*store.Tenant {
	e.t.Helper()
	got, err := e.s.ListTenants(e.ctx, &store.ListTenantsParams{After: after, Limit: limit})
	e.must(err, fmt.Sprintf("ListTenants after %q", after))
	return got
}

func tenantNames(ts []*store.Tenant) []string {
	out := make([]string, len(ts))
	for i, tn := range ts {
		out[i] = tn.Name
	}
	return out
}

// testSchedulePause covers SetScheduleEnabled: a pause or resume changes
// the Enabled flag (and a resume NextRunAt) and nothing else.
func testSchedulePause(t *testing.T, ns NewStore) {
	t.Run("PauseAndResumeKeepTheSettings", func(t *testing.T) {
		e := start(t, ns)
		s := sched("s", store.OverlapQueue)
		s.Priority, s.MaxAttempts, s.RateKey = 4, 9, "r"
		put := e.putSchedule(s, base).Schedule
		e.fire(acme, "s", at(minute), at(minute))

		paused := e.setEnabled("s", false, time.Time{}, at(2*minute))
		if paused.Enabled {
			t.Fatal("paused schedule is Enabled")
		}
		wantTime(t, "paused UpdatedAt", paused.UpdatedAt, at(2*minute))
		if paused.Priority != 4 || paused.MaxAttempts != 9 || paused.RateKey != "r" || paused.Overlap != store.OverlapQueue ||
			paused.Every != minute || paused.LastExecutionID == "" || !paused.CreatedAt.Equal(put.CreatedAt) {
			t.Errorf("a pause changed other settings: %+v", paused)
		}
		res, err := e.s.FireSchedule(e.ctx, &store.FireScheduleParams{Tenant: acme, Name: "s", Tick: at(2 * minute),
			Expected: at(2 * minute), Next: at(3 * minute), Now: at(2 * minute)})
		e.must(err, "FireSchedule")
		if res.Execution != nil {
			t.Error("a paused schedule fired its tick")
		}
		again := e.setEnabled("s", false, time.Time{}, at(3*minute))
		wantTime(t, "UpdatedAt after pausing a paused schedule", again.UpdatedAt, at(2*minute))

		resumed := e.setEnabled("s", true, at(10*minute), at(9*minute+30*time.Second))
		if !resumed.Enabled {
			t.Fatal("resumed schedule is not Enabled")
		}
		wantTime(t, "resumed NextRunAt", resumed.NextRunAt, at(10*minute))
		wantTime(t, "resumed UpdatedAt", resumed.UpdatedAt, at(9*minute+30*time.Second))
		got := e.getSchedule(acme, "s")
		if !got.Enabled || !got.NextRunAt.Equal(at(10*minute)) || got.Priority != 4 {
			t.Errorf("GetSchedule after resume: %+v", got)
		}
		// Resuming an enabled schedule keeps its tick.
		same := e.setEnabled("s", true, at(20*minute), at(11*minute))
		wantTime(t, "NextRunAt after resuming an enabled schedule", same.NextRunAt, at(10*minute))
	})

	t.Run("ResumeOfAReplacedTimingChangesNothing", func(t *testing.T) {
		e := start(t, ns)
		e.putSchedule(sched("s", store.OverlapSkip), base)
		read := e.setEnabled("s", false, time.Time{}, at(minute)) // paused, every minute
		// A replace changes the timing (still paused) after the resume read it.
		s := sched("s", store.OverlapSkip)
		s.Every, s.Enabled, s.NextRunAt = 7*minute, false, at(7*minute)
		e.putSchedule(s, at(2*minute))
		stale, err := e.s.SetScheduleEnabled(e.ctx, store.ResumeParams(read, at(3*minute), at(2*minute)))
		e.must(err, "SetScheduleEnabled with a stale timing")
		if stale.Enabled || stale.Every != 7*minute {
			t.Fatalf("a resume computed for every 1m applied to the schedule now every 7m: %+v", stale)
		}
		wantTime(t, "UpdatedAt after a refused resume", stale.UpdatedAt, at(2*minute))
		got := e.setEnabled("s", true, at(7*minute), at(3*minute))
		if !got.Enabled || got.Every != 7*minute {
			t.Fatalf("resume with the schedule's timing: %+v", got)
		}
		wantTime(t, "NextRunAt of the resume", got.NextRunAt, at(7*minute))
	})

	t.Run("ScopedToItsTenant", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		e.putSchedule(sched("s", store.OverlapSkip), base)
		_, err := e.s.SetScheduleEnabled(e.ctx, &store.SetScheduleEnabledParams{Tenant: globex, Name: "s", Now: base})
		wantErr(t, "another tenant's schedule", err, store.ErrNotFound)
		_, err = e.s.SetScheduleEnabled(e.ctx, &store.SetScheduleEnabledParams{Tenant: acme, Name: "missing", Now: base})
		wantErr(t, "a missing schedule", err, store.ErrNotFound)
		if !e.getSchedule(acme, "s").Enabled {
			t.Error("a refused pause changed the schedule")
		}
	})
}

// setEnabled pauses or resumes acme's schedule name; a resume's next tick
// is next, computed from the schedule's timing as read just before.
func (e *env) setEnabled(name string, enabled bool, next, now time.Time) *store.Schedule {
	e.t.Helper()
	p := &store.SetScheduleEnabledParams{Tenant: acme, Name: name, Now: now}
	if enabled {
		p = store.ResumeParams(e.getSchedule(acme, name), next, now)
	}
	s, err := e.s.SetScheduleEnabled(e.ctx, p)
	e.must(err, fmt.Sprintf("SetScheduleEnabled %s %v", name, enabled))
	return s
}

func ptrTo[T any](v T) *T { return &v }
