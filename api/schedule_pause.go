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
// next tick the first after now by the timing it has then (never one of a
// timing a concurrent PUT replaced); the ticks missed while paused are not
// run. Resuming an enabled schedule answers it unchanged. Only enabled and
// the next tick are written (store.ResumeSchedule), so a concurrent PUT
// is never undone.
func (s *Server) resumeSchedule(ctx context.Context, req *scheduleName) (*scheduleView, error) {
	owner, err := principalFrom(ctx).ownerOf(scheduleOwner)
	if err != nil {
		return nil, err
	}
	sc, err := store.ResumeSchedule(ctx, s.cfg.Store, owner, req.name, s.cfg.Now, schedule.NextTick)
	if err != nil {
		return nil, scheduleErr(err, req.name)
	}
	s.scheduleChanged()
	return toSchedule(sc), nil
}
