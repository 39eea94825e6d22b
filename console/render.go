package console

import (
	"bytes"
	"html/template"
	"net/http"
	"time"

	"github.com/latch-run/latch/auth"
	"github.com/latch-run/latch/store"
)

// pageNames are the templates under templates/, each rendered inside
// layout.html.
var pageNames = []string{"login", "executions", "execution", "schedules", "error"}

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
	Page     any
}

type errorPage struct {
	Title   string
	Message string
}

// render writes page name with data. Pages are rendered to a buffer first,
// so a template error is a 500, not half a page.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	v := view{Page: data}
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
