package console

import (
	"errors"
	"net/http"
	"net/url"

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
	_, err = c.cfg.Store.Signal(ctx, &store.SignalParams{Tenant: x.Tenant, ExecutionID: x.ID, Name: name, Data: data,
		Now: c.cfg.Now()})
	switch {
	case errors.Is(err, store.ErrNotActive):
		c.refused(w, r, http.StatusConflict, "Execution ended", "Execution "+x.ID+" ended before the signal was sent.")
		return
	case errors.Is(err, store.ErrSignalBufferFull):
		c.refused(w, r, http.StatusConflict, "Too many signals kept",
			"Execution "+x.ID+" keeps as many signals as it may, none of them consumed by a wait; the signal was not sent.")
		return
	case err != nil:
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}
