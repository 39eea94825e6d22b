package console_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/latch-run/latch/auth"
	"github.com/latch-run/latch/console"
)

// A session opened with a key ends at the next request once the key is
// deleted: the console resolves the key on every request.
func TestDeletedKeyEndsSession(t *testing.T) {
	e := newEnv(t)
	first := e.tenant("a")
	var k struct {
		KeyID  string `json:"key_id"`
		APIKey string `json:"api_key"`
	}
	if err := json.Unmarshal(e.call("POST", "/api/tenants/a/keys", e.admin, ""), &k); err != nil {
		t.Fatal(err)
	}
	b, other := e.browser(), e.browser()
	b.login(k.APIKey)
	other.login(first)
	if p := b.do("GET", "/executions", nil); p.status != http.StatusOK {
		t.Fatalf("a fresh session: %d", p.status)
	}
	e.call("DELETE", "/api/tenants/a/keys/"+k.KeyID, e.admin, "")
	if p := b.do("GET", "/executions", nil); p.status != http.StatusSeeOther || !strings.HasPrefix(p.location, "/login") {
		t.Fatalf("the session of a deleted key: %d to %q, want the login page", p.status, p.location)
	}
	if p := other.do("GET", "/executions", nil); p.status != http.StatusOK {
		t.Fatalf("the session of the tenant's other key: %d, want it open", p.status)
	}
	if p := e.browser().do("POST", "/login", url.Values{"key": {k.APIKey}}); p.status != http.StatusUnauthorized {
		t.Fatalf("login with the deleted key: %d, want 401", p.status)
	}
}

// Logging out ends the session on the server: a copy of the cookie taken
// before the logout gets the login page afterwards, also from a second
// console server sharing the store (and the secret), where it worked
// before.
func TestLogoutEndsCopiedCookie(t *testing.T) {
	secret := []byte("a secret the servers share, 32 b")
	e := newEnv(t, func(c *console.Config) { c.SessionSecret = secret })
	key := e.tenant("a")
	b := e.browser()
	b.login(key)
	u, _ := url.Parse(e.srv.URL)
	var copied *http.Cookie
	for _, ck := range b.client.Jar.Cookies(u) {
		if ck.Name == "latch_console" {
			copied = ck
		}
	}
	if copied == nil {
		t.Fatal("no session cookie after login")
	}
	authn := auth.Authenticator{Store: e.store, AdminKeyHash: auth.HashKey(e.admin)}
	second := httptest.NewServer(console.New(console.Config{Store: e.store, Auth: authn, SessionSecret: secret}))
	defer second.Close()
	get := func(base string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", base+"/executions", nil)
		req.AddCookie(&http.Cookie{Name: copied.Name, Value: copied.Value})
		res, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	if res := get(second.URL); res.StatusCode != http.StatusOK {
		t.Fatalf("the copied cookie on the second server before logout: %d, want 200", res.StatusCode)
	}
	if p := b.do("POST", "/logout", nil); p.status != http.StatusSeeOther || p.location != "/login" {
		t.Fatalf("logout: %d to %q", p.status, p.location)
	}
	for what, base := range map[string]string{"the second server": second.URL, "the first server": e.srv.URL} {
		if res := get(base); res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/login") {
			t.Errorf("the copied cookie on %s after logout: %d to %q, want the login page", what,
				res.StatusCode, res.Header.Get("Location"))
		}
	}
}

// A disabled tenant's session gets a page that says so, and its key cannot
// log in; enabled again, the session goes on.
func TestDisabledTenantSession(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	b := e.browser()
	b.login(key)
	e.call("PATCH", "/api/tenants/a", e.admin, `{"disabled":true}`)
	if p := b.do("GET", "/executions", nil); p.status != http.StatusForbidden || !strings.Contains(p.body, "disabled") {
		t.Fatalf("a disabled tenant's page: %d, want 403 saying it is disabled", p.status)
	}
	if p := e.browser().do("POST", "/login", url.Values{"key": {key}}); p.status != http.StatusForbidden ||
		p.header.Get("Set-Cookie") != "" {
		t.Fatalf("login with a disabled tenant's key: %d, cookie %q", p.status, p.header.Get("Set-Cookie"))
	}
	e.call("PATCH", "/api/tenants/a", e.admin, `{"disabled":false}`)
	if p := b.do("GET", "/executions", nil); p.status != http.StatusOK {
		t.Fatalf("after enabling: %d", p.status)
	}
}
