package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store/postgres"
)

func (e *testEnv) keys(name string) []keyView {
	e.t.Helper()
	var out keyList
	e.do("GET", "/api/tenants/"+name+"/keys", e.admin, nil).want(http.StatusOK).decode(&out)
	return out.Items
}

func TestTenantKeysListAndDelete(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Date(2031, time.March, 14, 9, 0, 0, 0, time.UTC)}
	e := newEnv(t, func(c *Config) { c.Now = clock.Now })
	var first createdTenant
	e.do("POST", "/api/tenants", e.admin, `{"name":"acme"}`).want(http.StatusCreated).decode(&first)
	if !strings.HasPrefix(first.KeyID, "key_") {
		t.Fatalf("POST /api/tenants: key_id %q", first.KeyID)
	}
	clock.add(time.Second)
	var second createdKey
	r := e.do("POST", "/api/tenants/acme/keys", e.admin, nil).want(http.StatusCreated)
	r.decode(&second)
	if !strings.HasPrefix(second.KeyID, "key_") || !strings.HasPrefix(second.APIKey, "lk_") || second.KeyID == first.KeyID {
		t.Fatalf("POST keys: %s", r.body)
	}

	l := e.do("GET", "/api/tenants/acme/keys", e.admin, nil).want(http.StatusOK)
	for _, secret := range []string{first.APIKey, second.APIKey, HashKey(first.APIKey), HashKey(second.APIKey)} {
		if strings.Contains(string(l.body), secret) {
			t.Fatalf("the key listing shows a key or its hash: %s", l.body)
		}
	}
	ks := e.keys("acme")
	if len(ks) != 2 || ks[0].KeyID != first.KeyID || ks[1].KeyID != second.KeyID || ks[0].LastUsedAt != nil {
		t.Fatalf("keys: %s", l.body)
	}

	// last_used_at: recorded on use, then at most once a minute.
	t0 := clock.Now()
	e.do("GET", "/api/executions", second.APIKey, nil).want(http.StatusOK)
	lastUsed := func() time.Time {
		t.Helper()
		ks := e.keys("acme")
		if len(ks) != 2 || ks[1].LastUsedAt == nil {
			t.Fatalf("keys after use: %+v", ks)
		}
		return *ks[1].LastUsedAt
	}
	if got := lastUsed(); !got.Equal(t0) {
		t.Errorf("last_used_at %s, want %s", got, t0)
	}
	clock.add(30 * time.Second)
	e.do("GET", "/api/executions", second.APIKey, nil).want(http.StatusOK)
	if got := lastUsed(); !got.Equal(t0) {
		t.Errorf("last_used_at moved to %s within the minute; want it kept at %s", got, t0)
	}
	clock.add(31 * time.Second)
	e.do("GET", "/api/executions", second.APIKey, nil).want(http.StatusOK)
	if got := lastUsed(); !got.Equal(t0.Add(61 * time.Second)) {
		t.Errorf("last_used_at %s after a minute, want %s", got, t0.Add(61*time.Second))
	}

	// Only the admin manages keys.
	e.do("GET", "/api/tenants/acme/keys", first.APIKey, nil).problem(http.StatusForbidden, CodeForbidden)
	e.do("DELETE", "/api/tenants/acme/keys/"+second.KeyID, first.APIKey, nil).problem(http.StatusForbidden, CodeForbidden)
	e.tenant("globex")
	e.do("DELETE", "/api/tenants/globex/keys/"+second.KeyID, e.admin, nil).problem(http.StatusNotFound, CodeNotFound)

	e.do("DELETE", "/api/tenants/acme/keys/"+second.KeyID, e.admin, nil).want(http.StatusNoContent)
	e.do("GET", "/api/executions", second.APIKey, nil).problem(http.StatusUnauthorized, CodeUnauthorized)
	e.do("GET", "/api/executions", first.APIKey, nil).want(http.StatusOK)
	e.do("DELETE", "/api/tenants/acme/keys/"+second.KeyID, e.admin, nil).problem(http.StatusNotFound, CodeNotFound)
	if ks := e.keys("acme"); len(ks) != 1 || ks[0].KeyID != first.KeyID {
		t.Errorf("keys after the delete: %+v", ks)
	}
	e.do("GET", "/api/tenants/nobody/keys", e.admin, nil).problem(http.StatusNotFound, CodeNotFound)
}

