package engine

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/latch-run/latch/schedule"
	"github.com/latch-run/latch/store"
)

// putEveryMinute stores a schedule of the env's tenant ticking every minute
// (epoch-aligned), first due at the next whole minute after the clock.
func (e *env) putEveryMinute(name string, overlap store.Overlap, catchup store.Catchup) *store.Schedule {
	e.t.Helper()
	spec, err := schedule.Parse("", time.Minute, "UTC")
	if err != nil {
		e.t.Fatal(err)
	}
	res, err := e.st.PutSchedule(e.ctx, &store.PutScheduleParams{Schedule: store.Schedule{
		Tenant: e.tenant, Name: name, Every: time.Minute, Timezone: "UTC", Kind: "echo",
		Payload: json.RawMessage(`{}`), Overlap: overlap, Catchup: catchup, Enabled: true,
		NextRunAt: spec.Next(e.clock.Now()),
	}, Now: e.clock.Now()})
	if err != nil {
		e.t.Fatalf("PutSchedule: %v", err)
	}
	return res.Schedule
}

func (e *env) scheduler() *Scheduler {
	return NewScheduler(SchedulerConfig{Store: e.st, Now: e.clock.Now, Logger: e.log})
}

// ticks lists the dedup keys of the schedule's executions, oldest first.
func (e *env) ticks(name string) []string {
	e.t.Helper()
	res, err := e.st.List(e.ctx, &store.ListParams{Tenant: e.tenant, Schedule: name, Limit: 500})
	if err != nil {
		e.t.Fatal(err)
	}
	var keys []string
	for i := len(res.Items) - 1; i >= 0; i-- {
		keys = append(keys, res.Items[i].DedupKey)
	}
	return keys
}

func (e *env) nextRunAt(name string) time.Time {
	e.t.Helper()
	s, err := e.st.GetSchedule(e.ctx, &store.GetScheduleParams{Tenant: e.tenant, Name: name})
	if err != nil {
		e.t.Fatal(err)
	}
	return s.NextRunAt
}

func (e *env) runOnce(s *Scheduler) time.Duration {
	e.t.Helper()
	wait, err := s.RunOnce(e.ctx)
	if err != nil {
		e.t.Fatalf("RunOnce: %v", err)
	}
	return wait
}

func TestSchedulerFiresEachTickOnce(t *testing.T) {
	e := newEnv(t)
	sc := e.putEveryMinute("sweep", store.OverlapAllow, store.CatchupOne)
	s := e.scheduler()
	if got := e.ticks("sweep"); len(got) != 0 {
		t.Fatalf("fired %v before the first tick", got)
	}
	first := sc.NextRunAt
	e.clock.Advance(first.Sub(e.clock.Now()))
	e.runOnce(s)
	e.runOnce(s)
	want := []string{store.ScheduleDedupKey("sweep", first)}
	if got := e.ticks("sweep"); len(got) != 1 || got[0] != want[0] {
		t.Fatalf("after the first tick: %v, want %v", got, want)
	}
	if got := e.nextRunAt("sweep"); !got.Equal(first.Add(time.Minute)) {
		t.Errorf("NextRunAt = %s, want %s", got, first.Add(time.Minute))
	}
}

func TestSchedulerWaitsForTheNextTick(t *testing.T) {
	e := newEnv(t)
	sc := e.putEveryMinute("sweep", store.OverlapAllow, store.CatchupOne)
	s := e.scheduler()
	// Far from the tick: one Interval.
	if wait := e.runOnce(s); wait != DefaultSchedulerInterval && sc.NextRunAt.Sub(e.clock.Now()) > DefaultSchedulerInterval {
		t.Errorf("wait %s a minute before the tick, want the interval %s", wait, DefaultSchedulerInterval)
	}
	// 300ms before the tick: exactly that.
	e.clock.Advance(sc.NextRunAt.Sub(e.clock.Now()) - 300*time.Millisecond)
	if wait := e.runOnce(s); wait != 300*time.Millisecond {
		t.Errorf("wait %s 300ms before the tick", wait)
	}
}

func TestSchedulersOnManyServersFireOnePerTick(t *testing.T) {
	e := newEnv(t)
	sc := e.putEveryMinute("sweep", store.OverlapAllow, store.CatchupOne)
	servers := make([]*Scheduler, 6)
	for i := range servers {
		servers[i] = e.scheduler()
	}
	e.clock.Advance(sc.NextRunAt.Sub(e.clock.Now()))
	for range 10 {
		var wg sync.WaitGroup
		for _, s := range servers {
			wg.Go(func() {
				if _, err := s.RunOnce(e.ctx); err != nil {
					t.Errorf("RunOnce: %v", err)
				}
			})
		}
		wg.Wait()
		e.clock.Advance(time.Minute)
	}
	got := e.ticks("sweep")
	seen := map[string]bool{}
	for _, k := range got {
		if seen[k] {
			t.Errorf("I6: tick %s fired twice", k)
		}
		seen[k] = true
	}
	if len(got) != 10 {
		t.Errorf("I6: 6 schedulers over 10 ticks fired %d executions, want 10: %v", len(got), got)
	}
}

