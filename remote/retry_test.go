package remote_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latch-run/latch/remote"
)

// injector stands between a client and a real server: it answers the
// first requests of a path with what fault says, and forwards the others.
type injector struct {
	mu    sync.Mutex
	seen  []http.Header // the headers of each request of the path
	path  string
	fault func(n int, w http.ResponseWriter, r *http.Request) bool // true: answered
	proxy *httputil.ReverseProxy
	url   string
}

func newInjector(t *testing.T, target, path string, fault func(n int, w http.ResponseWriter, r *http.Request) bool) *injector {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	in := &injector{path: path, fault: fault, proxy: httputil.NewSingleHostReverseProxy(u)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != in.path {
			in.proxy.ServeHTTP(w, r)
			return
		}
		in.mu.Lock()
		in.seen = append(in.seen, r.Header.Clone())
		n := len(in.seen)
		in.mu.Unlock()
		if !in.fault(n, w, r) {
			in.proxy.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	in.url = srv.URL
	return in
}

func (in *injector) requests() []http.Header {
	in.mu.Lock()
	defer in.mu.Unlock()
	return slices.Clone(in.seen)
}

// problem answers a problem document.
func problem(w http.ResponseWriter, status int, code, retryAfter string) {
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`{"type":"https://latch.run/problems/` + code + `","title":"t","status":` +
		strconv.Itoa(status) + `,"detail":"injected","code":"` + code + `"}`))
}

// fast is a retry policy of short waits, for the tests.
var fast = remote.RetryPolicy{MaxRetries: 4, Base: 10 * time.Millisecond, Max: 50 * time.Millisecond, MaxRetryAfter: 2 * time.Second}

