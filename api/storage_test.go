package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/latch-run/latch/store"
)

// A tenant's storage budget over HTTP: set on create and by PATCH, shown
// with its usage in GET; a submit, a batch item, a step, a signal and a
// complete over it are 409 storage_exceeded and write nothing.
func TestStorageBudget(t *testing.T) {
	e := newEnv(t)
	r := e.do("POST", "/api/tenants", e.admin, `{"name":"acme","max_stored_bytes":300}`)
	r.want(http.StatusCreated)
	var created map[string]any
	r.decode(&created)
	if created["max_stored_bytes"] != float64(300) {
		t.Errorf("created tenant: %v, want max_stored_bytes 300", created)
	}
	var out createdTenant
	r.decode(&out)
	key := out.APIKey
	payload := `{"kind":"flow","payload":"` + strings.Repeat("x", 98) + `"}` // 100 bytes
	e.submit(key, json.RawMessage(payload), http.StatusCreated)
	var ten map[string]any
	e.do("GET", "/api/tenants/acme", key, nil).decode(&ten)
	if ten["stored_bytes"] != float64(100) || ten["max_stored_bytes"] != float64(300) {
		t.Errorf("GET tenant: %v, want stored_bytes 100 of 300", ten)
	}

	l := e.claimOne(key)
	e.record(key, l, `"name":"a","result":"`+strings.Repeat("y", 148)+`"`).want(http.StatusOK) // 150 bytes: 250
	p := e.record(key, l, `"name":"b","result":"`+strings.Repeat("y", 98)+`"`).problem(http.StatusConflict, CodeStorageExceeded)
	detailHas(t, p, "storage")
	e.signal(key, l.ExecutionID, "go", `{"data":"`+strings.Repeat("z", 58)+`"}`).problem(http.StatusConflict, CodeStorageExceeded)
	e.do("POST", "/api/executions/"+l.ExecutionID+"/complete", key,
		`{"lease_token":"`+l.LeaseToken+`","result":"`+strings.Repeat("r", 60)+`"}`).problem(http.StatusConflict, CodeStorageExceeded)
	e.do("POST", "/api/executions", key, payload).problem(http.StatusConflict, CodeStorageExceeded)
	var batch struct {
		Items []struct {
			Status int      `json:"status"`
			Error  *Problem `json:"error"`
		} `json:"items"`
	}
	e.do("POST", "/api/executions/batch", key, `{"items":[{"kind":"k"},`+payload+`]}`).decode(&batch)
	if len(batch.Items) != 2 || batch.Items[0].Status != http.StatusCreated || batch.Items[1].Status != http.StatusTooManyRequests ||
		batch.Items[1].Error == nil || batch.Items[1].Error.Code != CodeStorageExceeded {
		t.Errorf("batch over the budget: %+v, want 201 then 429 storage_exceeded (a slot's statuses are those of the contract)", batch)
	}
	e.do("GET", "/api/tenants/acme", key, nil).decode(&ten)
	if ten["stored_bytes"] != float64(252) {
		t.Errorf("after the refusals: stored_bytes %v, want 252", ten["stored_bytes"])
	}

	// Raised by PATCH: the complete goes through.
	e.do("PATCH", "/api/tenants/acme", e.admin, `{"max_stored_bytes":1000}`).decode(&ten)
	if ten["max_stored_bytes"] != float64(1000) {
		t.Errorf("PATCH: %v", ten)
	}
	e.do("POST", "/api/executions/"+l.ExecutionID+"/complete", key,
		`{"lease_token":"`+l.LeaseToken+`","result":"`+strings.Repeat("r", 60)+`"}`).want(http.StatusOK)
	// A GET answer sent back is a PATCH that changes nothing (stored_bytes is read-only).
	back := e.do("GET", "/api/tenants/acme", e.admin, nil)
	back.want(http.StatusOK)
	e.do("PATCH", "/api/tenants/acme", e.admin, string(back.body)).want(http.StatusOK)
	for _, bad := range []string{`-1`, `0`, `"1"`, `1.5`} {
		e.do("PATCH", "/api/tenants/acme", e.admin, `{"max_stored_bytes":`+bad+`}`).problem(http.StatusBadRequest, CodeInvalidRequest)
	}
	e.do("POST", "/api/tenants", e.admin, `{"name":"big","max_stored_bytes":`+
		json.Number("1125899906842625").String()+`}`).problem(http.StatusBadRequest, CodeInvalidRequest)
	e.do("POST", "/api/tenants", e.admin, `{"name":"dflt"}`).want(http.StatusCreated)
	e.do("GET", "/api/tenants/dflt", e.admin, nil).decode(&ten)
	if ten["max_stored_bytes"] != float64(store.DefaultMaxStoredBytes) || ten["stored_bytes"] != float64(0) {
		t.Errorf("a tenant created without it: %v, want the default budget", ten)
	}
}
