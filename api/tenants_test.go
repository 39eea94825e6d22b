package api

import (
	"net/http"
	"strings"
	"testing"
)

func TestTenantCreate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var c createdTenant
	r := e.do("POST", "/api/tenants", e.admin, `{"name":"acme"}`).want(http.StatusCreated)
	r.decode(&c)
	if c.Name != "acme" || !strings.HasPrefix(c.APIKey, "lk_") || c.MaxInflight != 10000 ||
		c.DedupTTLSeconds != 604800 || c.RetentionSeconds != 604800 {
		t.Fatalf("created: %s", r.body)
	}
	// The key works, and is shown only once: GET has no api_key.
	g := e.do("GET", "/api/tenants/acme", c.APIKey, nil).want(http.StatusOK)
	if strings.Contains(string(g.body), "api_key") || !strings.Contains(string(g.body), `"inflight":0`) {
		t.Fatalf("GET tenant: %s", g.body)
	}
	e.do("POST", "/api/tenants", e.admin, `{"name":"acme"}`).problem(http.StatusConflict, CodeTenantExists)

	r = e.do("POST", "/api/tenants", e.admin, `{"name":"small","max_inflight":2,"dedup_ttl_seconds":60,"retention_seconds":120}`).want(http.StatusCreated)
	r.decode(&c)
	if c.MaxInflight != 2 || c.DedupTTLSeconds != 60 || c.RetentionSeconds != 120 {
		t.Fatalf("settings: %s", r.body)
	}
}

func TestTenantCreateInvalid(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct{ body, field string }{
		{`{}`, "name"},
		{`{"name":""}`, "name"},
		{`{"name":"Acme"}`, "name"},
		{`{"name":"a b"}`, "name"},
		{`{"name":"` + strings.Repeat("a", 65) + `"}`, "name"},
		{`{"name":"ok","max_inflight":0}`, "max_inflight"},
		{`{"name":"ok","dedup_ttl_seconds":-1}`, "dedup_ttl_seconds"},
		{`{"name":"ok","retention_seconds":"1"}`, "retention_seconds"},
		{`{"name":"ok","api_key":"mine"}`, "api_key"},
		{`{"name":"ok","inflight":3}`, "inflight"},
	} {
		p := e.do("POST", "/api/tenants", e.admin, tc.body).problem(http.StatusBadRequest, CodeInvalidRequest)
		detailHas(t, p, tc.field)
	}
	e.do("GET", "/api/tenants/ok", e.admin, nil).problem(http.StatusNotFound, CodeNotFound)
	// 64 characters of the whole alphabet is a fine name.
	e.tenant(strings.Repeat("a", 61) + "_-9")
}

func TestTenantPatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.tenant("acme")
	e.submit(key, `{"kind":"echo"}`, http.StatusCreated)

	var tn tenant
	e.do("PATCH", "/api/tenants/acme", e.admin, `{"max_inflight":5,"retention_seconds":3600}`).want(http.StatusOK).decode(&tn)
	if tn.MaxInflight != 5 || tn.RetentionSeconds != 3600 || tn.DedupTTLSeconds != 604800 || tn.Inflight != 1 {
		t.Fatalf("patched: %+v", tn)
	}
	// An edited GET answer may be sent back: name must not change, and
	// inflight, read-only, is ignored (TestTenantPatchBackAGetAnswer).
	e.do("PATCH", "/api/tenants/acme", e.admin, `{"name":"acme","dedup_ttl_seconds":10}`).want(http.StatusOK).decode(&tn)
	if tn.DedupTTLSeconds != 10 {
		t.Fatalf("patched ttl: %+v", tn)
	}
	p := e.do("PATCH", "/api/tenants/acme", e.admin, `{"name":"acme2"}`).problem(http.StatusBadRequest, CodeInvalidRequest)
	detailHas(t, p, "name")
	p = e.do("PATCH", "/api/tenants/acme", e.admin, `{"max_inflight":0}`).problem(http.StatusBadRequest, CodeInvalidRequest)
	detailHas(t, p, "max_inflight")
	e.do("PATCH", "/api/tenants/ghost", e.admin, `{"max_inflight":3}`).problem(http.StatusNotFound, CodeNotFound)
	e.do("PATCH", "/api/tenants/acme", e.admin, `{}`).want(http.StatusOK)
	e.do("PATCH", "/api/tenants/acme", e.admin, `{}`, "Content-Type", "application/merge-patch+json").want(http.StatusOK)
	e.do("POST", "/api/tenants", e.admin, `{"name":"mp"}`, "Content-Type", "application/merge-patch+json").
		problem(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType)
	e.do("GET", "/api/tenants/acme", e.admin, nil).want(http.StatusOK).decode(&tn)
	if tn.MaxInflight != 5 || tn.DedupTTLSeconds != 10 {
		t.Fatalf("after refused patches: %+v", tn)
	}
}

func TestTenantKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	first := e.tenant("acme")
	var k createdKey
	e.do("POST", "/api/tenants/acme/keys", e.admin, nil).want(http.StatusCreated).decode(&k)
	if k.APIKey == "" || k.APIKey == first {
		t.Fatalf("second key %q", k.APIKey)
	}
	x := e.submit(k.APIKey, `{"kind":"echo"}`, http.StatusCreated)
	if x.Tenant != "acme" {
		t.Fatalf("second key acts for %q", x.Tenant)
	}
	e.do("GET", "/api/executions/"+x.ExecutionID, first, nil).want(http.StatusOK)
	e.do("POST", "/api/tenants/ghost/keys", e.admin, nil).problem(http.StatusNotFound, CodeNotFound)
}

func TestTenantInflight(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.tenant("acme", `,"max_inflight":2`)
	a := e.submit(key, `{"kind":"echo"}`, http.StatusCreated)
	e.submit(key, `{"kind":"echo","delay_seconds":3600}`, http.StatusCreated)
	var tn tenant
	e.do("GET", "/api/tenants/acme", key, nil).want(http.StatusOK).decode(&tn)
	if tn.Inflight != 2 {
		t.Fatalf("inflight %d, want 2", tn.Inflight)
	}
	e.do("POST", "/api/executions/"+a.ExecutionID+"/cancel", key, nil).want(http.StatusOK)
	if n := e.inflight("acme"); n != 1 {
		t.Fatalf("inflight after cancel %d", n)
	}
}

// A GET answer PATCHed back as it is succeeds: name (unchanged) and the
// read-only inflight are accepted, inflight ignored.
func TestTenantPatchBackAGetAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.tenant("acme")
	e.submit(key, `{"kind":"echo"}`, http.StatusCreated)
	got := e.do("GET", "/api/tenants/acme", e.admin, nil).want(http.StatusOK)
	edited := strings.Replace(string(got.body), `"max_inflight":10000`, `"max_inflight":7`, 1)
	if edited == string(got.body) || !strings.Contains(edited, `"inflight":1`) {
		t.Fatalf("GET answer %s", got.body)
	}
	var tn tenant
	e.do("PATCH", "/api/tenants/acme", e.admin, edited).want(http.StatusOK).decode(&tn)
	if tn.MaxInflight != 7 || tn.Inflight != 1 {
		t.Fatalf("after PATCH of the edited GET answer: %+v", tn)
	}
	// inflight is ignored, whatever it says.
	e.do("PATCH", "/api/tenants/acme", e.admin, `{"inflight":500}`).want(http.StatusOK).decode(&tn)
	if tn.Inflight != 1 || e.inflight("acme") != 1 {
		t.Fatalf("inflight changed by PATCH: %+v", tn)
	}
	// It still has to be an integer, and is still refused on create.
	p := e.do("PATCH", "/api/tenants/acme", e.admin, `{"inflight":"x"}`).problem(http.StatusBadRequest, CodeInvalidRequest)
	detailHas(t, p, "inflight")
	p = e.do("POST", "/api/tenants", e.admin, `{"name":"b","inflight":0}`).problem(http.StatusBadRequest, CodeInvalidRequest)
	detailHas(t, p, "inflight")
}

// A problem's detail names the JSON field the client sent, never the Go
// struct it landed in (encoding/json puts embedded struct names into the
// path).
func TestTypeErrorDetailsNameJSONFieldsOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.tenant("acme")
	x := e.submit(key, `{"kind":"echo"}`, http.StatusCreated)
	for _, c := range []struct {
		method, path, key, body, detail string
	}{
		{"PATCH", "/api/tenants/acme", e.admin, `{"max_inflight":"x"}`, "max_inflight: expected an integer, got a string"},
		{"POST", "/api/tenants", e.admin, `{"name":"b","retention_seconds":true}`, "retention_seconds: expected an integer, got a boolean"},
		{"POST", "/api/executions/" + x.ExecutionID + "/heartbeat", key, `{"lease_token":5}`, "lease_token: expected a string, got a number"},
		{"POST", "/api/executions/" + x.ExecutionID + "/fail", key, `{"lease_token":"t","error":[]}`, "error: expected a string, got an array"},
		{"POST", "/api/workers/claim", key, `{"worker_id":"w","queues":[1]}`, "queues: expected a string, got a number"},
		{"POST", "/api/executions", key, `{"kind":{}}`, "kind: expected a string, got an object"},
	} {
		p := e.do(c.method, c.path, c.key, c.body).problem(http.StatusBadRequest, CodeInvalidRequest)
		if p.Detail != c.detail {
			t.Errorf("%s %s %s: detail %q, want %q", c.method, c.path, c.body, p.Detail, c.detail)
		}
	}
	var out batchResponse
	e.do("POST", "/api/executions/batch", key, `{"items":[{"kind":"echo"},{"kind":"echo","priority":"high"}]}`).
		want(http.StatusOK).decode(&out)
	if it := out.Items[1]; it.Error == nil || it.Error.Detail != "items[1].priority: expected an integer, got a string" {
		t.Errorf("batch item: %+v", it.Error)
	}
}
