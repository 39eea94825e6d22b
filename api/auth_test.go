package api

import (
	"context"
	"net/http"
	"testing"

	"github.com/latch-run/latch/store"
)

func TestAuthMissingOrUnknownKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.tenant("acme")
	for _, tc := range []struct{ name, header string }{
		{"missing", ""},
		{"not bearer", "Basic dXNlcjpwdw=="},
		{"empty bearer", "Bearer "},
		{"unknown key", "Bearer lk_nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, c := range []struct{ method, path, body string }{
				{"GET", "/api/executions", ""},
				{"POST", "/api/executions", `{"kind":"echo"}`},
				{"GET", "/api/executions/x", ""},
				{"POST", "/api/workers/claim", `{"worker_id":"w"}`},
				{"GET", "/api/tenants/acme", ""},
				{"POST", "/api/tenants", `{"name":"x"}`},
				{"GET", "/api/executions/x/events", ""},
			} {
				var body any
				if c.body != "" {
					body = c.body
				}
				r := e.do(c.method, c.path, "", body, "Authorization", tc.header)
				r.problem(http.StatusUnauthorized, CodeUnauthorized)
				if r.header.Get("WWW-Authenticate") == "" {
					t.Errorf("%s %s: no WWW-Authenticate", c.method, c.path)
				}
			}
		})
	}
	if n := e.count(); n != 0 {
		t.Fatalf("%d executions after unauthorised submits", n)
	}
}

func TestAuthCrossTenantIsNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acme, other := e.tenant("acme"), e.tenant("other")
	x := e.submit(acme, `{"kind":"echo"}`, http.StatusCreated)
	id := x.ExecutionID
	missing := "0193a6e4-7c1e-7b3a-9f1e-2d9c3e8a4b10"

	for _, path := range []string{"/api/executions/" + id, "/api/executions/" + missing} {
		e.do("GET", path, other, nil).problem(http.StatusNotFound, CodeNotFound)
		e.do("GET", path+"/events", other, nil).problem(http.StatusNotFound, CodeNotFound)
		e.do("POST", path+"/cancel", other, nil).problem(http.StatusNotFound, CodeNotFound)
		e.do("DELETE", path+"?force=true", other, nil).problem(http.StatusNotFound, CodeNotFound)
	}
	var list listResponse
	e.do("GET", "/api/executions", other, nil).want(http.StatusOK).decode(&list)
	if len(list.Items) != 0 {
		t.Fatalf("other tenant lists %d executions", len(list.Items))
	}
	// Another tenant's worker can neither claim nor touch the lease.
	var claim claimResponse
	e.do("POST", "/api/workers/claim", other, `{"worker_id":"w"}`).want(http.StatusOK).decode(&claim)
	if len(claim.Leases) != 0 {
		t.Fatalf("other tenant claimed %d leases", len(claim.Leases))
	}
	// Fenced calls on another tenant's execution are answered exactly like
	// those on a missing one (the store fences both as lease_lost).
	l := e.claimOne(acme)
	for _, c := range []struct{ op, body string }{
		{"heartbeat", `{"lease_token":"` + l.LeaseToken + `"}`},
		{"complete", `{"lease_token":"` + l.LeaseToken + `"}`},
		{"fail", `{"lease_token":"` + l.LeaseToken + `","error":"x"}`},
	} {
		theirs := e.do("POST", "/api/executions/"+id+"/"+c.op, other, c.body)
		none := e.do("POST", "/api/executions/"+missing+"/"+c.op, other, c.body)
		if theirs.status != none.status || theirs.status < 400 {
			t.Fatalf("%s: other tenant's execution %d %s, missing one %d %s", c.op, theirs.status, theirs.body, none.status, none.body)
		}
		var a, b Problem
		theirs.decode(&a)
		none.decode(&b)
		if a.Code != b.Code {
			t.Fatalf("%s: codes %s vs %s", c.op, a.Code, b.Code)
		}
	}
	// The owner still sees it running, untouched.
	got := e.do("GET", "/api/executions/"+id, acme, nil).want(http.StatusOK).exec()
	if got.Status != store.StatusRunning || got.CancelRequested {
		t.Fatalf("after other tenant's calls: %+v", got)
	}
}

