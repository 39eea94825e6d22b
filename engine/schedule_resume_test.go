package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// putBetween is a store on which a PUT changing the schedule's timing
// lands right after the first GetSchedule: between a resume's read and its
// write, deterministically.
type putBetween struct {
	store.Store
	put  *store.Schedule
	done bool
}

func (p *putBetween) GetSchedule(ctx context.Context, q *store.GetScheduleParams) (*store.Schedule, error) {
	sc, err := p.Store.GetSchedule(ctx, q)
	if err == nil && !p.done {
		p.done = true
		_, err = p.PutSchedule(ctx, &store.PutScheduleParams{Schedule: *p.put, Now: p.put.UpdatedAt})
	}
	return sc, err
}

// TestResumeScheduleAfterAPut: a resume whose read was overtaken by a PUT
// changing the timing takes the next tick of the new timing, never one of
// the replaced timing, and keeps the PUT's settings.
func TestResumeScheduleAfterAPut(t *testing.T) {
	e := newEnv(t)
	now := e.clock.Now() // 03:04:05
	put := func(cron string) *store.Schedule {
		return &store.Schedule{Tenant: e.tenant, Name: "s", Cron: cron, Timezone: "UTC", Kind: "echo",
			Overlap: store.OverlapSkip, Catchup: store.CatchupOne, Enabled: false,
			NextRunAt: now.Add(time.Hour), UpdatedAt: now}
	}
	if _, err := e.st.PutSchedule(e.ctx, &store.PutScheduleParams{Schedule: *put("10 * * * *"), Now: now}); err != nil {
		t.Fatal(err)
	}
	st := &putBetween{Store: e.st, put: put("40 * * * *")}
	sc, err := ResumeSchedule(e.ctx, st, e.tenant, "s", e.clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	if !st.done || !sc.Enabled || sc.Cron != "40 * * * *" {
		t.Fatalf("resume after a PUT: put %v, enabled %v, cron %q", st.done, sc.Enabled, sc.Cron)
	}
	if want := time.Date(2030, 1, 2, 3, 40, 0, 0, time.UTC); !sc.NextRunAt.Equal(want) {
		t.Fatalf("next_run_at %s, want %s (the new cron's); 03:10 would be the replaced one's", sc.NextRunAt, want)
	}
	// Resuming an enabled schedule changes nothing.
	again, err := ResumeSchedule(e.ctx, e.st, e.tenant, "s", func() time.Time { return now.Add(time.Hour) })
	if err != nil || !again.NextRunAt.Equal(sc.NextRunAt) || !again.UpdatedAt.Equal(sc.UpdatedAt) {
		t.Fatalf("second resume: %+v, %v", again, err)
	}
	if _, err := ResumeSchedule(e.ctx, e.st, e.tenant, "missing", e.clock.Now); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("resume of a missing schedule: %v", err)
	}
}
