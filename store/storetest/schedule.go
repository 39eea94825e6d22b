package storetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// minute is the tick interval of the suite's schedules.
const minute = time.Minute

// sched is a schedule of acme named name ticking every minute, whose first
// tick is at base+1m, with the given overlap policy.
func sched(name string, overlap store.Overlap) store.Schedule {
	return store.Schedule{
		Tenant: acme, Name: name, Every: minute, Timezone: "UTC",
		Kind: "sweep", Payload: mustJSON(`{"city":"oslo"}`), Queue: "default",
		Overlap: overlap, Catchup: store.CatchupOne, Enabled: true,
		NextRunAt: at(minute),
	}
}

func (e *env) putSchedule(s store.Schedule, now time.Time) *store.PutScheduleResult {
	e.t.Helper()
	res, err := e.s.PutSchedule(e.ctx, &store.PutScheduleParams{Schedule: s, Now: now})
	e.must(err, "PutSchedule "+s.Name)
	if res == nil || res.Schedule == nil {
		e.t.Fatal("PutSchedule returned no schedule and no error")
	}
	return res
}

func (e *env) getSchedule(tenant, name string) *store.Schedule {
	e.t.Helper()
	s, err := e.s.GetSchedule(e.ctx, &store.GetScheduleParams{Tenant: tenant, Name: name})
	e.must(err, "GetSchedule "+name)
	return s
}

// fire fires the regular tick the schedule expects at tick, moving it on by
// one minute, and returns the result.
func (e *env) fire(tenant, name string, tick, now time.Time) *store.FireScheduleResult {
	e.t.Helper()
	res, err := e.s.FireSchedule(e.ctx, &store.FireScheduleParams{
		Tenant: tenant, Name: name, Tick: tick, Expected: tick, Next: tick.Add(minute), Now: now,
	})
	e.must(err, fmt.Sprintf("FireSchedule %s tick %s", name, tick.Sub(base)))
	return res
}

// trigger fires an off-cycle tick at tick.
func (e *env) trigger(tenant, name string, tick time.Time) *store.FireScheduleResult {
	e.t.Helper()
	res, err := e.s.FireSchedule(e.ctx, &store.FireScheduleParams{
		Tenant: tenant, Name: name, Tick: tick, Trigger: true, Now: tick,
	})
	e.must(err, fmt.Sprintf("trigger %s at %s", name, tick.Sub(base)))
	if res.Execution == nil {
		e.t.Fatalf("trigger %s at %s fired nothing", name, tick.Sub(base))
	}
	return res
}

// fired asserts that res fired a new execution of the given status.
func fired(t testing.TB, what string, res *store.FireScheduleResult, st store.Status) *store.Execution {
	t.Helper()
	if res.Execution == nil {
		t.Fatalf("%s: fired nothing, want a %s execution", what, st)
	}
	if res.Deduplicated {
		t.Errorf("%s: Deduplicated onto %s, want a new execution", what, res.Execution.ID)
	}
	if res.Execution.Status != st {
		t.Errorf("%s: execution status %s, want %s", what, res.Execution.Status, st)
	}
	return res.Execution
}

// liveOfSchedule counts the schedule's executions that are not terminal.
func (e *env) liveOfSchedule(tenant, name string) int {
	e.t.Helper()
	n := 0
	for _, x := range e.list(store.ListParams{Tenant: tenant, Schedule: name}) {
		if !x.Status.Terminal() {
			n++
		}
	}
	return n
}