func TestTenantDisable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.tenant("acme")
	e.submit(key, `{"kind":"echo"}`, http.StatusCreated)
	e.submit(key, `{"kind":"echo"}`, http.StatusCreated)
	e.submit(key, `{"kind":"echo"}`, http.StatusCreated)
	l1, l2 := e.claimOne(key), e.claimOne(key)

	r := e.do("PATCH", "/api/tenants/acme", e.admin, `{"disabled":true}`).want(http.StatusOK)
	if !strings.Contains(string(r.body), `"disabled":true`) {
		t.Fatalf("PATCH answer: %s", r.body)
	}
	g := e.do("GET", "/api/tenants/acme", e.admin, nil).want(http.StatusOK)
	if !strings.Contains(string(g.body), `"disabled":true`) {
		t.Fatalf("GET: %s", g.body)
	}
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/api/executions", `{"kind":"echo"}`},
		{"GET", "/api/executions", ""},
		{"GET", "/api/executions/" + l1.ExecutionID, ""},
		{"GET", "/api/tenants/acme", ""},
		{"POST", "/api/workers/claim", `{"worker_id":"w1"}`},
		{"PUT", "/api/schedules/s", `{"every":"1h","kind":"echo"}`},
		{"GET", "/api/executions/" + l1.ExecutionID + "/events", ""},
	} {
		var body any
		if c.body != "" {
			body = c.body
		}
		p := e.do(c.method, c.path, key, body).problem(http.StatusForbidden, CodeTenantDisabled)
		detailHas(t, p, "acme")
	}
	// The workers' calls on leases they hold go on, so running work ends.
	e.do("POST", "/api/executions/"+l1.ExecutionID+"/heartbeat", key, `{"lease_token":"`+l1.LeaseToken+`"}`).want(http.StatusOK)
	e.do("POST", "/api/executions/"+l1.ExecutionID+"/complete", key, `{"lease_token":"`+l1.LeaseToken+`"}`).want(http.StatusOK)
	e.do("POST", "/api/executions/"+l2.ExecutionID+"/fail", key, `{"lease_token":"`+l2.LeaseToken+`","error":"x"}`).want(http.StatusOK)
	// The admin still acts on the tenant.
	e.submit(e.admin, `{"kind":"echo"}`, http.StatusCreated, "Latch-Tenant", "acme")

	e.do("PATCH", "/api/tenants/acme", e.admin, `{"disabled":"yes"}`).problem(http.StatusBadRequest, CodeInvalidRequest)
	r = e.do("PATCH", "/api/tenants/acme", e.admin, `{"disabled":false}`).want(http.StatusOK)
	if !strings.Contains(string(r.body), `"disabled":false`) {
		t.Fatalf("PATCH enable: %s", r.body)
	}
	e.do("GET", "/api/executions", key, nil).want(http.StatusOK)
}

func TestTenantDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.tenant("acme")
	other := e.tenant("globex")
	e.submit(key, `{"kind":"echo","dedup_key":"d"}`, http.StatusCreated)
	l := e.claimOne(key)
	e.do("PUT", "/api/schedules/s", key, `{"every":"1h","kind":"echo"}`).want(http.StatusCreated)

	e.do("DELETE", "/api/tenants/acme", key, nil).problem(http.StatusForbidden, CodeForbidden)
	p := e.do("DELETE", "/api/tenants/acme", e.admin, nil).problem(http.StatusConflict, CodeNotTerminal)
	detailHas(t, p, "force=true")
	e.do("DELETE", "/api/tenants/acme?force=maybe", e.admin, nil).problem(http.StatusBadRequest, CodeInvalidRequest)
	e.do("GET", "/api/executions/"+l.ExecutionID, key, nil).want(http.StatusOK)

	e.do("DELETE", "/api/tenants/acme?force=true", e.admin, nil).want(http.StatusNoContent)
	e.do("GET", "/api/executions", key, nil).problem(http.StatusUnauthorized, CodeUnauthorized)
	e.do("GET", "/api/tenants/acme", e.admin, nil).problem(http.StatusNotFound, CodeNotFound)
	e.do("GET", "/api/tenants/acme/keys", e.admin, nil).problem(http.StatusNotFound, CodeNotFound)
	e.do("POST", "/api/executions", e.admin, `{"kind":"echo"}`, "Latch-Tenant", "acme").problem(http.StatusNotFound, CodeNotFound)
	e.do("POST", "/api/executions/"+l.ExecutionID+"/heartbeat", e.admin, `{"lease_token":"`+l.LeaseToken+`"}`).
		problem(http.StatusConflict, CodeLeaseLost)
	e.do("DELETE", "/api/tenants/acme", e.admin, nil).problem(http.StatusNotFound, CodeNotFound)
	e.do("GET", "/api/executions", other, nil).want(http.StatusOK)

	// The name is free again, and starts from nothing.
	key = e.tenant("acme")
	if x := e.submit(key, `{"kind":"echo","dedup_key":"d"}`, http.StatusCreated); x.ExecutionID == l.ExecutionID {
		t.Error("the new tenant's dedup key maps to the deleted tenant's execution")
	}
	e.do("GET", "/api/schedules/s", key, nil).problem(http.StatusNotFound, CodeNotFound)
}

// TestKeyDeletedOnEveryServer: two API servers, each with its own
// connection pool on one PostgreSQL database, as two processes would be.
// A key deleted through one answers 401 on the other at its next request:
// no server keeps a key it has looked up.
func TestKeyDeletedOnEveryServer(t *testing.T) {
	t.Parallel()
	url := testdb.PostgresSchema(t, "latch_api_keys_", "multi-server PostgreSQL test")
	ctx := context.Background()
	if _, err := postgres.Migrate(ctx, url, "up"); err != nil {
		t.Fatal(err)
	}
	admin := NewKey()
	servers := make([]*testEnv, 2)
	for i := range servers {
		st, err := postgres.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		srv := httptest.NewServer(New(Config{Store: st, AdminKeyHash: HashKey(admin)}))
		t.Cleanup(srv.Close)
		servers[i] = &testEnv{t: t, srv: srv, admin: admin}
	}
	one, two := servers[0], servers[1]
	key := one.tenant("acme")
	var k createdKey
	one.do("POST", "/api/tenants/acme/keys", admin, nil).want(http.StatusCreated).decode(&k)
	// Both servers have served the key (and would have it cached, if they
	// cached keys).
	for range 3 {
		two.do("GET", "/api/executions", k.APIKey, nil).want(http.StatusOK)
		one.do("GET", "/api/executions", k.APIKey, nil).want(http.StatusOK)
	}
	one.do("DELETE", "/api/tenants/acme/keys/"+k.KeyID, admin, nil).want(http.StatusNoContent)
	two.do("GET", "/api/executions", k.APIKey, nil).problem(http.StatusUnauthorized, CodeUnauthorized)
	one.do("GET", "/api/executions", k.APIKey, nil).problem(http.StatusUnauthorized, CodeUnauthorized)
	two.do("GET", "/api/executions", key, nil).want(http.StatusOK)

	// Disabling through one server is seen by the other at once too.
	one.do("PATCH", "/api/tenants/acme", admin, `{"disabled":true}`).want(http.StatusOK)
	two.do("GET", "/api/executions", key, nil).problem(http.StatusForbidden, CodeTenantDisabled)
}
