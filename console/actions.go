package console

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/latch-run/latch/schedule"
	"github.com/latch-run/latch/store"
)

// The console's actions that need a second look: force delete and retry
// an execution, send the signal a suspended execution waits for, pause and
// resume a schedule. Each is a POST form; a POST without confirm=yes
// changes nothing and answers a confirmation page whose form sends the
// same fields again with confirm=yes, so the step needs no script. Like
// every POST they are refused cross-origin (New wraps the mux in
// http.CrossOriginProtection), and each reads its target with the
// request's tenant scope first: another tenant's execution or schedule is
// not found, before and after the confirmation. A refused action says why
// on an error page and changes nothing.

// maxActionForm bounds an action's form; a signal's data is most of it.
const maxActionForm = 64 << 10

type confirmPage struct {
	Title   string
	Message string
	Action  string // the form's action
	Fields  []formField
	Button  string
	Back    string // where "Go back" leads
	Danger  bool   // the action destroys something
}

type formField struct{ Name, Value string }

// parseAction reads an action's form. false when it answered already.
func parseAction(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxActionForm)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return false
	}
	return true
}

// confirmed reports whether the form carries the confirmation; if not it
// answers page, which sends the form's fields again with it.
func (c *Console) confirmed(w http.ResponseWriter, r *http.Request, page confirmPage) bool {
	if r.PostForm.Get("confirm") == "yes" {
		return true
	}
	page.Action = r.URL.Path
	for _, name := range []string{"tenant", "name", "data"} {
		if v, ok := r.PostForm[name]; ok && len(v) > 0 {
			page.Fields = append(page.Fields, formField{Name: name, Value: v[0]})
		}
	}
	c.render(w, r, http.StatusOK, "confirm", page)
	return false
}

// refused answers an action the store refused for a reason the person can
// act on; status is 409 unless given.
func (c *Console) refused(w http.ResponseWriter, r *http.Request, status int, title, message string) {
	c.render(w, r, status, "error", errorPage{Title: title, Message: message + " Nothing was changed."})
}

