package console

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/latch-run/latch/store"
)

// maxRawJSON bounds a raw view: past it the text stops with a marker (the
// API answers the value whole).
const maxRawJSON = 1 << 20

// writeRaw answers raw JSON as plain text, as stored, up to maxRawJSON.
// Plain text: a browser shows it as it is and runs nothing in it.
func writeRaw(w http.ResponseWriter, raw []byte) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	if len(raw) > maxRawJSON {
		_, _ = w.Write(raw[:maxRawJSON])
		_, _ = w.Write([]byte("\n… (truncated: " + strconv.Itoa(len(raw)) + " bytes stored, the first " +
			strconv.Itoa(maxRawJSON) + " shown; the API answers the whole value)\n"))
		return
	}
	_, _ = w.Write(raw)
}

// executionJSONURL is the raw view of an execution's field ("payload" or
// "result").
func executionJSONURL(id, field string) string {
	return "/executions/" + url.PathEscape(id) + "/json?field=" + field
}

// executionJSON is GET /executions/{id}/json?field=payload|result: the
// stored value, raw.
func (c *Console) executionJSON(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := c.storeCtx(r)
	defer cancel()
	x, err := c.cfg.Store.Get(ctx, &store.GetParams{Tenant: identityFrom(r.Context()).Tenant, ID: r.PathValue("id")})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	switch r.URL.Query().Get("field") {
	case "payload":
		writeRaw(w, x.Payload)
	case "result":
		writeRaw(w, x.Result)
	default:
		c.fail(w, r, store.ErrNotFound)
	}
}

// scheduleJSON is GET /schedule/json?tenant=&name=: a schedule's payload,
// raw.
func (c *Console) scheduleJSON(w http.ResponseWriter, r *http.Request) {
	ref, ok := scheduleRef(r, r.URL.Query())
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
	writeRaw(w, s.Payload)
}
