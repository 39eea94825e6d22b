package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/latch-run/latch/store"
)

// nested is a JSON array nested depth levels deep: [[[...]]].
func nested(depth int) string {
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}

// Every JSON document a tenant stores nests at most store.MaxJSONDepth
// levels: one level more is a 400 invalid_request naming the field, and
// changes nothing, on every endpoint that stores one; the bound itself is
// accepted.
func TestJSONDepthBoundOnEveryStoredDocument(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("acme", `,"max_inflight":100`)
	ok, deep, huge := nested(store.MaxJSONDepth), nested(store.MaxJSONDepth+1), nested(10_000)

	refused := func(r *resp, field string) {
		t.Helper()
		p := r.problem(http.StatusBadRequest, CodeInvalidRequest)
		detailHas(t, p, field)
		detailHas(t, p, "levels deep")
	}
	before := e.count()
	refused(e.do("POST", "/api/executions", key, `{"kind":"echo","payload":`+deep+`}`), "payload")
	refused(e.do("POST", "/api/executions", key, `{"kind":"echo","payload":`+huge+`}`), "body")
	refused(e.do("POST", "/api/executions", key, `{"kind":"echo","payload":{"a":`+deep+`}}`), "payload")

	var batch struct {
		Items []struct {
			Status int      `json:"status"`
			Error  *Problem `json:"error"`
		} `json:"items"`
	}
	refused(e.do("POST", "/api/executions/batch", key, `{"items":[{"kind":"echo","payload":`+huge+`}]}`), "body")
	e.do("POST", "/api/executions/batch", key, `{"items":[{"kind":"echo","payload":`+deep+`}]}`).
		want(http.StatusOK).decode(&batch)
	if len(batch.Items) != 1 || batch.Items[0].Status != http.StatusBadRequest ||
		batch.Items[0].Error == nil || !strings.Contains(batch.Items[0].Error.Detail, "items[0].payload") {
		t.Fatalf("batch item: %+v", batch.Items)
	}
	refused(e.do("PUT", "/api/schedules/s", key, `{"every":"1h","kind":"echo","payload":`+deep+`}`), "payload")
	e.do("GET", "/api/schedules/s", key, nil).problem(http.StatusNotFound, CodeNotFound)
	if n := e.count(); n != before {
		t.Fatalf("%d executions after the refusals, want %d", n, before)
	}

	// The bound itself is stored.
	x := e.submit(key, `{"kind":"echo","payload":`+ok+`}`, http.StatusCreated)
	if string(x.Payload) != ok {
		t.Fatalf("payload %s", x.Payload)
	}

	// A worker's result, a step's result and a signal's data.
	l := e.claimOne(key)
	path := "/api/executions/" + l.ExecutionID
	refused(e.record(key, l, `"name":"s","result":`+deep), "result")
	if got := e.steps(key, l.ExecutionID); len(got) != 0 {
		t.Fatalf("steps %+v", got)
	}
	refused(e.do("POST", path+"/signals/go", key, `{"data":`+huge+`}`), "body")
	refused(e.do("POST", path+"/signals/go", key, `{"data":`+deep+`}`), "data")
	refused(e.do("POST", path+"/complete", key, `{"lease_token":"`+l.LeaseToken+`","result":`+deep+`}`), "result")
	if got := e.do("GET", path, key, nil).want(http.StatusOK).exec(); got.Status != "running" {
		t.Fatalf("status %s after a refused complete", got.Status)
	}
	e.do("POST", path+"/complete", key, `{"lease_token":"`+l.LeaseToken+`","result":`+ok+`}`).want(http.StatusOK)
}
