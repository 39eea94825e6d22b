package console

import (
	"net/http"

	"github.com/latch-run/latch/schedule"
	"github.com/latch-run/latch/store"
)

// pauseSchedule is POST /schedules/pause and resumeSchedule POST
// /schedules/resume (form fields tenant and name).
func (c *Console) pauseSchedule(w http.ResponseWriter, r *http.Request) {
	c.enableSchedule(w, r, false)
}
func (c *Console) resumeSchedule(w http.ResponseWriter, r *http.Request) {
	c.enableSchedule(w, r, true)
}

// enableSchedule pauses (enabled false) or resumes a schedule, after
// confirmation, writing nothing else (SetScheduleEnabled;
// store.ResumeSchedule). A resumed schedule's next run is its first tick
// after now, by the timing it has then; the ticks missed while paused are
// not caught up.
func (c *Console) enableSchedule(w http.ResponseWriter, r *http.Request, enabled bool) {
	if !parseAction(w, r) {
		return
	}
	ref, ok := scheduleRef(r, r.PostForm)
	if !ok {
		c.fail(w, r, store.ErrNotFound)
		return
	}
	ctx, cancel := c.storeCtx(r)
	defer cancel()
	s, err := c.cfg.Store.GetSchedule(ctx, &store.GetScheduleParams{Tenant: ref.Tenant, Name: ref.Name})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	back := scheduleURL(s.Tenant, s.Name)
	if s.Enabled == enabled {
		state := "paused"
		if enabled {
			state = "running"
		}
		c.refused(w, r, http.StatusConflict, backToSchedule(s.Tenant, s.Name), "Already "+state, "Schedule "+s.Name+" is "+state+" already.")
		return
	}
	page := confirmPage{Title: "Pause schedule " + s.Name + "?", Button: "Pause", Back: back,
		Message: "Schedule " + s.Name + " of tenant " + s.Tenant + " will fire no tick until it is resumed. Executions it fired carry on; Run now still works."}
	if enabled {
		page = confirmPage{Title: "Resume schedule " + s.Name + "?", Button: "Resume", Back: back,
			Message: "Schedule " + s.Name + " of tenant " + s.Tenant + " will fire again from its next tick. Ticks missed while it was paused are not run."}
	}
	if !c.confirmed(w, r, page) {
		return
	}
	if enabled {
		_, err = store.ResumeSchedule(ctx, c.cfg.Store, s.Tenant, s.Name, c.cfg.Now, schedule.NextTick)
	} else {
		_, err = c.cfg.Store.SetScheduleEnabled(ctx, &store.SetScheduleEnabledParams{Tenant: s.Tenant, Name: s.Name, Now: c.cfg.Now()})
	}
	if err != nil {
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}
