package api

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRateLimitCRUD(t *testing.T) {
	t.Parallel()
	e, clock := clocked(t)
	key := e.tenant("acme")
	r := e.do("PUT", "/api/rate-limits/example.com", key, `{"rate":10,"per_seconds":60}`).want(http.StatusOK)
	var m map[string]json.RawMessage
	r.decode(&m)
	want := []string{"key", "rate", "per_seconds", "burst", "created_at", "updated_at"}
	var got []string
	for k := range m {
		got = append(got, k)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("fields %v\nwant %v", got, want)
	}
	var rl rateLimit
	r.decode(&rl)
	if rl.Key != "example.com" || rl.Rate != 10 || rl.PerSeconds != 60 || rl.Burst != 1 ||
		!rl.CreatedAt.Equal(scheduleEpoch) || !rl.UpdatedAt.Equal(scheduleEpoch) {
		t.Fatalf("created: %s", r.body)
	}
	var g rateLimit
	e.do("GET", "/api/rate-limits/example.com", key, nil).want(http.StatusOK).decode(&g)
	if g != rl {
		t.Fatalf("GET %+v, PUT answered %+v", g, rl)
	}

	// A replace keeps created_at; a GET answer, edited, may be sent back.
	clock.add(time.Minute)
	body := e.do("GET", "/api/rate-limits/example.com", key, nil).want(http.StatusOK).body
	edited := strings.Replace(string(body), `"burst":1`, `"burst":5`, 1)
	e.do("PUT", "/api/rate-limits/example.com", key, edited).want(http.StatusOK).decode(&g)
	if g.Burst != 5 || g.Rate != 10 || !g.CreatedAt.Equal(rl.CreatedAt) || !g.UpdatedAt.Equal(scheduleEpoch.Add(time.Minute)) {
		t.Fatalf("replaced: %+v", g)
	}
	e.do("PUT", "/api/rate-limits/example.com", key, `{"rate":1000000,"per_seconds":31622400,"burst":1000000}`).want(http.StatusOK).decode(&g)
	if g.Rate != 1_000_000 || g.PerSeconds != 31_622_400 || g.Burst != 1_000_000 {
		t.Fatalf("maxima: %+v", g)
	}

	// Any text is a key: escaped in the path, answered as it is.
	for _, k := range []string{"api.example.com/v1", "a key with spaces", "ключ", "100%", strings.Repeat("k", 256)} {
		path := "/api/rate-limits/" + url.PathEscape(k)
		e.do("PUT", path, key, `{"rate":1,"per_seconds":1,"key":`+jsonString(k)+`}`).want(http.StatusOK).decode(&g)
		if g.Key != k {
			t.Fatalf("key %q answered %q", k, g.Key)
		}
		e.do("GET", path, key, nil).want(http.StatusOK)
		e.do("DELETE", path, key, nil).want(http.StatusOK)
	}

	if d := e.do("DELETE", "/api/rate-limits/example.com", key, nil).want(http.StatusOK); !strings.Contains(string(d.body), `"key":"example.com"`) {
		t.Fatalf("DELETE answer is not the deleted limit: %s", d.body)
	}
	e.do("GET", "/api/rate-limits/example.com", key, nil).problem(http.StatusNotFound, CodeNotFound)
	e.do("DELETE", "/api/rate-limits/example.com", key, nil).problem(http.StatusNotFound, CodeNotFound)
	// Keys no limit can have are not found.
	e.do("GET", "/api/rate-limits/"+strings.Repeat("k", 257), key, nil).problem(http.StatusNotFound, CodeNotFound)
	e.do("DELETE", "/api/rate-limits/a%0Ab", key, nil).problem(http.StatusNotFound, CodeNotFound)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestRateLimitInvalidChangesNothing: every bad PUT is refused naming the
// field, and writes nothing.
func TestRateLimitInvalidChangesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.tenant("acme")
	for _, tc := range []struct {
		name, path, body, mention string
	}{
		{"empty body", "", ``, "body"},
		{"not an object", "", `[1]`, "object"},
		{"unknown field", "", `{"rate":1,"per_seconds":1,"per":1}`, "per"},
		{"tenant field", "", `{"rate":1,"per_seconds":1,"tenant":"acme"}`, "tenant"},
		{"duplicate field", "", `{"rate":1,"rate":2,"per_seconds":1}`, "rate"},
		{"missing rate", "", `{"per_seconds":1}`, "rate"},
		{"null rate", "", `{"rate":null,"per_seconds":1}`, "rate"},
		{"rate zero", "", `{"rate":0,"per_seconds":1}`, "rate"},
		{"rate negative", "", `{"rate":-1,"per_seconds":1}`, "rate"},
		{"rate huge", "", `{"rate":1000001,"per_seconds":1}`, "rate"},
		{"rate fraction", "", `{"rate":1.5,"per_seconds":1}`, "rate"},
		{"rate string", "", `{"rate":"1","per_seconds":1}`, "rate"},
		{"missing per_seconds", "", `{"rate":1}`, "per_seconds"},
		{"per_seconds zero", "", `{"rate":1,"per_seconds":0}`, "per_seconds"},
		{"per_seconds huge", "", `{"rate":1,"per_seconds":31622401}`, "per_seconds"},
		{"per_seconds fraction", "", `{"rate":1,"per_seconds":0.5}`, "per_seconds"},
		{"burst zero", "", `{"rate":1,"per_seconds":1,"burst":0}`, "burst"},
		{"burst huge", "", `{"rate":1,"per_seconds":1,"burst":1000001}`, "burst"},
		{"burst string", "", `{"rate":1,"per_seconds":1,"burst":"2"}`, "burst"},
		{"key differs", "", `{"rate":1,"per_seconds":1,"key":"other"}`, "key"},
		{"key number", "", `{"rate":1,"per_seconds":1,"key":1}`, "key"},
		{"created_at number", "", `{"rate":1,"per_seconds":1,"created_at":1}`, "created_at"},
		{"updated_at bool", "", `{"rate":1,"per_seconds":1,"updated_at":false}`, "updated_at"},
		{"key too long", "/api/rate-limits/" + strings.Repeat("k", 257), `{"rate":1,"per_seconds":1}`, "key"},
		{"key control", "/api/rate-limits/a%0Ab", `{"rate":1,"per_seconds":1}`, "key"},
		{"key not utf-8", "/api/rate-limits/a%FFb", `{"rate":1,"per_seconds":1}`, "key"},
		{"unknown query", "/api/rate-limits/k?burst=2", `{"rate":1,"per_seconds":1}`, "burst"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path
			if path == "" {
				path = "/api/rate-limits/k"
			}
			p := e.do("PUT", path, key, tc.body).problem(http.StatusBadRequest, CodeInvalidRequest)
			detailHas(t, p, tc.mention)
		})
	}
	e.do("PUT", "/api/rate-limits/k", key, `{"rate":1,"per_seconds":1}`, "Content-Type", "text/plain").
		problem(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType)
	e.do("GET", "/api/rate-limits/k", key, nil).problem(http.StatusNotFound, CodeNotFound)
	e.do("POST", "/api/rate-limits/k", key, `{}`).problem(http.StatusMethodNotAllowed, CodeMethodNotAllowed)
}