func TestSchedulerCatchupOneFiresOnceForMissedTicks(t *testing.T) {
	e := newEnv(t)
	sc := e.putEveryMinute("sweep", store.OverlapAllow, store.CatchupOne)
	s := e.scheduler()
	// Every server was down for ten ticks.
	e.clock.Advance(sc.NextRunAt.Sub(e.clock.Now()) + 10*time.Minute + 5*time.Second)
	e.runOnce(s)
	e.runOnce(s)
	if got := e.ticks("sweep"); len(got) != 1 || got[0] != store.ScheduleDedupKey("sweep", sc.NextRunAt) {
		t.Fatalf("catchup one after 11 missed ticks fired %v, want one run as the first missed tick", got)
	}
	want := sc.NextRunAt.Add(11 * time.Minute)
	if got := e.nextRunAt("sweep"); !got.Equal(want) {
		t.Errorf("NextRunAt after catch-up = %s, want the first tick after now %s", got, want)
	}
}

func TestSchedulerCatchupNoneDropsMissedTicks(t *testing.T) {
	e := newEnv(t)
	sc := e.putEveryMinute("sweep", store.OverlapAllow, store.CatchupNone)
	s := e.scheduler()
	e.clock.Advance(sc.NextRunAt.Sub(e.clock.Now()) + 10*time.Minute + 5*time.Second)
	e.runOnce(s)
	if got := e.ticks("sweep"); len(got) != 0 {
		t.Fatalf("catchup none fired missed ticks: %v", got)
	}
	next := sc.NextRunAt.Add(11 * time.Minute)
	if got := e.nextRunAt("sweep"); !got.Equal(next) {
		t.Fatalf("NextRunAt after dropping = %s, want %s", got, next)
	}
	// The schedule resumes on time.
	e.clock.Advance(next.Sub(e.clock.Now()))
	e.runOnce(s)
	if got := e.ticks("sweep"); len(got) != 1 || got[0] != store.ScheduleDedupKey("sweep", next) {
		t.Errorf("after resuming: %v, want the tick at %s", got, next)
	}
}

func TestSchedulerLateWithinGraceIsOnTime(t *testing.T) {
	e := newEnv(t)
	sc := e.putEveryMinute("sweep", store.OverlapAllow, store.CatchupNone)
	s := e.scheduler()
	// The server that should have fired it died; another comes 40s late.
	e.clock.Advance(sc.NextRunAt.Sub(e.clock.Now()) + 40*time.Second)
	e.runOnce(s)
	if got := e.ticks("sweep"); len(got) != 1 || got[0] != store.ScheduleDedupKey("sweep", sc.NextRunAt) {
		t.Errorf("a tick 40s late on a 1m schedule: %v, want it fired", got)
	}
}

func TestSchedulerRetriesATickRefusedByQuota(t *testing.T) {
	e := newEnv(t)
	one := 1
	if _, err := e.st.UpdateTenant(e.ctx, &store.UpdateTenantParams{Name: e.tenant, MaxInflight: &one}); err != nil {
		t.Fatal(err)
	}
	blocker := e.submit("echo", `{}`)
	sc := e.putEveryMinute("sweep", store.OverlapAllow, store.CatchupOne)
	s := e.scheduler()
	e.clock.Advance(sc.NextRunAt.Sub(e.clock.Now()))
	e.runOnce(s)
	if got := e.ticks("sweep"); len(got) != 0 {
		t.Fatalf("fired %v over quota", got)
	}
	if got := e.nextRunAt("sweep"); !got.Equal(sc.NextRunAt) {
		t.Fatalf("a refused tick moved NextRunAt to %s", got)
	}
	e.finish(blocker)
	e.clock.Advance(2 * time.Second)
	e.runOnce(s)
	if got := e.ticks("sweep"); len(got) != 1 || got[0] != store.ScheduleDedupKey("sweep", sc.NextRunAt) {
		t.Errorf("once a slot freed: %v, want the refused tick", got)
	}
}

func TestSchedulerLoopFiresAndStops(t *testing.T) {
	e := newEnv(t)
	sc := e.putEveryMinute("sweep", store.OverlapAllow, store.CatchupOne)
	e.clock.Advance(sc.NextRunAt.Sub(e.clock.Now()))
	s := NewScheduler(SchedulerConfig{Store: e.st, Now: e.clock.Now, Logger: e.log, Interval: 10 * time.Millisecond})
	if err := s.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitLimit)
	for len(e.ticks("sweep")) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the running scheduler never fired the due tick")
		}
		s.Kick()
		time.Sleep(5 * time.Millisecond)
	}
	if err := s.Stop(e.ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

// finish runs x to success (x must be the only claimable execution).
func (e *env) finish(x *store.Execution) {
	e.t.Helper()
	res, err := e.st.Claim(e.ctx, &store.ClaimParams{WorkerID: "w", Max: 1, Now: e.clock.Now()})
	if err != nil || len(res.Leases) != 1 || res.Leases[0].ExecutionID != x.ID {
		e.t.Fatalf("claim %s: %v %+v", x.ID, err, res)
	}
	l := res.Leases[0]
	if _, err := e.st.Complete(e.ctx, &store.CompleteParams{ExecutionID: l.ExecutionID, Token: l.Token, Now: e.clock.Now()}); err != nil {
		e.t.Fatal(err)
	}
}
