package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// oneSchedule is a Store of one schedule whose GetSchedule and
// SetScheduleEnabled keep the contract's rules (a resume applies only
// while the schedule has the timing it was computed from); replace, when
// set, is the replace that lands right after the first GetSchedule:
// between a resume's read and its write, deterministically.
type oneSchedule struct {
	Store   // nil: only the two methods below are called
	sc      Schedule
	replace *Schedule
	writes  int
}

func (o *oneSchedule) GetSchedule(_ context.Context, p *GetScheduleParams) (*Schedule, error) {
	if p.Tenant != o.sc.Tenant || p.Name != o.sc.Name {
		return nil, ErrNotFound
	}
	read := o.sc
	if o.replace != nil {
		o.sc, o.replace = *o.replace, nil
	}
	return &read, nil
}

func (o *oneSchedule) SetScheduleEnabled(_ context.Context, p *SetScheduleEnabledParams) (*Schedule, error) {
	o.writes++
	if p.Tenant != o.sc.Tenant || p.Name != o.sc.Name {
		return nil, ErrNotFound
	}
	asRead := &Schedule{Cron: p.Cron, Every: p.Every, Timezone: p.Timezone}
	if p.Enabled && !o.sc.Enabled && o.sc.SameTiming(asRead) {
		o.sc.Enabled, o.sc.NextRunAt, o.sc.UpdatedAt = true, p.NextRunAt, p.Now
	}
	sc := o.sc
	return &sc, nil
}

// everyTick is a next tick of interval timings only, from the Unix epoch.
func everyTick(_ string, every time.Duration, _ string, after time.Time) (time.Time, error) {
	if every <= 0 {
		return time.Time{}, errors.New("no interval")
	}
	s := int64(every / time.Second)
	return time.Unix((after.Unix()/s+1)*s, 0).UTC(), nil
}

// TestResumeScheduleAfterAReplace: a resume whose read was overtaken by a
// replace changing the timing takes the next tick of the new timing, never
// one of the replaced timing, and keeps the replace's settings.
func TestResumeScheduleAfterAReplace(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { return now }
	paused := func(every time.Duration, kind string) *Schedule {
		return &Schedule{Tenant: "acme", Name: "s", Every: every, Timezone: "UTC", Kind: kind,
			NextRunAt: now.Add(time.Hour), UpdatedAt: now}
	}
	st := &oneSchedule{sc: *paused(10*time.Minute, "a"), replace: paused(40*time.Minute, "b")}
	sc, err := ResumeSchedule(ctx, st, "acme", "s", clock, everyTick)
	if err != nil {
		t.Fatal(err)
	}
	if st.writes != 2 || !sc.Enabled || sc.Every != 40*time.Minute || sc.Kind != "b" {
		t.Fatalf("resume after a replace: %d writes, %+v", st.writes, sc)
	}
	if want := time.Date(2030, 1, 2, 3, 20, 0, 0, time.UTC); !sc.NextRunAt.Equal(want) {
		t.Fatalf("next_run_at %s, want %s (every 40m's); 03:10 would be the replaced every 10m's", sc.NextRunAt, want)
	}
	// Resuming an enabled schedule writes nothing.
	again, err := ResumeSchedule(ctx, st, "acme", "s", func() time.Time { return now.Add(time.Hour) }, everyTick)
	if err != nil || st.writes != 2 || !again.NextRunAt.Equal(sc.NextRunAt) || !again.UpdatedAt.Equal(sc.UpdatedAt) {
		t.Fatalf("second resume: %+v, %v, %d writes", again, err, st.writes)
	}
	if _, err := ResumeSchedule(ctx, st, "acme", "missing", clock, everyTick); !errors.Is(err, ErrNotFound) {
		t.Fatalf("resume of a missing schedule: %v", err)
	}
	// A timing next refuses (not one the API accepts) is an error, and
	// nothing is written.
	st = &oneSchedule{sc: Schedule{Tenant: "acme", Name: "s", Cron: "0 * * * *"}}
	if _, err := ResumeSchedule(ctx, st, "acme", "s", clock, everyTick); err == nil || st.writes != 0 || st.sc.Enabled {
		t.Fatalf("resume of a timing next refuses: %v, %d writes", err, st.writes)
	}
	// A cancelled context ends the resume before any write.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	st = &oneSchedule{sc: *paused(10*time.Minute, "a")}
	if _, err := ResumeSchedule(cancelled, st, "acme", "s", clock, everyTick); !errors.Is(err, context.Canceled) || st.writes != 0 {
		t.Fatalf("resume with a cancelled context: %v, %d writes", err, st.writes)
	}
}
