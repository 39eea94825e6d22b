package console

import (
	"context"
	"net/http"
	"net/url"

	"github.com/latch-run/latch/store"
)

// The console's actions, each with a second look: cancel, force delete
// and retry an execution, send the signal a suspended execution waits
// for, run a schedule now, pause and resume it. Each is a POST form; a POST without confirm=yes
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

// refused answers an action refused for a reason the person can act on,
// with a link back to what it acted on.
func (c *Console) refused(w http.ResponseWriter, r *http.Request, status int, back link, title, message string) {
	c.render(w, r, status, "error", errorPage{Title: title, Message: message + " Nothing was changed.", Back: &back})
}

// backToExecution is the link back to execution id's page.
func backToExecution(id string) link {
	return link{Href: "/executions/" + url.PathEscape(id), Text: "Back to execution " + id}
}

// backToSchedule is the link back to a schedule's page.
func backToSchedule(tenant, name string) link {
	return link{Href: scheduleURL(tenant, name), Text: "Back to schedule " + name}
}

// actionExecution reads the execution an action on /executions/{id}/...
// targets, in the request's tenant scope (another tenant's is not found).
// false when it answered already.
func (c *Console) actionExecution(ctx context.Context, w http.ResponseWriter, r *http.Request) (*store.Execution, bool) {
	x, err := c.cfg.Store.Get(ctx, &store.GetParams{Tenant: identityFrom(r.Context()).Tenant, ID: r.PathValue("id")})
	if err != nil {
		c.fail(w, r, err)
		return nil, false
	}
	return x, true
}