// deleteExecution is POST /executions/{id}/delete: a force delete, after
// confirmation. The execution goes at once whatever its status, with its
// journal and signals; a worker holding its lease loses it.
func (c *Console) deleteExecution(w http.ResponseWriter, r *http.Request) {
	if !parseAction(w, r) {
		return
	}
	ctx, cancel := c.storeCtx(r)
	defer cancel()
	tenant := identityFrom(r.Context()).Tenant
	x, err := c.cfg.Store.Get(ctx, &store.GetParams{Tenant: tenant, ID: r.PathValue("id")})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	back := "/executions/" + url.PathEscape(x.ID)
	msg := "Execution " + x.ID + " (" + x.Kind + ", " + string(x.Status) + ") and its steps, signals and attempt history will be deleted for good."
	if !x.Status.Terminal() {
		msg += " It is " + string(x.Status) + ": it will never finish, and a worker running it loses its lease."
	}
	if !c.confirmed(w, r, confirmPage{Title: "Delete this execution?", Message: msg, Button: "Delete", Back: back, Danger: true}) {
		return
	}
	if err := c.cfg.Store.Delete(ctx, &store.DeleteParams{Tenant: tenant, ID: x.ID, Force: true, Now: c.cfg.Now()}); err != nil {
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/executions?deleted="+url.QueryEscape(x.ID), http.StatusSeeOther)
}

// retryExecution is POST /executions/{id}/retry: a failed execution queued
// again keeping its journal, after confirmation. It takes a quota slot.
func (c *Console) retryExecution(w http.ResponseWriter, r *http.Request) {
	if !parseAction(w, r) {
		return
	}
	ctx, cancel := c.storeCtx(r)
	defer cancel()
	tenant := identityFrom(r.Context()).Tenant
	x, err := c.cfg.Store.Get(ctx, &store.GetParams{Tenant: tenant, ID: r.PathValue("id")})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	back := "/executions/" + url.PathEscape(x.ID)
	if x.Status != store.StatusFailed { // asked before confirming; Retry checks again
		c.refused(w, r, http.StatusConflict, "Not failed", "Only a failed execution can be retried.")
		return
	}
	if !c.confirmed(w, r, confirmPage{Title: "Retry this execution?", Button: "Retry", Back: back,
		Message: "Execution " + x.ID + " (" + x.Kind + ") will be queued again with fresh attempts, keeping the steps it recorded. It takes one of tenant " + x.Tenant + "'s in-flight slots."}) {
		return
	}
	_, err = c.cfg.Store.Retry(ctx, &store.RetryParams{Tenant: tenant, ID: x.ID, Now: c.cfg.Now()})
	switch {
	case errors.Is(err, store.ErrQuotaExceeded):
		c.refused(w, r, http.StatusConflict, "Quota exceeded",
			"Tenant "+x.Tenant+" has as many executions in flight as its quota (max_inflight) allows, so the execution stays failed.")
		return
	case errors.Is(err, store.ErrNotFailed):
		c.refused(w, r, http.StatusConflict, "Not failed", "Only a failed execution can be retried.")
		return
	case err != nil:
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// maxSignalData bounds the data of a signal sent from the console.
const maxSignalData = 16 << 10

// signalExecution is POST /executions/{id}/signal: sends the signal the
// execution is waiting for (its WaitingFor; the form cannot name another),
// with the form's JSON data (empty = null), after confirmation: the
// approval button.
func (c *Console) signalExecution(w http.ResponseWriter, r *http.Request) {
	if !parseAction(w, r) {
		return
	}
	ctx, cancel := c.storeCtx(r)
	defer cancel()
	tenant := identityFrom(r.Context()).Tenant
	x, err := c.cfg.Store.Get(ctx, &store.GetParams{Tenant: tenant, ID: r.PathValue("id")})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	back := "/executions/" + url.PathEscape(x.ID)
	name := r.PostForm.Get("name")
	if x.Status != store.StatusSuspended || x.WaitingFor == "" || name != x.WaitingFor {
		c.refused(w, r, http.StatusConflict, "Not waiting for that signal",
			"Execution "+x.ID+" is "+string(x.Status)+" and not waiting for signal "+name+" (the page was older than it).")
		return
	}
	var data []byte
	if raw := r.PostForm.Get("data"); raw != "" {
		if len(raw) > maxSignalData {
			c.refused(w, r, http.StatusBadRequest, "Data too large", "The signal's data is over 16 KiB.")
			return
		}
		if data, err = store.CanonicalJSON([]byte(raw)); err != nil {
			c.refused(w, r, http.StatusBadRequest, "Data is not JSON", "The signal's data must be a JSON value, or empty for null.")
			return
		}
		if string(data) == "null" {
			data = nil
		}
	}
	shown := "null"
	if data != nil {
		shown = string(data)
	}
	if !c.confirmed(w, r, confirmPage{Title: "Send signal " + name + "?", Button: "Send " + name, Back: back,
		Message: "Execution " + x.ID + " (" + x.Kind + ") is waiting for signal " + name + ". It will resume with the data " + shown + "."}) {
		return
	}
	_, err = c.cfg.Store.Signal(ctx, &store.SignalParams{Tenant: tenant, ExecutionID: x.ID, Name: name, Data: data,
		Now: c.cfg.Now()})
	switch {
	case errors.Is(err, store.ErrNotActive):
		c.refused(w, r, http.StatusConflict, "Execution ended", "Execution "+x.ID+" ended before the signal was sent.")
		return
	case err != nil:
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// pauseSchedule is POST /schedules/pause and resumeSchedule POST
// /schedules/resume (form fields tenant and name).
func (c *Console) pauseSchedule(w http.ResponseWriter, r *http.Request) {
	c.enableSchedule(w, r, false)
}
func (c *Console) resumeSchedule(w http.ResponseWriter, r *http.Request) {
	c.enableSchedule(w, r, true)
}

// enableSchedule pauses (enabled false) or resumes a schedule, after
// confirmation, keeping every other setting: the schedule is read and put
// back with Enabled changed. A resumed schedule's next run is its first
// tick after now (the store keeps a next run only while enabled); the
// ticks missed while paused are not caught up.
//
// The read and the put are two steps: a change to the schedule's settings
// through the API between them is overwritten with what was read.
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
		c.refused(w, r, http.StatusConflict, "Already "+state, "Schedule "+s.Name+" is "+state+" already.")
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
	spec, err := schedule.Parse(s.Cron, s.Every, s.Timezone)
	if err != nil {
		c.fail(w, r, err) // stored settings the API accepted: the server's log says why
		return
	}
	now := c.cfg.Now()
	next := *s
	next.Enabled = enabled
	next.NextRunAt = spec.Next(now)
	next.Running = false
	if _, err := c.cfg.Store.PutSchedule(ctx, &store.PutScheduleParams{Schedule: next, Now: now}); err != nil {
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}
