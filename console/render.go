package console

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"time"

	"github.com/latch-run/latch/auth"
	"github.com/latch-run/latch/store"
)

// pageNames are the templates under templates/, each rendered inside
// layout.html.
var pageNames = []string{"login", "executions", "execution", "schedules", "schedule", "overview", "tenants",
	"limits", "subscriptions", "confirm", "error"}

var funcs = template.FuncMap{
	// when is a time in UTC to the second; "" for none.
	"when": func(v any) string {
		switch t := v.(type) {
		case time.Time:
			if t.IsZero() {
				return ""
			}
			return t.UTC().Format("2006-01-02 15:04:05Z")
		case *time.Time:
			if t == nil || t.IsZero() {
				return ""
			}
			return t.UTC().Format("2006-01-02 15:04:05Z")
		}
		return ""
	},
	"terminal": func(s store.Status) bool { return s.Terminal() },
	// age is how long before now t was, as "3m 05s"; "" for none.
	"age": func(now time.Time, v any) string {
		t, ok := v.(time.Time)
		if p, isPtr := v.(*time.Time); isPtr {
			if p == nil {
				return ""
			}
			t, ok = *p, true
		}
		if !ok || t.IsZero() {
			return ""
		}
		return span(now.Sub(t))
	},
	// span is a duration as "3m 05s" (its sign dropped).
	"span": span,
	// traceID is the trace id of a W3C traceparent; "" for none.
	"traceID": func(tp string) string {
		if !store.ValidTraceParent(tp) {
			return ""
		}
		return tp[3:35]
	},
}

// span is d as people read it: "350ms", "4.2s", "3m 05s", "2h 10m",
// "3d 4h". A negative d is shown as its size.
func span(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	if d < time.Second {
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm %02ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh %02dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dd %dh", s/86400, s%86400/3600)
}

func parsePages() map[string]*template.Template {
	layout := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html"))
	pages := map[string]*template.Template{}
	for _, name := range pageNames {
		t := template.Must(layout.Clone())
		pages[name] = template.Must(t.ParseFS(templateFS, "templates/"+name+".html"))
	}
	return pages
}

// view is what the layout reads: who is logged in, and the page's data.
type view struct {
	Identity *auth.Identity // nil when nobody is logged in
	Title    string         // the page and its object, for the tab (titled); "" for none
	Page     any
}

type errorPage struct {
	Title   string
	Message string
	Back    *link       // where to go from here; nil = the executions list
	Signal  *signalForm // a refused signal's form, with what was typed
}

// link is a link a page offers.
type link struct{ Href, Text string }

// render writes page name with data. Pages are rendered to a buffer first,
// so a template error is a 500, not half a page.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	v := view{Page: data}
	if t, ok := data.(titled); ok {
		v.Title = t.PageTitle()
	}
	if id, ok := r.Context().Value(identityKey{}).(auth.Identity); ok {
		v.Identity = &id
	}
	var b bytes.Buffer
	if err := c.pages[name].ExecuteTemplate(&b, "layout.html", v); err != nil {
		c.log.Error("console: render", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}
