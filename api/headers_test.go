package api

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHeadersTooLarge: headers over MaxHeaderBytes are answered 431 as a
// problem document with a stable code, over a real listener whose
// http.Server has the backstop this package documents; headers under the
// limit are served.
func TestHeadersTooLarge(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := httptest.NewUnstartedServer(e.api)
	srv.Config.MaxHeaderBytes = HeaderBytesBackstop
	srv.Start()
	t.Cleanup(srv.Close)
	key := e.tenant("acme")

	send := func(filler int) *http.Response {
		t.Helper()
		req, err := http.NewRequest("GET", srv.URL+"/api/executions", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("X-Filler", strings.Repeat("f", filler))
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}

	if r := send(MaxHeaderBytes - 1024); r.StatusCode != http.StatusOK {
		t.Fatalf("headers just under the limit: status %d", r.StatusCode)
	}
	r := send(MaxHeaderBytes + 1)
	body, _ := io.ReadAll(r.Body)
	var p Problem
	if r.StatusCode != http.StatusRequestHeaderFieldsTooLarge ||
		r.Header.Get("Content-Type") != "application/problem+json" ||
		json.Unmarshal(body, &p) != nil || p.Code != CodeHeadersTooLarge || p.Status != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("headers over the limit: %d %s %s", r.StatusCode, r.Header.Get("Content-Type"), body)
	}
	if r.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("431 answer without nosniff: %v", r.Header)
	}
	// Beyond the backstop net/http answers by itself, before any handler:
	// still a 431, the hard bound on what a request makes the server read.
	if r := send(HeaderBytesBackstop + 8192); r.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("headers over the backstop: status %d", r.StatusCode)
	}
}

// TestNoSniff: every answer — a success, an error, the OpenAPI document —
// tells browsers not to guess its content type.
func TestNoSniff(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.tenant("acme")
	for what, r := range map[string]*resp{
		"submit":       e.do("POST", "/api/executions", key, `{"kind":"echo"}`).want(http.StatusCreated),
		"problem":      e.do("GET", "/api/executions/missing", key, nil).want(http.StatusNotFound),
		"unauthorized": e.do("GET", "/api/executions", "", nil).want(http.StatusUnauthorized),
		"no route":     e.do("GET", "/api/nothing", key, nil).want(http.StatusNotFound),
		"openapi":      e.do("GET", "/api/openapi.json", "", nil).want(http.StatusOK),
		"metrics":      e.do("GET", "/metrics", "", nil).want(http.StatusOK),
		"healthz":      e.do("GET", "/healthz", "", nil).want(http.StatusOK),
	} {
		if got := r.header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s: X-Content-Type-Options %q, want nosniff", what, got)
		}
	}
}
