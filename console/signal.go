package console

import (
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/latch-run/latch/store"
)

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
	x, ok := c.actionExecution(ctx, w, r)
	if !ok {
		return
	}
	back := "/executions/" + url.PathEscape(x.ID)
	var err error
	name := r.PostForm.Get("name")
	if signalFormOf(x, "") == nil || name != x.WaitingFor {
		c.refused(w, r, http.StatusConflict, backToExecution(x.ID), "Not waiting for that signal",
			"Execution "+x.ID+" is "+string(x.Status)+" and not waiting for signal "+name+" (the page was older than it).")
		return
	}
	var data []byte
	if raw := r.PostForm.Get("data"); raw != "" {
		if len(raw) > maxSignalData {
			c.refusedSignal(w, r, x, raw, "Data too large", "The signal's data is over 16 KiB.")
			return
		}
		if data, err = store.CanonicalJSON([]byte(raw)); err != nil {
			c.refusedSignal(w, r, x, raw, "Data is not JSON", "The signal's data must be a JSON value, or empty for null.")
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
	_, err = c.cfg.Store.Signal(ctx, &store.SignalParams{Tenant: x.Tenant, ExecutionID: x.ID, Name: name, Data: data,
		Now: c.cfg.Now()})
	switch {
	case errors.Is(err, store.ErrNotActive):
		c.refused(w, r, http.StatusConflict, backToExecution(x.ID), "Execution ended", "Execution "+x.ID+" ended before the signal was sent.")
		return
	case errors.Is(err, store.ErrSignalBufferFull):
		c.refused(w, r, http.StatusConflict, backToExecution(x.ID), "Too many signals kept",
			"Execution "+x.ID+" keeps as many signals as it may, none of them consumed by a wait; the signal was not sent.")
		return
	case err != nil:
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// signalForm is the form that sends the signal execution ID waits for,
// with Data typed in it.
type signalForm struct {
	ID     string
	Name   string
	WakeAt *time.Time
	Data   string
}

// signalFormOf is x's signal form, nil unless x waits for a signal (a
// wait for children is ended by them, a wait for an event by a publish,
// neither by a signal of its name).
func signalFormOf(x *store.Execution, data string) *signalForm {
	if x.Status != store.StatusSuspended || x.WaitingFor == "" {
		return nil
	}
	if _, children := store.ChildrenWaitStep(x.WaitingFor); children {
		return nil
	}
	if _, event := store.EventWaitName(x.WaitingFor); event {
		return nil
	}
	return &signalForm{ID: x.ID, Name: x.WaitingFor, WakeAt: x.WakeAt, Data: data}
}

// refusedSignal answers a signal whose data was refused: the reason, the
// form again with the data as typed, to mend and send, and the way back
// to the execution.
func (c *Console) refusedSignal(w http.ResponseWriter, r *http.Request, x *store.Execution, data, title, message string) {
	back := backToExecution(x.ID)
	c.render(w, r, http.StatusBadRequest, "error", errorPage{Title: title, Message: message + " Nothing was sent.",
		Back: &back, Signal: signalFormOf(x, data)})
}