func TestAuthAdmin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acme := e.tenant("acme")
	e.tenant("other")

	// Submit needs Latch-Tenant.
	p := e.do("POST", "/api/executions", e.admin, `{"kind":"echo"}`).problem(http.StatusBadRequest, CodeInvalidRequest)
	detailHas(t, p, "Latch-Tenant")
	p = e.do("POST", "/api/executions/batch", e.admin, `{"items":[{"kind":"echo"}]}`).problem(http.StatusBadRequest, CodeInvalidRequest)
	detailHas(t, p, "Latch-Tenant")

	x := e.submit(e.admin, `{"kind":"echo"}`, http.StatusCreated, "Latch-Tenant", "acme")
	if x.Tenant != "acme" {
		t.Fatalf("admin submit landed in %q", x.Tenant)
	}
	y := e.submit(e.admin, `{"kind":"echo"}`, http.StatusCreated, "Latch-Tenant", "other")

	// Without the header the admin reads across tenants.
	e.do("GET", "/api/executions/"+y.ExecutionID, e.admin, nil).want(http.StatusOK)
	var list listResponse
	e.do("GET", "/api/executions", e.admin, nil).want(http.StatusOK).decode(&list)
	if len(list.Items) != 2 {
		t.Fatalf("admin lists %d, want 2", len(list.Items))
	}
	// With it, only that tenant's.
	e.do("GET", "/api/executions", e.admin, nil, "Latch-Tenant", "acme").want(http.StatusOK).decode(&list)
	if len(list.Items) != 1 || list.Items[0].Tenant != "acme" {
		t.Fatalf("admin as acme lists %+v", list.Items)
	}
	e.do("GET", "/api/executions/"+y.ExecutionID, e.admin, nil, "Latch-Tenant", "acme").problem(http.StatusNotFound, CodeNotFound)
	// Unknown tenant named by the admin.
	e.do("POST", "/api/executions", e.admin, `{"kind":"echo"}`, "Latch-Tenant", "ghost").problem(http.StatusNotFound, CodeNotFound)
	// Malformed tenant name.
	p = e.do("GET", "/api/executions", e.admin, nil, "Latch-Tenant", "Not A Name").problem(http.StatusBadRequest, CodeInvalidRequest)
	detailHas(t, p, "Latch-Tenant")

	// A tenant key may not borrow another tenant.
	e.do("GET", "/api/executions", acme, nil, "Latch-Tenant", "other").problem(http.StatusForbidden, CodeForbidden)
	// Naming its own tenant is fine.
	e.do("GET", "/api/executions", acme, nil, "Latch-Tenant", "acme").want(http.StatusOK)

	// Admin cancels across tenants.
	c := e.do("POST", "/api/executions/"+x.ExecutionID+"/cancel", e.admin, nil).want(http.StatusOK).exec()
	if c.Status != store.StatusCancelled {
		t.Fatalf("admin cancel: %s", c.Status)
	}
}

func TestAuthTenantEndpointsAreAdminOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acme := e.tenant("acme")
	e.tenant("other")
	e.do("POST", "/api/tenants", acme, `{"name":"evil"}`).problem(http.StatusForbidden, CodeForbidden)
	e.do("PATCH", "/api/tenants/acme", acme, `{"max_inflight":1}`).problem(http.StatusForbidden, CodeForbidden)
	e.do("POST", "/api/tenants/acme/keys", acme, nil).problem(http.StatusForbidden, CodeForbidden)
	// A tenant reads its own record, and another's is not found.
	var tn tenant
	e.do("GET", "/api/tenants/acme", acme, nil).want(http.StatusOK).decode(&tn)
	if tn.Name != "acme" || tn.MaxInflight != store.DefaultMaxInflight {
		t.Fatalf("own tenant: %+v", tn)
	}
	e.do("GET", "/api/tenants/other", acme, nil).problem(http.StatusNotFound, CodeNotFound)
}

func TestAuthPinnedAdminKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	stored := NewKey()
	if _, err := e.store.EnsureAdminKey(context.Background(), &store.EnsureAdminKeyParams{KeyHash: HashKey(stored)}); err != nil {
		t.Fatal(err)
	}
	// AdminKeyHash is set: the stored admin key is not accepted.
	e.do("GET", "/api/executions", stored, nil).problem(http.StatusUnauthorized, CodeUnauthorized)
	e.do("GET", "/api/executions", e.admin, nil).want(http.StatusOK)

	// Without AdminKeyHash the stored admin key is the admin.
	e2 := newEnv(t, func(c *Config) { c.AdminKeyHash = "" })
	if _, err := e2.store.EnsureAdminKey(context.Background(), &store.EnsureAdminKeyParams{KeyHash: HashKey(stored)}); err != nil {
		t.Fatal(err)
	}
	e2.do("POST", "/api/tenants", stored, `{"name":"acme"}`).want(http.StatusCreated)
	e2.do("GET", "/api/executions", e2.admin, nil).problem(http.StatusUnauthorized, CodeUnauthorized)
}

func TestKeys(t *testing.T) {
	t.Parallel()
	a, b := NewKey(), NewKey()
	if a == b || len(a) != len("lk_")+43 {
		t.Fatalf("keys %q %q", a, b)
	}
	if h1, h2 := HashKey(a), HashKey(a); h1 != h2 || h1 == HashKey(b) || len(h1) != 64 {
		t.Fatal("HashKey is not a stable SHA-256 hex")
	}
}