// testSchedule covers the schedule records and invariant I6: one execution
// per (schedule, tick) however many servers fire it, and with overlap skip
// or queue never two of a schedule's executions running.
func testSchedule(t *testing.T, ns NewStore) {
	t.Run("PutCreatesAndGetReads", func(t *testing.T) {
		e := start(t, ns)
		s := sched("sweep-oslo", store.OverlapSkip)
		s.Priority, s.MaxAttempts, s.TimeoutSeconds, s.RateKey = 5, 2, 60, "target"
		res := e.putSchedule(s, base)
		if !res.Created {
			t.Error("PutSchedule of a new name: Created = false")
		}
		for what, got := range map[string]*store.Schedule{"Put": res.Schedule, "Get": e.getSchedule(acme, "sweep-oslo")} {
			if got.Tenant != acme || got.Name != "sweep-oslo" || got.Every != minute || got.Cron != "" ||
				got.Timezone != "UTC" || got.Kind != "sweep" || got.Queue != "default" ||
				got.Priority != 5 || got.MaxAttempts != 2 || got.TimeoutSeconds != 60 || got.RateKey != "target" ||
				got.Overlap != store.OverlapSkip || got.Catchup != store.CatchupOne || !got.Enabled {
				t.Errorf("%s: settings not kept: %s", what, show(got))
			}
			wantJSON(t, what+" payload", got.Payload, mustJSON(`{"city":"oslo"}`))
			wantTime(t, what+" NextRunAt", got.NextRunAt, at(minute))
			wantTime(t, what+" CreatedAt", got.CreatedAt, base)
			if got.LastRunAt != nil || got.LastExecutionID != "" || got.Running {
				t.Errorf("%s: a new schedule has LastRunAt %v, LastExecutionID %q, Running %v",
					what, got.LastRunAt, got.LastExecutionID, got.Running)
			}
		}
	})

	t.Run("PutCron", func(t *testing.T) {
		e := start(t, ns)
		s := sched("nightly", store.OverlapQueue)
		s.Every, s.Cron, s.Timezone, s.Catchup = 0, "30 2 * * *", "Europe/Oslo", store.CatchupNone
		got := e.putSchedule(s, base).Schedule
		if got.Cron != "30 2 * * *" || got.Every != 0 || got.Timezone != "Europe/Oslo" || got.Catchup != store.CatchupNone {
			t.Errorf("cron schedule not kept: %s", show(got))
		}
	})

	t.Run("PutRefusesBadInput", func(t *testing.T) {
		e := start(t, ns)
		noKind := sched("a", store.OverlapSkip)
		noKind.Kind = ""
		both := sched("b", store.OverlapSkip)
		both.Cron = "* * * * *"
		neither := sched("c", store.OverlapSkip)
		neither.Every = 0
		badOverlap := sched("d", "sometimes")
		unknown := sched("e", store.OverlapSkip)
		unknown.Tenant = "nobody"
		for what, c := range map[string]struct {
			s    store.Schedule
			want error
		}{
			"no kind": {noKind, store.ErrInvalid}, "cron and every": {both, store.ErrInvalid},
			"neither": {neither, store.ErrInvalid}, "bad overlap": {badOverlap, store.ErrInvalid},
			"unknown tenant": {unknown, store.ErrNotFound},
		} {
			_, err := e.s.PutSchedule(e.ctx, &store.PutScheduleParams{Schedule: c.s, Now: base})
			wantErr(t, "PutSchedule "+what, err, c.want)
			if _, err := e.s.GetSchedule(e.ctx, &store.GetScheduleParams{Tenant: acme, Name: c.s.Name}); !isAny(err, store.ErrNotFound) {
				t.Errorf("PutSchedule %s was refused but left a schedule behind (Get: %v)", what, err)
			}
		}
	})

	t.Run("ReplaceKeepsTickWhenTimingUnchanged", func(t *testing.T) {
		e := start(t, ns)
		e.putSchedule(sched("s", store.OverlapSkip), base)
		x := fired(t, "tick 1", e.fire(acme, "s", at(minute), at(minute)), store.StatusQueued)

		// A deploy re-applies the schedule with a new payload 90s in: the
		// caller computes next = 2m, the store keeps its own (also 2m) and
		// everything the schedule has recorded.
		s := sched("s", store.OverlapSkip)
		s.Payload = mustJSON(`{"city":"bergen"}`)
		s.NextRunAt = at(3 * minute) // deliberately different: must be ignored
		res := e.putSchedule(s, at(90*time.Second))
		if res.Created {
			t.Error("PutSchedule of an existing name: Created = true")
		}
		got := e.getSchedule(acme, "s")
		wantTime(t, "NextRunAt after a same-timing replace", got.NextRunAt, at(2*minute))
		wantJSON(t, "payload after replace", got.Payload, mustJSON(`{"city":"bergen"}`))
		wantTime(t, "CreatedAt after replace", got.CreatedAt, base)
		wantTime(t, "UpdatedAt after replace", got.UpdatedAt, at(90*time.Second))
		wantTimePtr(t, "LastRunAt after replace", got.LastRunAt, at(minute))
		if got.LastExecutionID != x.ID {
			t.Errorf("LastExecutionID after replace = %q, want %q", got.LastExecutionID, x.ID)
		}
	})

	t.Run("ReplaceWithNewTimingTakesNextRunAt", func(t *testing.T) {
		e := start(t, ns)
		e.putSchedule(sched("s", store.OverlapSkip), base)
		s := sched("s", store.OverlapSkip)
		s.Every, s.NextRunAt = 5*minute, at(5*minute)
		e.putSchedule(s, at(time.Second))
		wantTime(t, "NextRunAt after a timing change", e.getSchedule(acme, "s").NextRunAt, at(5*minute))
	})

	t.Run("PauseAndResume", func(t *testing.T) {
		e := start(t, ns)
		e.putSchedule(sched("s", store.OverlapSkip), base)
		paused := sched("s", store.OverlapSkip)
		paused.Enabled = false
		e.putSchedule(paused, at(time.Second))
		if e.getSchedule(acme, "s").Enabled {
			t.Fatal("schedule still enabled after a put with Enabled false")
		}
		// While paused, its tick neither fires nor advances.
		if res := e.fire(acme, "s", at(minute), at(minute)); res.Execution != nil || res.Advanced {
			t.Errorf("a paused schedule fired: %+v", res)
		}
		if due := e.dueSchedules(at(time.Hour)); len(due) != 0 {
			t.Errorf("a paused schedule is listed as due: %v", names(due))
		}
		// Resuming takes the caller's next tick: ticks of the pause are not
		// caught up.
		resumed := sched("s", store.OverlapSkip)
		resumed.NextRunAt = at(11 * minute)
		e.putSchedule(resumed, at(10*minute+time.Second))
		wantTime(t, "NextRunAt after resume", e.getSchedule(acme, "s").NextRunAt, at(11*minute))
		if e.liveOfSchedule(acme, "s") != 0 {
			t.Error("pausing or resuming created executions")
		}
	})

	t.Run("GetMissingAndOtherTenant", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		e.putSchedule(sched("s", store.OverlapSkip), base)
		_, err := e.s.GetSchedule(e.ctx, &store.GetScheduleParams{Tenant: acme, Name: "nope"})
		wantErr(t, "GetSchedule of a missing name", err, store.ErrNotFound)
		_, err = e.s.GetSchedule(e.ctx, &store.GetScheduleParams{Tenant: globex, Name: "s"})
		wantErr(t, "GetSchedule of another tenant's", err, store.ErrNotFound)
		err = e.s.DeleteSchedule(e.ctx, &store.DeleteScheduleParams{Tenant: globex, Name: "s"})
		wantErr(t, "DeleteSchedule of another tenant's", err, store.ErrNotFound)
		_, err = e.s.FireSchedule(e.ctx, &store.FireScheduleParams{Tenant: globex, Name: "s", Tick: base, Trigger: true, Now: base})
		wantErr(t, "FireSchedule of another tenant's", err, store.ErrNotFound)
		e.getSchedule(acme, "s")
	})

	t.Run("List", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		for i, name := range []string{"c", "a", "b"} {
			s := sched(name, store.OverlapSkip)
			s.NextRunAt = at(time.Duration(3-i) * minute) // c: 3m, a: 2m, b: 1m
			e.putSchedule(s, base)
		}
		g := sched("z", store.OverlapSkip)
		g.Tenant, g.NextRunAt = globex, at(90*time.Second)
		e.putSchedule(g, base)
		off := sched("off", store.OverlapSkip)
		off.Enabled = false
		e.putSchedule(off, base)

		all, err := e.s.ListSchedules(e.ctx, &store.ListSchedulesParams{Tenant: acme})
		e.must(err, "ListSchedules")
		if got := names(all); got != "a,b,c,off" {
			t.Errorf("acme's schedules by name = %s, want a,b,c,off", got)
		}
		if got := names(e.dueSchedules(at(2 * minute))); got != "b,z,a" {
			t.Errorf("due by 2m, earliest first = %s, want b,z,a", got)
		}
		lim, err := e.s.ListSchedules(e.ctx, &store.ListSchedulesParams{DueBy: at(time.Hour), Limit: 2})
		e.must(err, "ListSchedules with Limit")
		if got := names(lim); got != "b,z" {
			t.Errorf("due with Limit 2 = %s, want b,z", got)
		}
	})

	// Pages by After: each page starts after the last one's end, across
	// tenants (every tenant's) and within one, with nothing repeated or
	// skipped.
	t.Run("ListPages", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		for _, name := range []string{"d", "b", "a", "c"} {
			e.putSchedule(sched(name, store.OverlapSkip), base)
		}
		for _, name := range []string{"y", "x"} {
			g := sched(name, store.OverlapSkip)
			g.Tenant = globex
			e.putSchedule(g, base)
		}
		var got []string
		var after store.ScheduleRef
		for pages := 0; ; pages++ {
			if pages > 6 {
				t.Fatalf("paging by 2 did not end after %d pages: %v", pages, got)
			}
			page, err := e.s.ListSchedules(e.ctx, &store.ListSchedulesParams{Limit: 2, After: after})
			e.must(err, "ListSchedules page")
			for _, sc := range page {
				got = append(got, sc.Tenant+"/"+sc.Name)
			}
			if len(page) < 2 {
				break
			}
			last := page[len(page)-1]
			after = store.ScheduleRef{Tenant: last.Tenant, Name: last.Name}
		}
		if want := "acme/a,acme/b,acme/c,acme/d,globex/x,globex/y"; strings.Join(got, ",") != want {
			t.Errorf("every tenant's schedules in pages of 2 = %v, want %s", got, want)
		}
		page, err := e.s.ListSchedules(e.ctx, &store.ListSchedulesParams{Tenant: acme, Limit: 2,
			After: store.ScheduleRef{Tenant: acme, Name: "b"}})
		e.must(err, "ListSchedules of acme after b")
		if got := names(page); got != "c,d" {
			t.Errorf("acme's schedules after b, 2 at most = %s, want c,d", got)
		}
		page, err = e.s.ListSchedules(e.ctx, &store.ListSchedulesParams{Tenant: acme,
			After: store.ScheduleRef{Tenant: acme, Name: "d"}})
		e.must(err, "ListSchedules of acme after its last")
		if len(page) != 0 {
			t.Errorf("acme's schedules after d = %s, want none", names(page))
		}
	})

	t.Run("DeleteKeepsExecutions", func(t *testing.T) {
		e := start(t, ns)
		e.putSchedule(sched("s", store.OverlapSkip), base)
		x := fired(t, "tick", e.fire(acme, "s", at(minute), at(minute)), store.StatusQueued)
		e.must(e.s.DeleteSchedule(e.ctx, &store.DeleteScheduleParams{Tenant: acme, Name: "s"}), "DeleteSchedule")
		_, err := e.s.GetSchedule(e.ctx, &store.GetScheduleParams{Tenant: acme, Name: "s"})
		wantErr(t, "GetSchedule after delete", err, store.ErrNotFound)
		err = e.s.DeleteSchedule(e.ctx, &store.DeleteScheduleParams{Tenant: acme, Name: "s"})
		wantErr(t, "second DeleteSchedule", err, store.ErrNotFound)
		_, err = e.s.FireSchedule(e.ctx, &store.FireScheduleParams{Tenant: acme, Name: "s", Tick: at(2 * minute),
			Expected: at(2 * minute), Next: at(3 * minute), Now: at(2 * minute)})
		wantErr(t, "FireSchedule after delete", err, store.ErrNotFound)
		e.wantStatus(x.ID, store.StatusQueued)
		e.wantInflight(acme, 1)
	})

	t.Run("FireAdmitsTheTick", func(t *testing.T) {
		e := start(t, ns)
		s := sched("sweep", store.OverlapSkip)
		s.Priority, s.MaxAttempts, s.TimeoutSeconds, s.RateKey = 3, 5, 90, "target"
		e.putSchedule(s, base)
		now := at(minute + 250*time.Millisecond)
		res := e.fire(acme, "sweep", at(minute), now)
		x := fired(t, "tick", res, store.StatusQueued)
		if !res.Advanced {
			t.Error("a regular fire did not report Advanced")
		}
		want := fmt.Sprintf("schedule:sweep:%d", at(minute).Unix())
		if x.DedupKey != want || x.Schedule != "sweep" || x.Kind != "sweep" || x.Tenant != acme ||
			x.Priority != 3 || x.MaxAttempts != 5 || x.TimeoutSeconds != 90 || x.RateKey != "target" ||
			x.ConcurrencyKey != "schedule:sweep" || x.ConcurrencyLimit != 1 {
			t.Errorf("tick execution = %s, want dedup key %s, schedule sweep, concurrency key schedule:sweep/1 and the schedule's settings",
				show(x), want)
		}
		wantJSON(t, "tick payload", x.Payload, mustJSON(`{"city":"oslo"}`))
		sameExecution(t, "tick execution as stored", e.get(x.ID), x)
		got := e.getSchedule(acme, "sweep")
		wantTime(t, "NextRunAt after the tick", got.NextRunAt, at(2*minute))
		wantTimePtr(t, "LastRunAt after the tick", got.LastRunAt, at(minute))
		if got.LastExecutionID != x.ID {
			t.Errorf("LastExecutionID = %q, want %q", got.LastExecutionID, x.ID)
		}
		e.wantInflight(acme, 1)
	})

	t.Run("OverlapAllowHasNoConcurrencyKey", func(t *testing.T) {
		e := start(t, ns)
		e.putSchedule(sched("s", store.OverlapAllow), base)
		x := fired(t, "tick", e.fire(acme, "s", at(minute), at(minute)), store.StatusQueued)
		if x.ConcurrencyKey != "" {
			t.Errorf("overlap allow: concurrency key %q, want none", x.ConcurrencyKey)
		}
	})

	t.Run("FireOnceMovesOn", func(t *testing.T) {
		e := start(t, ns)
		e.putSchedule(sched("s", store.OverlapAllow), base)
		fired(t, "tick", e.fire(acme, "s", at(minute), at(minute)), store.StatusQueued)
		// A second server that read the same NextRunAt fires too late.
		if res := e.fire(acme, "s", at(minute), at(minute+time.Second)); res.Execution != nil || res.Advanced {
			t.Errorf("a second fire of a tick already fired did something: %+v", res)
		}
		wantTime(t, "NextRunAt", e.getSchedule(acme, "s").NextRunAt, at(2*minute))
		if n := len(e.list(store.ListParams{Tenant: acme, Schedule: "s"})); n != 1 {
			t.Errorf("I6: %d executions for one tick", n)
		}
	})

	t.Run("DropAdvancesWithoutFiring", func(t *testing.T) {
		e := start(t, ns)
		e.putSchedule(sched("s", store.OverlapSkip), base)
		res, err := e.s.FireSchedule(e.ctx, &store.FireScheduleParams{Tenant: acme, Name: "s",
			Tick: at(minute), Expected: at(minute), Next: at(10 * minute), Drop: true, Now: at(9 * minute)})
		e.must(err, "FireSchedule Drop")
		if res.Execution != nil || !res.Advanced {
			t.Errorf("Drop: %+v, want Advanced and no execution", res)
		}
		got := e.getSchedule(acme, "s")
		wantTime(t, "NextRunAt after Drop", got.NextRunAt, at(10*minute))
		if got.LastRunAt != nil {
			t.Errorf("Drop set LastRunAt %v", got.LastRunAt)
		}
		if n := len(e.list(store.ListParams{Tenant: acme})); n != 0 {
			t.Errorf("Drop created %d executions", n)
		}
	})

	t.Run("TriggerIsOffCycle", func(t *testing.T) {
		e := start(t, ns)
		s := sched("s", store.OverlapAllow)
		s.Enabled = false
		e.putSchedule(s, base)
		res := e.trigger(acme, "s", at(30*time.Second))
		x := fired(t, "trigger", res, store.StatusQueued)
		if res.Advanced {
			t.Error("a trigger moved NextRunAt")
		}
		if x.DedupKey != "" || x.Schedule != "s" {
			t.Errorf("trigger without an idempotency key: dedup key %q, schedule %q; want none and s", x.DedupKey, x.Schedule)
		}
		got := e.getSchedule(acme, "s")
		wantTime(t, "NextRunAt after trigger", got.NextRunAt, at(minute))
		wantTimePtr(t, "LastRunAt after trigger", got.LastRunAt, at(30*time.Second))
		if got.LastExecutionID != x.ID {
			t.Errorf("LastExecutionID = %q, want the trigger's %q", got.LastExecutionID, x.ID)
		}
	})

	// A trigger is a tick of its own: neither a second trigger of the same
	// second nor the regular tick of that second is merged into it.
	t.Run("TriggersOfOneSecondAreTicksOfTheirOwn", func(t *testing.T) {
		e := start(t, ns)
		e.putSchedule(sched("s", store.OverlapAllow), base)
		a := fired(t, "trigger 1", e.trigger(acme, "s", at(minute)), store.StatusQueued)
		b := fired(t, "trigger 2 of the same second", e.trigger(acme, "s", at(minute)), store.StatusQueued)
		c := fired(t, "regular tick of that second", e.fire(acme, "s", at(minute), at(minute)), store.StatusQueued)
		if a.ID == b.ID || b.ID == c.ID || a.ID == c.ID {
			t.Fatalf("two triggers and a tick of one second: executions %s, %s, %s; want three", a.ID, b.ID, c.ID)
		}
		if c.DedupKey != store.ScheduleDedupKey("s", at(minute)) {
			t.Errorf("regular tick dedup key %q, want %q", c.DedupKey, store.ScheduleDedupKey("s", at(minute)))
		}
		e.wantInflight(acme, 3)
	})

	t.Run("SecondTriggerWhileTheFirstRunsIsSkipped", func(t *testing.T) {
		e := start(t, ns)
		e.putSchedule(sched("s", store.OverlapSkip), base)
		first := fired(t, "trigger 1", e.trigger(acme, "s", at(minute)), store.StatusQueued)
		e.claimOne(acme, at(minute))
		sk := fired(t, "trigger 2 of the same second", e.trigger(acme, "s", at(minute)), store.StatusSkipped)
		if sk.ID == first.ID {
			t.Fatal("the second trigger answered the first's execution")
		}
		if got := e.getSchedule(acme, "s"); got.LastExecutionID != sk.ID {
			t.Errorf("LastExecutionID = %q, want the skipped trigger's %q", got.LastExecutionID, sk.ID)
		}
		e.wantInflight(acme, 1)
	})

	t.Run("TriggerIdempotencyKey", func(t *testing.T) {
		e := start(t, ns)
		e.putSchedule(sched("s", store.OverlapAllow), base)
		e.putSchedule(sched("other", store.OverlapAllow), base)
		keyed := func(name, key string, tick time.Time) *store.FireScheduleResult {
			t.Helper()
			res, err := e.s.FireSchedule(e.ctx, &store.FireScheduleParams{Tenant: acme, Name: name,
				Tick: tick, Trigger: true, IdempotencyKey: key, Now: tick})
			e.must(err, "trigger "+name+" with key "+key)
			return res
		}
		x := fired(t, "keyed trigger", keyed("s", "run-1", at(minute)), store.StatusQueued)
		if want := store.ScheduleTriggerDedupKey("s", "run-1"); x.DedupKey != want {
			t.Errorf("keyed trigger dedup key %q, want %q", x.DedupKey, want)
		}
		for _, tick := range []time.Time{at(minute), at(2 * minute)} {
			res := keyed("s", "run-1", tick)
			if res.Execution == nil || !res.Deduplicated || res.Execution.ID != x.ID {
				t.Fatalf("repeat of a keyed trigger at %s = %+v, want deduplicated onto %s", tick.Sub(base), res, x.ID)
			}
		}
		y := fired(t, "trigger with another key", keyed("s", "run-2", at(minute)), store.StatusQueued)
		z := fired(t, "same key on another schedule", keyed("other", "run-1", at(minute)), store.StatusQueued)
		if y.ID == x.ID || z.ID == x.ID {
			t.Errorf("another key or another schedule answered the first trigger's execution")
		}
		e.wantInflight(acme, 3)

		_, err := e.s.FireSchedule(e.ctx, &store.FireScheduleParams{Tenant: acme, Name: "s", Tick: at(3 * minute),
			Expected: at(minute), Next: at(2 * minute), IdempotencyKey: "run-3", Now: at(3 * minute)})
		wantErr(t, "a regular fire with an idempotency key", err, store.ErrInvalid)
	})

	t.Run("LateFireDoesNotMoveLastRunBack", func(t *testing.T) {
		e := start(t, ns)
		e.putSchedule(sched("s", store.OverlapAllow), base)
		tr := fired(t, "trigger", e.trigger(acme, "s", at(minute+30*time.Second)), store.StatusQueued)
		fired(t, "tick", e.fire(acme, "s", at(minute), at(minute+31*time.Second)), store.StatusQueued)
		got := e.getSchedule(acme, "s")
		wantTimePtr(t, "LastRunAt", got.LastRunAt, at(minute+30*time.Second))
		if got.LastExecutionID != tr.ID {
			t.Errorf("LastExecutionID = %q, want the later trigger's %q", got.LastExecutionID, tr.ID)
		}
	})

	t.Run("OverlapSkipRecordsSkippedTicks", func(t *testing.T) {
		e := start(t, ns)
		e.putSchedule(sched("s", store.OverlapSkip), base)
		first := fired(t, "tick 1", e.fire(acme, "s", at(minute), at(minute)), store.StatusQueued)

		// Tick 2 while tick 1 is queued: skipped, recorded, holding no slot.
		now := at(2*minute + time.Second)
		sk := fired(t, "tick 2", e.fire(acme, "s", at(2*minute), now), store.StatusSkipped)
		wantFinished(t, "skipped tick", sk, store.StatusSkipped, now)
		if sk.DedupKey != store.ScheduleDedupKey("s", at(2*minute)) || sk.Schedule != "s" || sk.Attempt != 0 {
			t.Errorf("skipped tick = %s", show(sk))
		}
		sameExecution(t, "skipped tick as stored", e.get(sk.ID), sk)
		// A skipped tick never runs: it keeps no copy of the schedule's
		// payload (issue 26: 512 KiB copied into every skipped second).
		if string(sk.Payload) != "null" || string(e.get(sk.ID).Payload) != "null" {
			t.Errorf("skipped tick's payload = %s, want null (not stored)", sk.Payload)
		}
		got := e.getSchedule(acme, "s")
		if got.LastExecutionID != sk.ID {
			t.Errorf("LastExecutionID = %q, want the skipped tick's %q", got.LastExecutionID, sk.ID)
		}
		wantTime(t, "NextRunAt after a skipped tick", got.NextRunAt, at(3*minute))
		e.wantInflight(acme, 1)
		if ls := e.list(store.ListParams{Tenant: acme, Status: store.StatusSkipped}); len(ls) != 1 || ls[0].ID != sk.ID {
			t.Errorf("listing skipped executions: %d, want the skipped tick", len(ls))
		}
		if l := e.claimOne(acme, now); l.ExecutionID != first.ID {
			t.Errorf("claimed %s, want tick 1 %s (a skipped tick never runs)", l.ExecutionID, first.ID)
		}
		e.claimNone(acme, now)
	})

	t.Run("OverlapSkipWhileRunningAndAfter", func(t *testing.T) {
		e := start(t, ns)
		e.putSchedule(sched("s", store.OverlapSkip), base)
		first := fired(t, "tick 1", e.fire(acme, "s", at(minute), at(minute)), store.StatusQueued)
		ls := e.claim(store.ClaimParams{Tenant: acme, Now: at(minute), LeaseDuration: 10 * minute})
		if len(ls) != 1 {
			t.Fatalf("claimed %d, want tick 1", len(ls))
		}
		l := ls[0]
		if l.ExecutionID != first.ID {
			t.Fatalf("claimed %s, want tick 1 %s", l.ExecutionID, first.ID)
		}
		if !e.getSchedule(acme, "s").Running {
			t.Error("Running = false while tick 1 runs")
		}
		fired(t, "tick 2 while tick 1 runs", e.fire(acme, "s", at(2*minute), at(2*minute)), store.StatusSkipped)
		_, err := e.complete(l, at(2*minute+time.Second), nil)
		e.must(err, "Complete tick 1")
		if e.getSchedule(acme, "s").Running {
			t.Error("Running = true after tick 1 finished")
		}
		fired(t, "tick 3 after tick 1 finished", e.fire(acme, "s", at(3*minute), at(3*minute)), store.StatusQueued)
		e.wantInflight(acme, 1)
	})

	t.Run("OverlapSkipCountsARetryWaiting", func(t *testing.T) {
		e := start(t, ns)
		e.putSchedule(sched("s", store.OverlapSkip), base)
		fired(t, "tick 1", e.fire(acme, "s", at(minute), at(minute)), store.StatusQueued)
		l := e.claimOne(acme, at(minute))
		x, err := e.fail(l, at(minute+time.Second), "boom", true, 5*minute)
		e.must(err, "Fail with retry")
		if x.Status != store.StatusScheduled {
			t.Fatalf("failed tick 1 is %s, want scheduled for its retry", x.Status)
		}
		fired(t, "tick 2 while tick 1 waits to retry", e.fire(acme, "s", at(2*minute), at(2*minute)), store.StatusSkipped)
	})

	t.Run("OverlapSkipIgnoresOtherTenantsAndSchedules", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		g := sched("s", store.OverlapSkip)
		g.Tenant = globex
		e.putSchedule(g, base)
		e.putSchedule(sched("s", store.OverlapSkip), base)
		e.putSchedule(sched("other", store.OverlapSkip), base)
		fired(t, "globex's s", e.fire(globex, "s", at(minute), at(minute)), store.StatusQueued)
		fired(t, "acme's other", e.fire(acme, "other", at(minute), at(minute)), store.StatusQueued)
		fired(t, "acme's s", e.fire(acme, "s", at(minute), at(minute)), store.StatusQueued)
	})

	t.Run("OverlapQueueNeverRunsTwo", func(t *testing.T) {
		e := start(t, ns)
		e.putSchedule(sched("s", store.OverlapQueue), base)
		var ids []string
		for i := 1; i <= 3; i++ {
			tick := at(time.Duration(i) * minute)
			ids = append(ids, fired(t, "tick", e.fire(acme, "s", tick, tick), store.StatusQueued).ID)
		}
		e.wantInflight(acme, 3)
		for i := range ids {
			now := at(5*minute + time.Duration(i)*time.Second)
			ls := e.claim(store.ClaimParams{Tenant: acme, Max: 10, Now: now})
			if len(ls) != 1 {
				t.Fatalf("I6: overlap queue: claim %d started %d of the schedule's executions, want 1", i, len(ls))
			}
			_, err := e.complete(ls[0], now, nil)
			e.must(err, "Complete")
		}
		e.wantInflight(acme, 0)
	})

	t.Run("OverlapAllowRunsTogether", func(t *testing.T) {
		e := start(t, ns)
		e.putSchedule(sched("s", store.OverlapAllow), base)
		for i := 1; i <= 2; i++ {
			tick := at(time.Duration(i) * minute)
			fired(t, "tick", e.fire(acme, "s", tick, tick), store.StatusQueued)
		}
		if ls := e.claim(store.ClaimParams{Tenant: acme, Max: 10, Now: at(3 * minute)}); len(ls) != 2 {
			t.Errorf("overlap allow: %d started together, want 2", len(ls))
		}
	})

	t.Run("QuotaExceededLeavesTheTickDue", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme, MaxInflight: 1})
		e.submit(acme, base, job("echo"))
		e.putSchedule(sched("s", store.OverlapAllow), base)
		_, err := e.s.FireSchedule(e.ctx, &store.FireScheduleParams{Tenant: acme, Name: "s",
			Tick: at(minute), Expected: at(minute), Next: at(2 * minute), Now: at(minute)})
		wantErr(t, "FireSchedule over quota", err, store.ErrQuotaExceeded)
		got := e.getSchedule(acme, "s")
		wantTime(t, "NextRunAt after a refused tick", got.NextRunAt, at(minute))
		if got.LastRunAt != nil || got.LastExecutionID != "" {
			t.Error("a refused tick was recorded as run")
		}
		if n := len(e.list(store.ListParams{Tenant: acme, Schedule: "s"})); n != 0 {
			t.Errorf("a refused tick left %d executions", n)
		}
		e.wantInflight(acme, 1)
	})

	t.Run("SkippedTickNeedsNoQuota", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme, MaxInflight: 1})
		e.putSchedule(sched("s", store.OverlapSkip), base)
		fired(t, "tick 1", e.fire(acme, "s", at(minute), at(minute)), store.StatusQueued)
		fired(t, "tick 2 at full quota", e.fire(acme, "s", at(2*minute), at(2*minute)), store.StatusSkipped)
		e.wantInflight(acme, 1)
	})

	t.Run("SkippedTicksArePruned", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme, Retention: time.Hour, DedupTTL: time.Hour})
		e.putSchedule(sched("s", store.OverlapSkip), base)
		fired(t, "tick 1", e.fire(acme, "s", at(minute), at(minute)), store.StatusQueued)
		sk := fired(t, "tick 2", e.fire(acme, "s", at(2*minute), at(2*minute)), store.StatusSkipped)
		e.prune(at(3*time.Hour), 0)
		e.gone(sk.ID)
	})

	t.Run("MaxSchedules", func(t *testing.T) {
		e := start(t, ns)
		put := func(name string) (*store.PutScheduleResult, error) {
			return e.s.PutSchedule(e.ctx, &store.PutScheduleParams{Schedule: sched(name, store.OverlapSkip),
				MaxSchedules: 2, Now: base})
		}
		for _, name := range []string{"a", "b"} {
			_, err := put(name)
			e.must(err, "PutSchedule "+name+" under the bound")
		}
		_, err := put("c")
		wantErr(t, "PutSchedule of a third with MaxSchedules 2", err, store.ErrScheduleLimit)
		_, err = e.s.GetSchedule(e.ctx, &store.GetScheduleParams{Tenant: acme, Name: "c"})
		wantErr(t, "GetSchedule of the refused one", err, store.ErrNotFound)
		res, err := put("a")
		e.must(err, "replacing a schedule at the bound")
		if res.Created {
			t.Error("a replace at the bound reported Created")
		}
		// The bound is the tenant's: another tenant has its own.
		e.createTenant(store.CreateTenantParams{Name: globex})
		o := sched("a", store.OverlapSkip)
		o.Tenant = globex
		_, err = e.s.PutSchedule(e.ctx, &store.PutScheduleParams{Schedule: o, MaxSchedules: 2, Now: base})
		e.must(err, "another tenant's first schedule")
		// A delete makes room; no bound (0) is no bound.
		e.must(e.s.DeleteSchedule(e.ctx, &store.DeleteScheduleParams{Tenant: acme, Name: "b"}), "DeleteSchedule")
		_, err = put("c")
		e.must(err, "PutSchedule after a delete made room")
		_, err = e.s.PutSchedule(e.ctx, &store.PutScheduleParams{Schedule: sched("d", store.OverlapSkip), Now: base})
		e.must(err, "PutSchedule without a bound")
	})

	t.Run("Concurrency", func(t *testing.T) { testScheduleConcurrency(t, ns) })
}

