package console

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/latch-run/latch/store"
)

// The execution page's confirmed actions on the execution itself (the
// confirmation is actions.go's).

// deleteExecution is POST /executions/{id}/delete: a force delete, after
// confirmation. The execution goes at once whatever its status, with its
// journal and signals; a worker holding its lease loses it.
func (c *Console) deleteExecution(w http.ResponseWriter, r *http.Request) {
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
	msg := "Execution " + x.ID + " (" + x.Kind + ", " + string(x.Status) + ") and its steps, signals and attempt history will be deleted for good."
	if !x.Status.Terminal() {
		msg += " It is " + string(x.Status) + ": it will never finish, and a worker running it loses its lease."
	}
	if !c.confirmed(w, r, confirmPage{Title: "Delete this execution?", Message: msg, Button: "Delete", Back: back, Danger: true}) {
		return
	}
	if err := c.cfg.Store.Delete(ctx, &store.DeleteParams{Tenant: x.Tenant, ID: x.ID, Force: true, Now: c.cfg.Now()}); err != nil {
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
	x, ok := c.actionExecution(ctx, w, r)
	if !ok {
		return
	}
	back := "/executions/" + url.PathEscape(x.ID)
	if x.Status != store.StatusFailed { // asked before confirming; Retry checks again
		c.refused(w, r, http.StatusConflict, backToExecution(x.ID), "Not failed", "Only a failed execution can be retried.")
		return
	}
	if !c.confirmed(w, r, confirmPage{Title: "Retry this execution?", Button: "Retry", Back: back,
		Message: retryMessage(x)}) {
		return
	}
	_, err := c.cfg.Store.Retry(ctx, &store.RetryParams{Tenant: x.Tenant, ID: x.ID, Now: c.cfg.Now()})
	switch {
	case errors.Is(err, store.ErrQuotaExceeded):
		c.refused(w, r, http.StatusConflict, backToExecution(x.ID), "Quota exceeded",
			"Tenant "+x.Tenant+" has as many executions in flight as its quota (max_inflight) allows, so the execution stays failed.")
		return
	case errors.Is(err, store.ErrNotFailed):
		c.refused(w, r, http.StatusConflict, backToExecution(x.ID), "Not failed", "Only a failed execution can be retried.")
		return
	case err != nil:
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// retryMessage says what a retry of failed x will do: queue it again, or,
// for a child spawned with on_parent_end cancel, cancel it if its parent
// has ended by then (the store decides; docs/flows.md, Children).
func retryMessage(x *store.Execution) string {
	msg := "Execution " + x.ID + " (" + x.Kind + ") will be queued again with fresh attempts, keeping the steps it recorded. It takes one of tenant " + x.Tenant + "'s in-flight slots."
	if x.ParentID != "" && x.OnParentEnd != store.ParentEndAbandon {
		msg += " It is a child of " + x.ParentID + ": if its parent has ended or is being cancelled, the retry cancels it instead."
	}
	return msg
}
