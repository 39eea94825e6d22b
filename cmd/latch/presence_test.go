package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"
)

// explainRaw answers GET /api/executions/{id}/explain with key: the body
// and the gates it names.
func explainRaw(t *testing.T, base, key, id string) (string, []string) {
	t.Helper()
	var raw json.RawMessage
	call(t, base, "GET", "/api/executions/"+id+"/explain", key, "", http.StatusOK, &raw)
	var x struct {
		Gates []struct {
			Gate string `json:"gate"`
		} `json:"gates"`
	}
	if err := json.Unmarshal(raw, &x); err != nil {
		t.Fatal(err)
	}
	var gates []string
	for _, g := range x.Gates {
		gates = append(gates, g.Gate)
	}
	return string(raw), gates
}

func hasGate(gates []string, g string) bool {
	for _, have := range gates {
		if have == g {
			return true
		}
	}
	return false
}

// consoleOverview logs into the console with key and returns its
// overview page.
func consoleOverview(t *testing.T, base, key string) string {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := browser.PostForm(base+"/login", url.Values{"key": {key}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("console login: %d", res.StatusCode)
	}
	res, err = browser.Get(base + "/overview")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("console overview: %d\n%s", res.StatusCode, body)
	}
	return string(body)
}

// A worker polling POST /api/workers/claim is in the server's presence,
// under its key's tenant, with the queues and kinds of its claim, within a
// second or so of its first claim (engine.ReporterConfig.Prompt), well
// before the next periodic report: once it claimed kind K in queue Q,
// explain of its tenant's ready K execution has no no_worker gate and the
// console's overview no longer warns of K. A worker of another tenant,
// even claiming the same queue and kind under the same worker id, counts
// for nothing here, and this tenant's view never shows it.
func TestServeHTTPWorkerPresence(t *testing.T) {
	base := startServe(t, "--workers", "0")
	acme := newTenant(t, base, testAdminKey)
	var ten struct {
		APIKey string `json:"api_key"`
	}
	call(t, base, "POST", "/api/tenants", testAdminKey, `{"name":"globex"}`, http.StatusCreated, &ten)
	globex := ten.APIKey

	var ids []string
	for range 2 {
		ids = append(ids, submitID(t, base, acme, `{"kind":"resize-image","queue":"media"}`))
	}
	// globex's worker claims the same queue and kind under the id acme's
	// worker will use: it finds nothing of globex's, and is globex's.
	var c claimed
	call(t, base, "POST", "/api/workers/claim", globex,
		`{"worker_id":"w-1","queues":["media"],"kinds":["resize-image"],"max":1}`, http.StatusOK, &c)
	if len(c.Leases) != 0 {
		t.Fatalf("globex's worker claimed %d of acme's executions", len(c.Leases))
	}
	// Once the admin sees globex's worker, it is in the store.
	waitFor(t, "globex's worker in the admin's overview", func() bool {
		return strings.Contains(consoleOverview(t, base, testAdminKey), `<td class="id">w-1</td><td>globex</td>`)
	})
	if _, gates := explainRaw(t, base, acme, ids[0]); !hasGate(gates, "no_worker") {
		t.Errorf("explain with only globex's worker live: gates %v, want no_worker", gates)
	}
	if page := consoleOverview(t, base, acme); !strings.Contains(page, `<div class="unclaimed">`) ||
		strings.Contains(page, "w-1") {
		t.Errorf("acme's overview with only globex's worker live: want the warning of resize-image "+
			"and no worker of globex:\n%s", page)
	}

	// acme's worker claims one of its two: the other is ready, and a live
	// worker of acme claims its queue and kind.
	call(t, base, "POST", "/api/workers/claim", acme,
		`{"worker_id":"w-1","queues":["media"],"kinds":["resize-image"],"max":1}`, http.StatusOK, &c)
	if len(c.Leases) != 1 {
		t.Fatalf("acme's worker claimed %d, want 1", len(c.Leases))
	}
	ready := ids[0]
	if c.Leases[0].ExecutionID == ready {
		ready = ids[1]
	}
	// Within 5 s: before the next periodic report (store.ReportEvery,
	// 10 s) could have told the store.
	deadline := time.Now().Add(5 * time.Second)
	for {
		body, gates := explainRaw(t, base, acme, ready)
		if !hasGate(gates, "no_worker") {
			if strings.Contains(body, "w-1") {
				t.Errorf("explain names a worker: %s", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("explain of a ready resize-image in media after acme's HTTP worker claimed them: %s", body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	page := consoleOverview(t, base, acme)
	if strings.Contains(page, `<div class="unclaimed">`) {
		t.Errorf("acme's overview still warns of unclaimed work:\n%s", page)
	}
	if strings.Count(page, `<td class="id">w-1</td>`) != 1 {
		t.Errorf("acme's overview lists its worker w-1 %d times, want once (its own, not globex's):\n%s",
			strings.Count(page, `<td class="id">w-1</td>`), page)
	}
	// A worker of the admin key (no Latch-Tenant) claims every tenant's
	// work: it is in presence under tenant "", which the console says.
	call(t, base, "POST", "/api/workers/claim", testAdminKey, `{"worker_id":"admin-w","kinds":["none"]}`,
		http.StatusOK, &c)
	waitFor(t, "the admin key's worker in the admin's overview", func() bool {
		return strings.Contains(consoleOverview(t, base, testAdminKey), `<td class="id">admin-w</td><td><span`)
	})
	// The admin sees every worker, each under its tenant; the admin key's
	// as claiming for every tenant (not as an in-process slot).
	admin := consoleOverview(t, base, testAdminKey)
	for _, want := range []string{`<td class="id">w-1</td><td>acme</td>`, `<td class="id">w-1</td><td>globex</td>`,
		`<td class="id">admin-w</td><td><span class="muted" title="an in-process worker slot, or a worker claiming with the admin key">every tenant</span>`} {
		if !strings.Contains(admin, want) {
			t.Errorf("the admin's overview lacks %s:\n%s", want, admin)
		}
	}
	if page := consoleOverview(t, base, acme); strings.Contains(page, "admin-w") {
		t.Errorf("acme's overview shows the admin key's worker:\n%s", page)
	}
}

// waitFor polls cond until it holds, failing the test after 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5 s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