func (e *env) dueSchedules(by time.Time) []*store.Schedule {
	e.t.Helper()
	due, err := e.s.ListSchedules(e.ctx, &store.ListSchedulesParams{DueBy: by})
	e.must(err, "ListSchedules DueBy")
	return due
}

// names joins the schedules' names with commas.
func names(ss []*store.Schedule) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += ","
		}
		out += s.Name
	}
	return out
}

// testScheduleConcurrency races many servers over one schedule (I6).
func testScheduleConcurrency(t *testing.T, ns NewStore) {
	const servers = 16

	t.Run("EveryServerFiresTheSameTick", func(t *testing.T) {
		e := start(t, ns)
		e.putSchedule(sched("s", store.OverlapAllow), base)
		for i := 1; i <= 5; i++ {
			tick := at(time.Duration(i) * minute)
			var mu sync.Mutex
			ids := map[string]bool{}
			advanced := 0
			var errs []error
			together(servers, func(n int) {
				p := &store.FireScheduleParams{Tenant: acme, Name: "s", Tick: tick,
					Expected: tick, Next: tick.Add(minute), Now: tick.Add(time.Duration(n) * time.Millisecond)}
				if n%4 == 3 { // some servers repeat one trigger of the same second
					p = &store.FireScheduleParams{Tenant: acme, Name: "s", Tick: tick, Trigger: true,
						IdempotencyKey: fmt.Sprint("run-", i), Now: tick}
				}
				res, err := e.s.FireSchedule(e.ctx, p)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				if res.Execution != nil {
					ids[res.Execution.ID] = true
				}
				if res.Advanced {
					advanced++
				}
			})
			for _, err := range errs {
				t.Errorf("tick %d: FireSchedule: %v", i, err)
			}
			// One for the tick, one for the repeated trigger.
			if len(ids) != 2 || advanced != 1 {
				t.Fatalf("I6: tick %d fired by %d servers, one trigger repeated by others: %d distinct executions, advanced %d times; want 2 and 1",
					i, servers, len(ids), advanced)
			}
		}
		if n := len(e.list(store.ListParams{Tenant: acme, Schedule: "s"})); n != 10 {
			t.Errorf("I6: %d executions for 5 ticks and 5 triggers", n)
		}
		e.wantInflight(acme, 10)
	})

	t.Run("MaxSchedulesHoldsUnderRace", func(t *testing.T) {
		// Many servers create a tenant's schedules at once: the count and
		// the insert are one step, so the bound is never passed.
		e := start(t, ns)
		const limit, creators = 5, 24
		var mu sync.Mutex
		created, refused := 0, 0
		var errs []error
		together(creators, func(n int) {
			_, err := e.s.PutSchedule(e.ctx, &store.PutScheduleParams{
				Schedule: sched(fmt.Sprintf("s%02d", n), store.OverlapSkip), MaxSchedules: limit, Now: base})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				created++
			case errors.Is(err, store.ErrScheduleLimit):
				refused++
			default:
				errs = append(errs, err)
			}
		})
		for _, err := range errs {
			t.Errorf("PutSchedule: %v", err)
		}
		got, err := e.s.ListSchedules(e.ctx, &store.ListSchedulesParams{Tenant: acme})
		e.must(err, "ListSchedules")
		if created != limit || refused != creators-limit || len(got) != limit {
			t.Fatalf("%d creators with MaxSchedules %d: %d created, %d refused, %d stored; want %d, %d, %d",
				creators, limit, created, refused, len(got), limit, creators-limit, limit)
		}
	})

	t.Run("SkipAdmitsOneOfManyTicks", func(t *testing.T) {
		// Servers firing different ticks at once (a trigger storm): with
		// overlap skip exactly one becomes live, every other is skipped.
		e := start(t, ns)
		e.putSchedule(sched("s", store.OverlapSkip), base)
		var mu sync.Mutex
		status := map[store.Status]int{}
		together(32, func(n int) {
			tick := at(time.Duration(n+1) * time.Second)
			res, err := e.s.FireSchedule(e.ctx, &store.FireScheduleParams{Tenant: acme, Name: "s",
				Tick: tick, Trigger: true, Now: tick})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				status["error: "+store.Status(err.Error())]++
				return
			}
			status[res.Execution.Status]++
		})
		if status[store.StatusQueued] != 1 || status[store.StatusSkipped] != 31 {
			t.Errorf("I6: 32 concurrent ticks under overlap skip: %v, want 1 queued and 31 skipped", status)
		}
		if n := e.liveOfSchedule(acme, "s"); n != 1 {
			t.Errorf("I6: %d live executions of an overlap-skip schedule", n)
		}
		e.wantInflight(acme, 1)
	})

	t.Run("SkipRacesFinish", func(t *testing.T) {
		// Ticks fired while the live execution finishes on another server:
		// whatever the interleaving, never two live at once.
		e := start(t, ns)
		e.putSchedule(sched("s", store.OverlapSkip), base)
		now := at(minute)
		fired(t, "tick 0", e.trigger(acme, "s", now), store.StatusQueued)
		for round := range 20 {
			now = now.Add(time.Second)
			l := e.claimOne(acme, now)
			together(4, func(n int) {
				if n == 0 {
					_, _ = e.s.Complete(e.ctx, &store.CompleteParams{ExecutionID: l.ExecutionID, Tenant: acme, Token: l.Token, Now: now})
					return
				}
				tick := now.Add(time.Duration(n) * time.Millisecond)
				_, _ = e.s.FireSchedule(e.ctx, &store.FireScheduleParams{Tenant: acme, Name: "s", Tick: tick, Trigger: true, Now: now})
			})
			if n := e.liveOfSchedule(acme, "s"); n != 1 && n != 0 {
				t.Fatalf("I6: round %d: %d live executions of an overlap-skip schedule", round, n)
			}
			if e.liveOfSchedule(acme, "s") == 0 {
				now = now.Add(time.Second)
				e.trigger(acme, "s", now)
			}
		}
		e.wantInflight(acme, 1)
	})

	t.Run("QueueClaimRace", func(t *testing.T) {
		e := start(t, ns)
		e.putSchedule(sched("s", store.OverlapQueue), base)
		for i := 1; i <= 5; i++ {
			tick := at(time.Duration(i) * minute)
			fired(t, "tick", e.fire(acme, "s", tick, tick), store.StatusQueued)
		}
		var mu sync.Mutex
		started := 0
		together(servers, func(n int) {
			res, err := e.s.Claim(e.ctx, &store.ClaimParams{WorkerID: fmt.Sprint("w", n), Max: 3,
				LeaseDuration: leaseFor, Now: at(10 * minute)})
			if err != nil {
				return
			}
			mu.Lock()
			started += len(res.Leases)
			mu.Unlock()
		})
		if started != 1 {
			t.Errorf("I6: %d claimers started %d executions of an overlap-queue schedule, want 1", servers, started)
		}
	})
}
