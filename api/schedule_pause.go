package api

import (
	"context"

	"github.com/latch-run/latch/schedule"
	"github.com/latch-run/latch/store"
)

// pauseSchedule is POST /api/schedules/{name}/pause: enabled false, in one
// store step that changes nothing else (store.SetScheduleEnabled), so a
// PUT running beside it is never undone. Pausing a paused schedule
// answers it unchanged.
func (s *Server) pauseSchedule(ctx context.Context, req *scheduleName) (*scheduleView, error) {
	owner, err := principalFrom(ctx).ownerOf(scheduleOwner)
	if err != nil {
		return nil, err
	}
	sc, err := s.cfg.Store.SetScheduleEnabled(ctx, &store.SetScheduleEnabledParams{
		Tenant: owner, Name: req.name, Now: s.cfg.Now()})
	if err != nil {
		return nil, scheduleErr(err, req.name)
	}
	s.scheduleChanged()
	return toSchedule(sc), nil
}

// resumeSchedule is POST /api/schedules/{name}/resume: enabled true, its
// next tick the first after now by its timing; the ticks missed while
// paused are not run. Resuming an enabled schedule answers it unchanged.
// The next tick is computed from the schedule as read, and the store
// applies the resume only while the schedule still has that timing; when
// a PUT changed it in between, the store answers the schedule as it is now
// and the next tick is computed again from it. Nothing but enabled and
// the next tick is ever written, so a concurrent PUT is never undone.
func (s *Server) resumeSchedule(ctx context.Context, req *scheduleName) (*scheduleView, error) {
	owner, err := principalFrom(ctx).ownerOf(scheduleOwner)
	if err != nil {
		return nil, err
	}
	sc, err := s.cfg.Store.GetSchedule(ctx, &store.GetScheduleParams{Tenant: owner, Name: req.name})
	for err == nil && !sc.Enabled {
		if err = ctx.Err(); err != nil {
			break // PUTs changing the timing faster than the store answers
		}
		var spec *schedule.Spec
		if spec, err = schedule.Parse(sc.Cron, sc.Every, sc.Timezone); err != nil {
			break // stored settings the API accepted: the log says why
		}
		now := s.cfg.Now()
		sc, err = s.cfg.Store.SetScheduleEnabled(ctx, store.ResumeParams(sc, spec.Next(now), now))
	}
	if err != nil {
		return nil, scheduleErr(err, req.name)
	}
	s.scheduleChanged()
	return toSchedule(sc), nil
}
