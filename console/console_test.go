package console_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/latch-run/latch/api"
	"github.com/latch-run/latch/auth"
	"github.com/latch-run/latch/console"
	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/sqlite"
)

// TestMain fails the run if a test leaves a goroutine behind: /live
// streams must end with their requests or with Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// env is the API with the console, as latch serve runs them, over its own
// SQLite file, reached over real HTTP.
type env struct {
	t       *testing.T
	store   *sqlite.Store
	console *console.Console
	srv     *httptest.Server
	admin   string
}

func newEnv(t *testing.T, opts ...func(*console.Config)) *env {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, testdb.SQLite(t))
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	e := &env{t: t, store: st, admin: auth.NewKey()}
	authn := auth.Authenticator{Store: st, AdminKeyHash: auth.HashKey(e.admin)}
	cfg := console.Config{Store: st, Auth: authn, PollInterval: time.Hour, MinRefresh: 100 * time.Millisecond}
	for _, o := range opts {
		o(&cfg)
	}
	e.console = console.New(cfg)
	srv := api.New(api.Config{Store: st, AdminKeyHash: authn.AdminKeyHash, Console: e.console})
	e.srv = httptest.NewServer(srv)
	t.Cleanup(e.srv.Close)
	t.Cleanup(e.console.Close)
	return e
}

// call sends an API request with key and fails the test unless it
// succeeds; it returns the answer's body.
func (e *env) call(method, path, key, body string) []byte {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		e.t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, raw)
	}
	return raw
}

// tenant creates a tenant through the API and returns its key.
func (e *env) tenant(name string) string {
	e.t.Helper()
	var out struct {
		APIKey string `json:"api_key"`
	}
	if err := json.Unmarshal(e.call("POST", "/api/tenants", e.admin, `{"name":"`+name+`"}`), &out); err != nil {
		e.t.Fatal(err)
	}
	return out.APIKey
}

// submit admits one execution straight into the store.
func (e *env) submit(tenant string, sub store.Submission) *store.Execution {
	e.t.Helper()
	if sub.Kind == "" {
		sub.Kind = "echo"
	}
	res, err := e.store.Admit(context.Background(), &store.AdmitParams{Tenant: tenant, Items: []store.Submission{sub}})
	if err != nil || res.Items[0].Err != nil {
		e.t.Fatalf("admit: %v %v", err, res)
	}
	return res.Items[0].Execution
}

func (e *env) get(id string) *store.Execution {
	e.t.Helper()
	x, err := e.store.Get(context.Background(), &store.GetParams{ID: id})
	if err != nil {
		e.t.Fatalf("get %s: %v", id, err)
	}
	return x
}

// browser is one person's browser: a cookie jar, redirects not followed,
// and the headers a browser sends on a same-origin form post.
type browser struct {
	e      *env
	client *http.Client
}

