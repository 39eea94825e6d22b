package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/latch-run/latch/schedule"
	"github.com/latch-run/latch/store"
)

// ResumeSchedule resumes the tenant's schedule name: enabled, its next
// tick the first after now() by its timing; the ticks missed while paused
// are not run. A schedule already enabled is answered unchanged. It writes
// nothing but enabled and the next tick (store.SetScheduleEnabled), so a
// PUT at the same time is never undone; the next tick is computed from the
// schedule as read, and the store applies it only while the schedule still
// has that timing: when a PUT changed it in between, the store answers the
// schedule as it is, still paused, and the tick is computed again from it.
// store.ErrNotFound when the tenant has no such schedule.
func ResumeSchedule(ctx context.Context, st store.Store, tenant, name string, now func() time.Time) (*store.Schedule, error) {
	sc, err := st.GetSchedule(ctx, &store.GetScheduleParams{Tenant: tenant, Name: name})
	for err == nil && !sc.Enabled {
		if err = ctx.Err(); err != nil {
			return nil, err // PUTs changing the timing faster than the store answers
		}
		spec, perr := schedule.Parse(sc.Cron, sc.Every, sc.Timezone)
		if perr != nil { // stored settings the API accepted
			return nil, fmt.Errorf("engine: resume schedule %q of tenant %q: %w", name, tenant, perr)
		}
		t := now()
		sc, err = st.SetScheduleEnabled(ctx, store.ResumeParams(sc, spec.Next(t), t))
	}
	if err != nil {
		return nil, err
	}
	return sc, nil
}
