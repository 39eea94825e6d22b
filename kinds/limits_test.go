package kinds

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/engine"
)

// A sleep or an http timeout past the built-in kinds' longest run fails at
// once and for good, saying the bound: it never holds a slot for a week.
func TestBuiltinsRefuseRunsPastTheMaximum(t *testing.T) {
	t.Parallel()
	for _, p := range []string{`{"seconds":604800}`, `{"seconds":900.5}`} {
		_, err := SleepHandler(t.Context(), job(Sleep, p))
		if !engine.IsPermanent(err) || !strings.Contains(err.Error(), "900") {
			t.Errorf("sleep %s: %v, want a permanent error naming the bound", p, err)
		}
	}
	for _, s := range []string{"604800", "3600"} {
		_, err := call(t, local, `{"url":"http://127.0.0.1:1/","timeout_seconds":`+s+`}`)
		if !engine.IsPermanent(err) || !strings.Contains(err.Error(), "900") {
			t.Errorf("http timeout_seconds %s: %v, want a permanent error naming the bound", s, err)
		}
	}
}

// neverAnswers is a server that accepts requests and never answers them
// until the test ends.
func neverAnswers(t *testing.T) *httptest.Server {
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-done:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(done) }) // before srv.Close
	return srv
}

// An http call without timeout_seconds ends at the kind's default timeout,
// and one whose target never sends its answer's headers at the header
// timeout, whatever timeout_seconds allows: both retryable. (The bounds are
// made short here; the handler's context would allow a minute.)
func TestHTTPDefaultAndHeaderTimeouts(t *testing.T) {
	t.Parallel()
	srv := neverAnswers(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for _, c := range []struct {
		name              string
		timeout, headers  time.Duration
		payload, wantText string
	}{
		{"default timeout", 50 * time.Millisecond, time.Hour, `{"url":"` + srv.URL + `"}`, "no answer within"},
		{"header timeout", time.Hour, 50 * time.Millisecond, `{"url":"` + srv.URL + `","timeout_seconds":600}`, "timeout awaiting response headers"},
	} {
		h, err := newHTTPKind(local, nil, nil, httpTimeouts{call: c.timeout, headers: c.headers})
		if err != nil {
			t.Fatal(err)
		}
		_, err = h(ctx, job(HTTP, c.payload))
		if err == nil || engine.IsPermanent(err) || !strings.Contains(err.Error(), c.wantText) || ctx.Err() != nil {
			t.Errorf("%s: %v, want a retryable %q", c.name, err, c.wantText)
		}
	}
	if tr := mustKind(t).client.Transport.(*http.Transport); tr.ResponseHeaderTimeout != HTTPHeaderTimeout {
		t.Errorf("ResponseHeaderTimeout %v, want %v", tr.ResponseHeaderTimeout, HTTPHeaderTimeout)
	}
}

func mustKind(t *testing.T) *httpKind {
	t.Helper()
	k, err := buildHTTPKind(local, nil, nil, httpTimeouts{})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Payloads that can never succeed fail at once, without retries: a header
// value with CR or LF, a header name that is no token, a redirect to a
// scheme other than http and https.
func TestHTTPPayloadFaultsArePermanent(t *testing.T) {
	t.Parallel()
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(ok.Close)
	for _, p := range []map[string]any{
		{"url": ok.URL, "headers": map[string]string{"X-A": "a\r\nInjected: 1"}},
		{"url": ok.URL, "headers": map[string]string{"X-A": "a\nb"}},
		{"url": ok.URL, "headers": map[string]string{"Bad Name": "v"}},
	} {
		if _, err := call(t, local, payload(t, p)); !engine.IsPermanent(err) || !strings.Contains(err.Error(), "header") {
			t.Errorf("payload %v: %v, want a permanent error about the header", p, err)
		}
	}
	for _, target := range []string{"file:///etc/passwd", "ftp://example.com/x", "gopher://example.com/"} {
		srv := httptest.NewServer(http.RedirectHandler(target, http.StatusFound))
		t.Cleanup(srv.Close)
		// "*": every public host, as with LATCH_HTTP_ALLOW unset, so that
		// the allow list has no say on the target.
		_, err := call(t, []string{"127.0.0.1", "*"}, payload(t, map[string]any{"url": srv.URL}))
		if !engine.IsPermanent(err) || !strings.Contains(err.Error(), "redirect") {
			t.Errorf("redirect to %s: %v, want permanent", target, err)
		}
	}
}

// A name that does not resolve says so, without the resolver's address.
func TestHTTPUnresolvedNameHidesTheResolver(t *testing.T) {
	t.Parallel()
	h, err := newHTTPHandler([]string{"nowhere.example"}, nil, fakeResolver(t, map[string]netip.Addr{}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = run(t, h, `{"url":"http://nowhere.example/"}`)
	if err == nil || !strings.Contains(err.Error(), "could not resolve nowhere.example") ||
		strings.Contains(err.Error(), " on ") || strings.Contains(err.Error(), ":53") {
		t.Errorf("error %v, want \"could not resolve nowhere.example\" and no resolver address", err)
	}
	if engine.IsPermanent(err) || errors.Is(err, errNotAllowed) {
		t.Errorf("an unresolved name is retried (DNS may come back): %v", err)
	}
}