func (e *env) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{e: e, client: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type page struct {
	status   int
	location string
	header   http.Header
	body     string
}

func (b *browser) do(method, path string, form url.Values, headers ...string) *page {
	b.e.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.e.srv.URL+path, body)
	if err != nil {
		b.e.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if method == http.MethodPost {
		req.Header.Set("Origin", b.e.srv.URL)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := b.client.Do(req)
	if err != nil {
		b.e.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return &page{status: res.StatusCode, location: res.Header.Get("Location"), header: res.Header, body: string(raw)}
}

func (b *browser) login(key string) {
	b.e.t.Helper()
	if p := b.do("POST", "/login", url.Values{"key": {key}}); p.status != http.StatusSeeOther {
		b.e.t.Fatalf("login: %d %s", p.status, p.body)
	}
}

var idLink = regexp.MustCompile(`href="/executions/([0-9a-f-]{36})"`)

// ids are the executions a page links to, in page order.
func (p *page) ids() []string {
	var out []string
	for _, m := range idLink.FindAllStringSubmatch(p.body, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestLoginGuardsEveryPage(t *testing.T) {
	e := newEnv(t)
	b := e.browser()
	for _, path := range []string{"/executions", "/executions/x", "/schedules"} {
		p := b.do("GET", path, nil)
		if p.status != http.StatusSeeOther || p.location != "/login?next="+url.QueryEscape(path) {
			t.Errorf("GET %s without a session: %d to %q, want 303 to the login page", path, p.status, p.location)
		}
	}
	if p := b.do("GET", "/live", nil); p.status != http.StatusUnauthorized {
		t.Errorf("GET /live without a session: %d, want 401", p.status)
	}
	if p := b.do("POST", "/executions/x/cancel", nil); p.status != http.StatusSeeOther || p.location != "/login" {
		t.Errorf("a cancel without a session: %d to %q, want 303 to the login page", p.status, p.location)
	}

	p := b.do("POST", "/login", url.Values{"key": {"lk_not-a-key"}, "next": {"/schedules"}})
	if p.status != http.StatusUnauthorized || !strings.Contains(p.body, "That key is not valid.") {
		t.Fatalf("a wrong key: %d, want 401 and the reason on the login page", p.status)
	}
	if ck := p.header.Get("Set-Cookie"); ck != "" {
		t.Fatalf("a refused login set a cookie: %q", ck)
	}
	if p := b.do("POST", "/login", url.Values{"key": {e.admin}}, "Origin", "https://evil.example",
		"Sec-Fetch-Site", "cross-site"); p.status != http.StatusForbidden || p.header.Get("Set-Cookie") != "" {
		t.Fatalf("a cross-site login: %d, cookie %q; want 403 and none", p.status, p.header.Get("Set-Cookie"))
	}
	if p := b.do("GET", "/login?next="+url.QueryEscape("//evil.example"), nil); !strings.Contains(p.body,
		`name="next" value="/executions"`) {
		t.Errorf("the login form carries a next outside the site:\n%s", p.body)
	}

	p = b.do("POST", "/login", url.Values{"key": {e.admin}, "next": {"/schedules?tenant=a"}})
	if p.status != http.StatusSeeOther || p.location != "/schedules?tenant=a" {
		t.Fatalf("login: %d to %q, want 303 back to the page asked for", p.status, p.location)
	}
	ck := p.header.Get("Set-Cookie")
	if strings.Contains(ck, e.admin) || strings.Contains(ck, auth.HashKey(e.admin)) || !strings.HasPrefix(ck, "latch_console=v2.") {
		t.Errorf("session cookie %q: want a session token, never the key or its hash", ck)
	}
	for _, attr := range []string{"HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(ck, attr) {
			t.Errorf("session cookie %q lacks %s", ck, attr)
		}
	}
	if ck := e.browser().do("POST", "/login", url.Values{"key": {e.admin}}, "X-Forwarded-Proto", "https").header.Get("Set-Cookie"); !strings.HasPrefix(ck, "__Host-latch_console=") || !strings.Contains(ck, "Secure") {
		t.Errorf("behind an HTTPS proxy the session cookie %q is not Secure", ck)
	}
	if p := b.do("GET", "/executions", nil); p.status != http.StatusOK || !strings.Contains(p.body, `<span class="who">admin</span>`) {
		t.Fatalf("after login: %d", p.status)
	}

	if p := b.do("POST", "/logout", nil); p.status != http.StatusSeeOther || p.location != "/login" {
		t.Fatalf("logout: %d to %q", p.status, p.location)
	}
	if p := b.do("GET", "/executions", nil); p.status != http.StatusSeeOther {
		t.Fatalf("after logout the pages still open: %d", p.status)
	}
}

// A session is a token the console signed: the key's hash alone (what a
// backup of the store holds) opens nothing, nor the old token of a key's
// hash, nor a token signed otherwise or expired; servers given one secret
// accept each other's sessions.
func TestSessionTokens(t *testing.T) {
	var clock atomic.Pointer[time.Time]
	now := time.Now()
	clock.Store(&now)
	secret := []byte("a secret the servers share, 32 b")
	e := newEnv(t, func(c *console.Config) {
		c.SessionSecret = secret
		c.Now = func() time.Time { return *clock.Load() }
	})
	key := e.tenant("a")
	hash := auth.HashKey(key)
	exp := strconv.FormatInt(now.Add(time.Hour).Unix(), 10)
	for _, forged := range []string{hash, "v1." + hash + "." + exp + ".AAAA", "v1." + hash + "." + exp + ".",
		"v2." + hash + "." + exp + ".AAAA"} {
		b := e.browser()
		u, _ := url.Parse(e.srv.URL)
		b.client.Jar.SetCookies(u, []*http.Cookie{{Name: "latch_console", Value: forged, Path: "/"}})
		if p := b.do("GET", "/executions", nil); p.status != http.StatusSeeOther {
			t.Errorf("cookie %q opened a session: %d", forged, p.status)
		}
	}

	b := e.browser()
	b.login(key)
	if p := b.do("GET", "/executions", nil); p.status != http.StatusOK {
		t.Fatalf("a fresh session is refused: %d", p.status)
	}
	// Another server on the store behind the same address (the cookie goes
	// to both): with the same secret it takes the session, with another it
	// does not (and drops the cookie).
	for _, c := range []struct {
		secret []byte
		want   int
	}{{secret, http.StatusOK}, {[]byte("another secret entirely, 32 byte"), http.StatusSeeOther}} {
		authn := auth.Authenticator{Store: e.store, AdminKeyHash: auth.HashKey(e.admin)}
		other := httptest.NewServer(console.New(console.Config{Store: e.store, Auth: authn, SessionSecret: c.secret}))
		req, _ := http.NewRequest("GET", other.URL+"/executions", nil)
		res, err := b.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		other.Close()
		if res.StatusCode != c.want {
			t.Errorf("a server with secret %q answered %d, want %d", c.secret, res.StatusCode, c.want)
		}
	}

	b = e.browser()
	b.login(key)
	later := now.Add(12*time.Hour + time.Second)
	clock.Store(&later)
	if p := b.do("GET", "/executions", nil); p.status != http.StatusSeeOther {
		t.Fatalf("after 12 hours the session still opens pages: %d", p.status)
	}
}

func TestLoginSendsNowhereElse(t *testing.T) {
	e := newEnv(t)
	for _, next := range []string{"//evil.example/x", "https://evil.example/", `/\evil.example`, "javascript:alert(1)",
		"/api/tenants", ""} {
		b := e.browser()
		p := b.do("POST", "/login", url.Values{"key": {e.admin}, "next": {next}})
		if p.location != "/executions" {
			t.Errorf("next=%q: redirected to %q, want /executions", next, p.location)
		}
	}
}

func TestTenantSeesOnlyItsOwn(t *testing.T) {
	e := newEnv(t)
	keyA := e.tenant("a")
	e.tenant("b")
	mine := e.submit("a", store.Submission{})
	theirs := e.submit("b", store.Submission{})

	b := e.browser()
	b.login(keyA)
	for _, path := range []string{"/executions", "/executions?tenant=b"} {
		p := b.do("GET", path, nil)
		if ids := p.ids(); p.status != http.StatusOK || len(ids) != 1 || ids[0] != mine.ID {
			t.Errorf("GET %s as tenant a: %d, executions %v, want only %s", path, p.status, ids, mine.ID)
		}
		if strings.Contains(p.body, `name="tenant"`) {
			t.Errorf("GET %s as tenant a shows the admin's tenant filter", path)
		}
	}
	if p := b.do("GET", "/executions/"+theirs.ID, nil); p.status != http.StatusNotFound {
		t.Errorf("tenant a reading b's execution: %d, want 404", p.status)
	}
	if p := b.do("POST", "/executions/"+theirs.ID+"/cancel", url.Values{"confirm": {"yes"}}); p.status != http.StatusNotFound {
		t.Errorf("tenant a cancelling b's execution: %d, want 404", p.status)
	}
	if got := e.get(theirs.ID).Status; got != store.StatusQueued {
		t.Errorf("b's execution is %s after a's cancel, want queued", got)
	}

	admin := e.browser()
	admin.login(e.admin)
	if ids := admin.do("GET", "/executions", nil).ids(); len(ids) != 2 {
		t.Errorf("admin, every tenant: executions %v, want both", ids)
	}
	if ids := admin.do("GET", "/executions?tenant=b", nil).ids(); len(ids) != 1 || ids[0] != theirs.ID {
		t.Errorf("admin filtering tenant b: executions %v, want %s", ids, theirs.ID)
	}
	if p := admin.do("GET", "/executions/"+theirs.ID, nil); p.status != http.StatusOK {
		t.Errorf("admin reading b's execution: %d", p.status)
	}
}

func TestCancelFromTheConsole(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	x := e.submit("a", store.Submission{})
	b := e.browser()
	b.login(key)

	p := b.do("POST", "/executions/"+x.ID+"/cancel", nil, "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site")
	if p.status != http.StatusForbidden {
		t.Errorf("a cross-site cancel: %d, want 403", p.status)
	}
	if got := e.get(x.ID).Status; got != store.StatusQueued {
		t.Fatalf("a refused cancel left the execution %s", got)
	}

	page := b.do("GET", "/executions/"+x.ID, nil)
	if !strings.Contains(page.body, `action="/executions/`+x.ID+`/cancel"`) {
		t.Fatal("a queued execution's page has no cancel button")
	}
	p = b.confirmFirst("/executions/"+x.ID+"/cancel", url.Values{}, func() bool { return e.get(x.ID).Status == store.StatusQueued })
	if p.status != http.StatusSeeOther || p.location != "/executions/"+x.ID {
		t.Fatalf("cancel: %d to %q", p.status, p.location)
	}
	if got := e.get(x.ID).Status; got != store.StatusCancelled {
		t.Fatalf("after cancel the execution is %s", got)
	}
	page = b.do("GET", "/executions/"+x.ID, nil)
	if strings.Contains(page.body, "/cancel\"") || !strings.Contains(page.body, `class="status cancelled"`) {
		t.Error("a cancelled execution's page still offers cancel or does not say cancelled")
	}
}

func TestPagesEscapeWhatUsersSubmitted(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	x := e.submit("a", store.Submission{Kind: "<script>alert(1)</script>", DedupKey: `"><img src=x onerror=alert(1)>`,
		Payload: json.RawMessage(`{"html":"</pre><script>alert(2)</script>"}`)})
	b := e.browser()
	b.login(key)
	for _, path := range []string{"/executions", "/executions/" + x.ID} {
		p := b.do("GET", path, nil)
		if p.status != http.StatusOK {
			t.Fatalf("GET %s: %d", path, p.status)
		}
		for _, raw := range []string{"<script>alert", "<img src=x"} {
			if strings.Contains(p.body, raw) {
				t.Errorf("GET %s carries %q unescaped", path, raw)
			}
		}
		if csp := p.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
		}
	}
	// The filter form echoes what was asked, into attribute values.
	admin := e.browser()
	admin.login(e.admin)
	evil := `"><script>alert(3)</script>`
	q := url.Values{"tenant": {evil}, "kind": {evil}, "queue": {evil}, "dedup_key": {evil}, "schedule": {evil}}
	for _, path := range []string{"/executions?" + q.Encode(), "/schedules?" + q.Encode(), "/login?next=/" + url.QueryEscape(evil)} {
		if p := admin.do("GET", path, nil); strings.Contains(p.body, "<script>alert(3)") {
			t.Errorf("GET %s carries the filter unescaped", path)
		}
	}
}

// TestExecutionsScanBound: a filtered list page examines at most ListScan
// executions; when none of those match it says so (not "No executions
// match") and its Older link goes on to the match.
func TestExecutionsScanBound(t *testing.T) {
	e := newEnv(t, func(c *console.Config) { c.ListScan = 5 })
	key := e.tenant("a")
	rare := e.submit("a", store.Submission{Kind: "rare"})
	for range 12 {
		e.submit("a", store.Submission{Kind: "common"})
	}
	b := e.browser()
	b.login(key)
	path, pages := "/executions?kind=rare", 0
	var found []string
	for path != "" {
		p := b.do("GET", path, nil)
		pages++
		if pages > 10 {
			t.Fatal("paging did not end")
		}
		ids := p.ids()
		found = append(found, ids...)
		m := regexp.MustCompile(`<a href="([^"]+)">Older executions</a>`).FindStringSubmatch(p.body)
		path = ""
		if m != nil {
			path = strings.ReplaceAll(m[1], "&amp;", "&")
			if len(ids) == 0 && !strings.Contains(p.body, "None of the newest executions searched match") {
				t.Errorf("an empty page with an Older link does not say that older ones may match:\n%s", p.body)
			}
		} else if len(ids) == 0 && !strings.Contains(p.body, "No executions match.") {
			t.Errorf("the last, empty page does not say that nothing matches")
		}
	}
	if len(found) != 1 || found[0] != rare.ID || pages < 3 {
		t.Fatalf("found %v in %d pages; want only %s, after at least 2 empty pages", found, pages, rare.ID)
	}
}

func TestExecutionsPageByPage(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	want := map[string]bool{}
	for range 120 {
		want[e.submit("a", store.Submission{}).ID] = true
	}
	b := e.browser()
	b.login(key)
	seen := map[string]bool{}
	path, pages := "/executions", 0
	for path != "" {
		p := b.do("GET", path, nil)
		pages++
		for _, id := range p.ids() {
			if seen[id] {
				t.Fatalf("execution %s on two pages", id)
			}
			seen[id] = true
		}
		m := regexp.MustCompile(`<a href="([^"]+)">Older executions</a>`).FindStringSubmatch(p.body)
		path = ""
		if m != nil {
			path = strings.ReplaceAll(m[1], "&amp;", "&")
		}
	}
	if pages != 3 || len(seen) != len(want) {
		t.Fatalf("%d pages, %d executions; want 3 pages and all %d", pages, len(seen), len(want))
	}
	for id := range want {
		if !seen[id] {
			t.Fatalf("execution %s on no page", id)
		}
	}

	if p := b.do("GET", "/executions?status=bogus", nil); p.status != http.StatusBadRequest ||
		!strings.Contains(p.body, "Unknown status bogus.") {
		t.Errorf("an unknown status filter: %d, want 400 and why", p.status)
	}
	if ids := b.do("GET", "/executions?status=succeeded", nil).ids(); len(ids) != 0 {
		t.Errorf("status=succeeded lists %d executions, want none", len(ids))
	}
}

func TestSchedulesPageByPage(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	keyB := e.tenant("b")
	for i := range 51 {
		e.call("PUT", fmt.Sprintf("/api/schedules/s%02d", i), key, `{"every":"1h","kind":"echo"}`)
	}
	e.call("PUT", "/api/schedules/s99", keyB, `{"every":"1h","kind":"echo"}`)
	names := regexp.MustCompile(`<td>(s\d\d)</td>`)
	more := regexp.MustCompile(`<a href="([^"]+)">More schedules</a>`)
	list := func(b *browser, path string) (got []string, next string) {
		p := b.do("GET", path, nil)
		if p.status != http.StatusOK {
			t.Fatalf("GET %s: %d", path, p.status)
		}
		for _, m := range names.FindAllStringSubmatch(p.body, -1) {
			got = append(got, m[1])
		}
		if m := more.FindStringSubmatch(p.body); m != nil {
			next = strings.ReplaceAll(m[1], "&amp;", "&")
		}
		return got, next
	}
	b := e.browser()
	b.login(key)
	first, next := list(b, "/schedules")
	if len(first) != 50 || first[0] != "s00" || next == "" {
		t.Fatalf("first page: %d schedules from %v, next %q", len(first), first[:1], next)
	}
	rest, last := list(b, next)
	if len(rest) != 1 || rest[0] != "s50" || last != "" {
		t.Fatalf("second page: %v, next %q; want s50 alone and no further page", rest, last)
	}
	// A tenant key reads its own schedules whatever the query names.
	for _, path := range []string{"/schedules?tenant=b", "/schedules?after_tenant=b&after=s00"} {
		got, _ := list(b, path)
		for _, n := range got {
			if n == "s99" {
				t.Errorf("GET %s as tenant a shows tenant b's schedule", path)
			}
		}
		if path == "/schedules?after_tenant=b&after=s00" && (len(got) != 50 || got[0] != "s01") {
			t.Errorf("GET %s as tenant a: %d from %v, want a's page after s00", path, len(got), got[:1])
		}
	}
	admin := e.browser()
	admin.login(e.admin)
	if got, _ := list(admin, "/schedules?tenant=b"); len(got) != 1 || got[0] != "s99" {
		t.Errorf("admin filtering tenant b: %v", got)
	}
}

func TestRunAScheduleNow(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	keyB := e.tenant("b")
	e.call("PUT", "/api/schedules/sweep", key, `{"every":"1h","kind":"echo"}`)
	e.call("PUT", "/api/schedules/theirs", keyB, `{"every":"1h","kind":"echo"}`)
	b := e.browser()
	b.login(key)
	if p := b.do("GET", "/schedules", nil); !strings.Contains(p.body, `name="name" value="sweep"`) {
		t.Fatalf("the schedules page has no Run now for sweep:\n%s", p.body)
	}

	ran := func() bool {
		res, err := e.store.List(context.Background(), &store.ListParams{Schedule: "sweep"})
		return err == nil && len(res.Items) == 0
	}
	p := b.confirmFirst("/schedules/trigger", url.Values{"tenant": {"a"}, "name": {"sweep"}}, ran)
	if p.status != http.StatusSeeOther || !strings.HasPrefix(p.location, "/executions/") {
		t.Fatalf("Run now: %d to %q, want the new execution's page", p.status, p.location)
	}
	x := e.get(strings.TrimPrefix(p.location, "/executions/"))
	if x.Tenant != "a" || x.Schedule != "sweep" || x.Status.Terminal() {
		t.Fatalf("Run now made %+v, want an in-flight execution of a's sweep", x)
	}

	// Not another tenant's schedule, nor across sites.
	if p := b.do("POST", "/schedules/trigger", url.Values{"tenant": {"b"}, "name": {"theirs"}, "confirm": {"yes"}}); p.status != http.StatusNotFound {
		t.Errorf("tenant a running b's schedule: %d, want 404", p.status)
	}
	if p := b.do("POST", "/schedules/trigger", url.Values{"tenant": {"a"}, "name": {"sweep"}}, "Origin", "https://evil.example",
		"Sec-Fetch-Site", "cross-site"); p.status != http.StatusForbidden {
		t.Errorf("a cross-site Run now: %d, want 403", p.status)
	}
	res, err := e.store.List(context.Background(), &store.ListParams{Schedule: "theirs"})
	if err != nil || len(res.Items) != 0 {
		t.Errorf("b's schedule ran: %v %v", res, err)
	}

	admin := e.browser()
	admin.login(e.admin)
	if p := admin.do("POST", "/schedules/trigger", url.Values{"tenant": {"b"}, "name": {"theirs"}, "confirm": {"yes"}}); p.status != http.StatusSeeOther {
		t.Errorf("the admin running b's schedule: %d", p.status)
	}

	// A tenant at its quota (its one slot taken by sweep's run): nothing
	// starts, and the page says why.
	e.call("PUT", "/api/schedules/other", key, `{"every":"1h","kind":"echo"}`)
	e.call("PATCH", "/api/tenants/a", e.admin, `{"max_inflight":1}`)
	p = b.do("POST", "/schedules/trigger", url.Values{"tenant": {"a"}, "name": {"other"}, "confirm": {"yes"}})
	if p.status != http.StatusConflict || !strings.Contains(p.body, "Quota exceeded") {
		t.Errorf("Run now at the quota: %d, want 409 saying so:\n%s", p.status, p.body)
	}
}

func TestSchedulesPage(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	keyB := e.tenant("b")
	e.call("PUT", "/api/schedules/nightly", key, `{"cron":"0 3 * * *","timezone":"Europe/Paris","kind":"echo"}`)
	e.call("PUT", "/api/schedules/sweep", keyB, `{"every":"1m","kind":"echo"}`)
	b := e.browser()
	b.login(key)
	p := b.do("GET", "/schedules", nil)
	if p.status != http.StatusOK || !strings.Contains(p.body, "nightly") || !strings.Contains(p.body, "0 3 * * * (Europe/Paris)") ||
		strings.Contains(p.body, "sweep") {
		t.Errorf("tenant a's schedules page: %d, want nightly only:\n%s", p.status, p.body)
	}
	admin := e.browser()
	admin.login(e.admin)
	if p := admin.do("GET", "/schedules", nil); !strings.Contains(p.body, "nightly") || !strings.Contains(p.body, "every 1m0s") {
		t.Errorf("the admin's schedules page lacks a tenant's schedule:\n%s", p.body)
	}
}

// stream is an open /live: its lines, one at a time.
type stream struct {
	t     *testing.T
	ctx   context.Context
	lines chan string
}

func (b *browser) live(ctx context.Context, headers ...string) *stream {
	t := b.e.t
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", b.e.srv.URL+"/live", nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := b.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if ct := res.Header.Get("Content-Type"); res.StatusCode != http.StatusOK || ct != "text/event-stream" {
		res.Body.Close()
		t.Fatalf("/live: %d %q", res.StatusCode, ct)
	}
	s := &stream{t: t, ctx: ctx, lines: make(chan string)}
	go func() {
		defer close(s.lines)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			select {
			case s.lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	return s
}

// next is the stream's next line that is not blank; "" when none comes
// within wait.
func (s *stream) next(wait time.Duration) string {
	s.t.Helper()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				s.t.Fatal("the stream ended")
			}
			if l != "" {
				return l
			}
		case <-timer.C:
			return ""
		case <-s.ctx.Done():
			s.t.Fatal("the test's time ran out")
		}
	}
}

// event is the stream's next event line and its id line.
func (s *stream) event(wait time.Duration) string {
	s.t.Helper()
	l := s.next(wait)
	if l != "" {
		s.next(wait) // its id
		s.next(wait) // its (empty) data
	}
	return l
}

func TestLiveSaysWhenTheStoreChanged(t *testing.T) {
	e := newEnv(t) // PollInterval an hour: only the store's notifications bring events
	key := e.tenant("a")
	b := e.browser()
	b.login(key)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	s := b.live(ctx)
	if l := s.next(5 * time.Second); l != ": live" {
		t.Fatalf("first line %q", l)
	}
	// The id a browser sends back as Last-Event-ID when it reconnects.
	if l := s.next(5 * time.Second); l != "id: 0" {
		t.Fatalf("second line %q, want the stream's first id", l)
	}
	if l := s.event(200 * time.Millisecond); l != "" {
		t.Fatalf("an event with nothing changed: %q", l)
	}
	e.submit("a", store.Submission{})
	if l := s.event(5 * time.Second); l != "event: change" {
		t.Fatalf("after a submit: %q, want a change event", l)
	}
	// One change, one event: the stream waits for the next change.
	if l := s.event(500 * time.Millisecond); l != "" {
		t.Fatalf("a second event without a second change: %q", l)
	}
	// Events are at least MinRefresh (100 ms here) apart, however fast
	// the store changes.
	e.submit("a", store.Submission{})
	if l := s.event(5 * time.Second); l != "event: change" {
		t.Fatalf("after another submit: %q, want a change event", l)
	}
	last := time.Now()
	e.submit("a", store.Submission{})
	if l := s.event(5 * time.Second); l != "event: change" {
		t.Fatalf("after another submit: %q, want a change event", l)
	}
	if gap := time.Since(last); gap < 90*time.Millisecond {
		t.Fatalf("two events %v apart, want at least MinRefresh", gap)
	}

	// A browser coming back (Last-Event-ID) learns at once that it may
	// have missed something.
	back := b.live(ctx, "Last-Event-ID", "3")
	if l := back.event(5 * time.Second); l != "event: change" {
		t.Fatalf("a reconnected stream starts with %q, want a change event", l)
	}

	e.console.Close()
	for _, st := range []*stream{s, back} {
		for ended := false; !ended; {
			select {
			case _, ok := <-st.lines:
				ended = !ok
			case <-ctx.Done():
				t.Fatal("a stream outlived Close")
			}
		}
	}
}

// HEAD /live answers at once: a stream nobody can read must not hold the
// connection.
func TestLiveHead(t *testing.T) {
	e := newEnv(t)
	b := e.browser()
	b.login(e.admin)
	b.client.Timeout = 10 * time.Second
	if p := b.do("HEAD", "/live", nil); p.status != http.StatusOK {
		t.Fatalf("HEAD /live: %d", p.status)
	}
	if p := b.do("GET", "/executions", nil); p.status != http.StatusOK {
		t.Fatalf("the next request on the connection: %d", p.status)
	}
}

// failing is a store whose reads fail with err.
type failing struct {
	*sqlite.Store
	err error
}

func (f failing) List(context.Context, *store.ListParams) (*store.ListResult, error) {
	return nil, f.err
}

func TestStoreErrorsArePagesWithoutDetails(t *testing.T) {
	for _, c := range []struct {
		err    error
		status int
		say    string
	}{
		{fmt.Errorf("postgres: after: %w", store.ErrInvalid), http.StatusBadRequest, "parameters are not valid"},
		{errors.New("redis: dial tcp 10.0.0.7:6379: connection refused"), http.StatusInternalServerError, "did not answer"},
	} {
		e := newEnv(t, func(cfg *console.Config) { cfg.Store = failing{Store: cfg.Store.(*sqlite.Store), err: c.err} })
		b := e.browser()
		b.login(e.admin)
		p := b.do("GET", "/executions?after=x", nil)
		if p.status != c.status || !strings.Contains(p.body, c.say) || strings.Contains(p.body, "10.0.0.7") {
			t.Errorf("List failing with %q: %d, want %d saying %q and no detail:\n%s", c.err, p.status, c.status, c.say, p.body)
		}
	}
}

func TestAssetsAndUnknownPaths(t *testing.T) {
	e := newEnv(t)
	b := e.browser()
	for path, want := range map[string]string{"/static/style.css": "text/css", "/static/live.js": "javascript"} {
		p := b.do("GET", path, nil)
		if p.status != http.StatusOK || !strings.Contains(p.header.Get("Content-Type"), want) {
			t.Errorf("GET %s: %d %q", path, p.status, p.header.Get("Content-Type"))
		}
	}
	if p := b.do("GET", "/", nil); p.status != http.StatusSeeOther || p.location != "/executions" {
		t.Errorf("GET /: %d to %q", p.status, p.location)
	}
	if p := b.do("GET", "/nope", nil); p.status != http.StatusNotFound || !strings.Contains(p.header.Get("Content-Type"), "text/html") {
		t.Errorf("GET /nope: %d %q, want the console's 404 page", p.status, p.header.Get("Content-Type"))
	}
	// The API keeps its own answers.
	if p := b.do("GET", "/api/nope", nil); p.status != http.StatusNotFound || p.header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("GET /api/nope: %d %q, want the API's problem", p.status, p.header.Get("Content-Type"))
	}
}
