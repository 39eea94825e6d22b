package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/latch-run/latch/internal/tracing"
)

// Client calls one latch server. It is safe for concurrent use.
type Client struct {
	base      string
	key       string
	tenant    string // Latch-Tenant, for the admin key
	http      *http.Client
	retry     RetryPolicy
	userAgent string
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sends the requests with hc instead of a client of the
// package's own (which has no timeout of its own: each call is bounded by
// its context).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithTenant sends Latch-Tenant: name with every call: the tenant the admin
// key acts for. A tenant key may name only its own tenant.
func WithTenant(name string) Option { return func(c *Client) { c.tenant = name } }

// WithRetry sets how calls that are safe to repeat are retried;
// RetryPolicy{} (MaxRetries 0) sends every call once.
func WithRetry(p RetryPolicy) Option { return func(c *Client) { c.retry = p } }

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// New returns a client of the server at baseURL ("http://127.0.0.1:8080")
// that authenticates with key (a tenant's key, or the admin key; "" sends
// none).
func New(baseURL, key string, opts ...Option) *Client {
	c := &Client{
		base:      strings.TrimRight(baseURL, "/"),
		key:       key,
		http:      &http.Client{},
		retry:     DefaultRetryPolicy(),
		userAgent: "latch-go",
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// ForTenant returns a copy of c that acts for tenant name (Latch-Tenant):
// what the admin key needs to submit, or to act on one schedule or rate
// limit.
func (c *Client) ForTenant(name string) *Client {
	d := *c
	d.tenant = name
	return &d
}

// Request is one call of the API, for Call.
type Request struct {
	Method string
	Path   string     // "/api/executions", its segments escaped
	Query  url.Values // nil: none
	Header http.Header
	// Body is sent as JSON when not nil (a json.RawMessage as it is).
	Body any
	// Idempotent marks a call whose repeat does no more than its first
	// send: it is retried on 503 and on any failed connection, not only on
	// a 429 with Retry-After and a connection that failed before the
	// request was written.
	Idempotent bool
}

// Call sends req and decodes a 2xx answer's JSON into out (when out is not
// nil); it returns the answer's status. An error answer is a *Error. It is
// the typed methods' one path to the server, exported for an endpoint this
// version of the package does not cover, or a body to send as it is.
func (c *Client) Call(ctx context.Context, req Request, out any) (int, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = json.Marshal(req.Body); err != nil {
			return 0, fmt.Errorf("encode request: %w", err)
		}
	}
	target := c.base + req.Path
	if len(req.Query) > 0 {
		target += "?" + req.Query.Encode()
	}
	for attempt := 0; ; attempt++ {
		status, data, header, err := c.send(ctx, req, target, body)
		if err == nil && status < 400 {
			if out != nil && len(data) > 0 {
				if err := json.Unmarshal(data, out); err != nil {
					return status, fmt.Errorf("decode answer of %s %s: %w", req.Method, req.Path, err)
				}
				if k, ok := out.(keeper); ok {
					k.keep(data)
				}
			}
			return status, nil
		}
		if err == nil {
			err = answerError(status, data, header)
		}
		wait, ok := c.retry.next(attempt, err, req.Idempotent)
		if !ok || ctx.Err() != nil {
			return status, err
		}
		if dl, has := ctx.Deadline(); has && time.Until(dl) < wait {
			return status, err // the wait would outlive the call
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return status, err
		case <-t.C:
		}
	}
}

// maxAnswer bounds the answer the client reads: above the server's 8 MiB
// pages and 32 MiB batches.
const maxAnswer = 64 << 20

// send makes one request and reads its answer.
func (c *Client) send(ctx context.Context, req Request, target string, body []byte) (int, []byte, http.Header, error) {
	resp, err := c.open(ctx, req, target, body)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		// The request was sent: its effect is unknown, as when the
		// connection breaks before the answer.
		return 0, nil, nil, fmt.Errorf("read answer of %s %s: %w", req.Method, req.Path, err)
	}
	return resp.StatusCode, data, resp.Header, nil
}

// open sends one request with the client's headers and answers the
// response, its body unread.
func (c *Client) open(ctx context.Context, req Request, target string, body []byte) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.Method, target, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range req.Header {
		hr.Header[k] = v
	}
	if body != nil && hr.Header.Get("Content-Type") == "" {
		hr.Header.Set("Content-Type", "application/json")
	}
	if hr.Header.Get("Accept") == "" {
		hr.Header.Set("Accept", "application/json")
	}
	if c.userAgent != "" {
		hr.Header.Set("User-Agent", c.userAgent)
	}
	if c.key != "" {
		hr.Header.Set("Authorization", "Bearer "+c.key)
	}
	if c.tenant != "" {
		hr.Header.Set("Latch-Tenant", c.tenant)
	}
	if hr.Header.Get("Traceparent") == "" {
		// The caller's trace context (an OpenTelemetry span's, or one given
		// with a remote span context): a submit's runs join its trace.
		if tp := tracing.Current(ctx); tp != "" {
			hr.Header.Set("Traceparent", tp)
		}
	}
	return c.http.Do(hr)
}

// answerError is the *Error of an error answer.
func answerError(status int, data []byte, header http.Header) *Error {
	var p Problem
	e := &Error{Status: status}
	if json.Unmarshal(data, &p) == nil && p.Code != "" {
		e = p.Err()
		e.Status = status
	} else {
		e.Detail = strings.TrimSpace(string(data))
	}
	if ra := strings.TrimSpace(header.Get("Retry-After")); ra != "" {
		if secs, err := strconv.Atoi(ra); err == nil && secs >= 0 {
			e.RetryAfter, e.retryAfterSet = time.Duration(secs)*time.Second, true
		} else if at, err := http.ParseTime(ra); err == nil {
			e.RetryAfter, e.retryAfterSet = max(time.Until(at), 0), true
		}
	}
	return e
}

// seg escapes one path segment.
func seg(s string) string { return url.PathEscape(s) }