// Rate limits belong to their tenant; the admin must name it.
func TestRateLimitTenants(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.tenant("acme")
	b := e.tenant("bolt")
	e.do("PUT", "/api/rate-limits/shared", a, `{"rate":5,"per_seconds":1}`).want(http.StatusOK)
	e.do("GET", "/api/rate-limits/shared", b, nil).problem(http.StatusNotFound, CodeNotFound)
	e.do("DELETE", "/api/rate-limits/shared", b, nil).problem(http.StatusNotFound, CodeNotFound)
	var rl rateLimit
	e.do("PUT", "/api/rate-limits/shared", b, `{"rate":7,"per_seconds":1}`).want(http.StatusOK).decode(&rl)
	e.do("GET", "/api/rate-limits/shared", a, nil).want(http.StatusOK).decode(&rl)
	if rl.Rate != 5 {
		t.Fatalf("acme's limit changed by bolt's PUT: %+v", rl)
	}
	for _, c := range []struct{ method, body string }{{"PUT", `{"rate":1,"per_seconds":1}`}, {"GET", ""}, {"DELETE", ""}} {
		var body any
		if c.body != "" {
			body = c.body
		}
		p := e.do(c.method, "/api/rate-limits/shared", e.admin, body).problem(http.StatusBadRequest, CodeInvalidRequest)
		detailHas(t, p, "Latch-Tenant")
	}
	e.do("GET", "/api/rate-limits/shared", e.admin, nil, "Latch-Tenant", "bolt").want(http.StatusOK).decode(&rl)
	if rl.Rate != 7 {
		t.Fatalf("admin reads bolt's: %+v", rl)
	}
	e.do("PUT", "/api/rate-limits/shared", e.admin, `{"rate":9,"per_seconds":2,"burst":3}`, "Latch-Tenant", "acme").want(http.StatusOK).decode(&rl)
	if rl.Rate != 9 || rl.PerSeconds != 2 || rl.Burst != 3 {
		t.Fatalf("admin PUT: %+v", rl)
	}
	e.do("DELETE", "/api/rate-limits/shared", e.admin, nil, "Latch-Tenant", "bolt").want(http.StatusOK)
	e.do("GET", "/api/rate-limits/shared", b, nil).problem(http.StatusNotFound, CodeNotFound)
	e.do("GET", "/api/rate-limits/shared", a, nil).want(http.StatusOK)
	e.do("PUT", "/api/rate-limits/shared", e.admin, `{"rate":1,"per_seconds":1}`, "Latch-Tenant", "ghost").
		problem(http.StatusNotFound, CodeNotFound)
	e.do("GET", "/api/rate-limits/shared", a, nil, "Latch-Tenant", "bolt").problem(http.StatusForbidden, CodeForbidden)
}

// A limit set over the API gates claims: one start per hour, burst 1, lets
// one of two executions with the key start; deleting it frees the other.
func TestRateLimitGatesClaims(t *testing.T) {
	t.Parallel()
	e, _ := clocked(t)
	key := e.tenant("acme")
	e.do("PUT", "/api/rate-limits/slow", key, `{"rate":1,"per_seconds":3600}`).want(http.StatusOK)
	e.submit(key, `{"kind":"echo","rate_key":"slow"}`, http.StatusCreated)
	e.submit(key, `{"kind":"echo","rate_key":"slow"}`, http.StatusCreated)
	var out claimResponse
	e.do("POST", "/api/workers/claim", key, `{"worker_id":"w","max":2}`).want(http.StatusOK).decode(&out)
	if len(out.Leases) != 1 {
		t.Fatalf("claimed %d under a limit of 1 per hour", len(out.Leases))
	}
	e.do("DELETE", "/api/rate-limits/slow", key, nil).want(http.StatusOK)
	// The refused one was deferred to the bucket's next free start; without
	// the limit it is claimable from then on, like any scheduled execution.
	var page listResponse
	e.do("GET", "/api/executions?status=scheduled", key, nil).want(http.StatusOK).decode(&page)
	if len(page.Items) != 1 {
		t.Fatalf("%d deferred executions, want 1", len(page.Items))
	}
}