// TestSubmitRetriesWithItsOwnKey: a submit answered 503, then 429 with
// Retry-After, then lost after the server admitted it is sent again, every
// time with the Idempotency-Key the client chose, and makes one execution.
func TestSubmitRetriesWithItsOwnKey(t *testing.T) {
	ctx := context.Background()
	s := newServer(t)
	key := tenantKey(t, s, "acme")
	in := newInjector(t, s.url, "/api/executions", func(n int, w http.ResponseWriter, r *http.Request) bool {
		switch n {
		case 1:
			problem(w, http.StatusServiceUnavailable, "unavailable", "")
		case 2:
			problem(w, http.StatusTooManyRequests, "quota_exceeded", "1")
		case 3:
			// Admitted, then the connection breaks before the answer.
			rec := httptest.NewRecorder()
			httputil.NewSingleHostReverseProxy(mustURL(t, s.url)).ServeHTTP(rec, r)
			if rec.Code != http.StatusCreated {
				t.Errorf("the admitted submit answered %d", rec.Code)
			}
			hijack(t, w)
		default:
			return false
		}
		return true
	})
	c := remote.New(in.url, key, remote.WithRetry(fast))
	start := time.Now()
	e := must(c.Submit(ctx, remote.SubmitRequest{Kind: "echo"}))(t)
	if time.Since(start) < time.Second {
		t.Fatalf("Retry-After 1 not waited: %s", time.Since(start))
	}
	if e.Deduplicated == nil || !*e.Deduplicated {
		t.Fatalf("the fourth send did not answer the third's execution: %+v", e)
	}
	reqs := in.requests()
	if len(reqs) != 4 {
		t.Fatalf("%d sends, want 4", len(reqs))
	}
	k := reqs[0].Get("Idempotency-Key")
	for i, h := range reqs {
		if h.Get("Idempotency-Key") != k || k == "" {
			t.Fatalf("send %d: Idempotency-Key %q, first %q", i, h.Get("Idempotency-Key"), k)
		}
	}
	if *e.DedupKey != k {
		t.Fatalf("dedup key %q, sent %q", *e.DedupKey, k)
	}
	n := 0
	for _, err := range c.List(ctx, remote.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 1 {
		t.Fatalf("%d executions, want 1", n)
	}
}

// TestRetryOnlyWhatIsSafe: a claim (not idempotent) is not sent again after
// a 503 or a connection lost after it was written; it is after a 429 with
// Retry-After. A 429 without Retry-After is not retried at all. Retries
// stop at MaxRetries.
func TestRetryOnlyWhatIsSafe(t *testing.T) {
	ctx := context.Background()
	s := newServer(t)
	key := tenantKey(t, s, "acme")
	claim := remote.ClaimRequest{WorkerID: "w"}
	cases := []struct {
		name  string
		fault func(n int, w http.ResponseWriter) bool
		code  error // the error answered, nil for success
		sends int
	}{
		{"503", func(n int, w http.ResponseWriter) bool {
			problem(w, 503, "unavailable", "")
			return true
		}, remote.ErrUnavailable, 1},
		{"429 with Retry-After", func(n int, w http.ResponseWriter) bool {
			if n > 2 {
				return false
			}
			problem(w, 429, "too_many_requests", "0")
			return true
		}, nil, 3},
		{"429 without Retry-After", func(n int, w http.ResponseWriter) bool {
			problem(w, 429, "too_many_requests", "")
			return true
		}, remote.ErrTooManyRequests, 1},
		{"Retry-After beyond MaxRetryAfter", func(n int, w http.ResponseWriter) bool {
			problem(w, 429, "too_many_requests", "60")
			return true
		}, remote.ErrTooManyRequests, 1},
		{"429 always", func(n int, w http.ResponseWriter) bool {
			problem(w, 429, "too_many_requests", "0")
			return true
		}, remote.ErrTooManyRequests, 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := newInjector(t, s.url, "/api/workers/claim", func(n int, w http.ResponseWriter, r *http.Request) bool { return tc.fault(n, w) })
			_, err := remote.New(in.url, key, remote.WithRetry(fast)).Claim(ctx, claim)
			if tc.code == nil && err != nil || tc.code != nil && !errors.Is(err, tc.code) {
				t.Fatalf("error %v, want %v", err, tc.code)
			}
			if n := len(in.requests()); n != tc.sends {
				t.Fatalf("%d sends, want %d", n, tc.sends)
			}
		})
	}

	t.Run("connection lost after the request", func(t *testing.T) {
		in := newInjector(t, s.url, "/api/workers/claim", func(n int, w http.ResponseWriter, r *http.Request) bool {
			hijack(t, w)
			return true
		})
		_, err := remote.New(in.url, key, remote.WithRetry(fast)).Claim(ctx, claim)
		if err == nil || len(in.requests()) != 1 {
			t.Fatalf("error %v after %d sends, want one send", err, len(in.requests()))
		}
		// A GET is sent again.
		in.path = "/api/executions"
		_, err = remote.New(in.url, key, remote.WithRetry(fast)).ListPage(ctx, remote.ListOptions{})
		if err == nil || len(in.requests()) != 1+5 {
			t.Fatalf("error %v after %d sends, want 5 more", err, len(in.requests()))
		}
	})

	t.Run("a connection that failed is tried again", func(t *testing.T) {
		var dials atomic.Int32
		d := net.Dialer{}
		hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if dials.Add(1) <= 2 {
				return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("connection refused")}
			}
			return d.DialContext(ctx, network, addr)
		}}}
		leases := must(remote.New(s.url, key, remote.WithRetry(fast), remote.WithHTTPClient(hc)).Claim(ctx, claim))(t)
		if len(leases) != 0 || dials.Load() != 3 {
			t.Fatalf("%d leases after %d dials", len(leases), dials.Load())
		}
	})
}

// TestRetryHonoursContext: a wait past the context's deadline is not
// begun, and a cancel ends a backoff at once.
func TestRetryHonoursContext(t *testing.T) {
	s := newServer(t)
	key := tenantKey(t, s, "acme")
	in := newInjector(t, s.url, "/api/executions", func(n int, w http.ResponseWriter, r *http.Request) bool {
		problem(w, 503, "unavailable", "2")
		return true
	})
	c := remote.New(in.url, key, remote.WithRetry(remote.RetryPolicy{MaxRetries: 3, Base: time.Minute, Max: time.Minute, MaxRetryAfter: time.Minute}))
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.ListPage(ctx, remote.ListOptions{})
	if !errors.Is(err, remote.ErrUnavailable) || time.Since(start) > 400*time.Millisecond {
		t.Fatalf("%v after %s", err, time.Since(start))
	}
	var e *remote.Error
	if !errors.As(err, &e) || e.RetryAfter != 2*time.Second {
		t.Fatalf("RetryAfter of %v", err)
	}

	ctx2, cancel2 := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel2)
	start = time.Now()
	_, err = c.Submit(ctx2, remote.SubmitRequest{Kind: "echo"})
	if err == nil || time.Since(start) > time.Second {
		t.Fatalf("%v after %s: the cancel did not end the wait", err, time.Since(start))
	}
}

// hijack breaks the connection of w without an answer.
func hijack(t *testing.T, w http.ResponseWriter) {
	t.Helper()
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Error(err)
		return
	}
	conn.Close()
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
