package kinds

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/latch-run/latch/engine"
)

// MaxHTTPBody is how much of an answer's body the http kind keeps.
const MaxHTTPBody = 64 << 10

// The http kind's time bounds. A call without timeout_seconds ends after
// DefaultHTTPTimeout; timeout_seconds is at most MaxRunSeconds. Whatever
// the call's timeout, the answer's headers must come within
// HTTPHeaderTimeout (the transport's ResponseHeaderTimeout, unless the
// given client's transport sets one), so that a target that accepts and
// never answers frees the worker's slot soon. Each ends the attempt with
// an error that is retried.
const (
	DefaultHTTPTimeout = 60 * time.Second
	HTTPHeaderTimeout  = 60 * time.Second
)

// httpTimeouts are the http kind's time bounds; zero fields take the
// defaults above (tests make them short).
type httpTimeouts struct {
	call, headers time.Duration
}

// The headers the http kind adds to every request it makes (replacing any
// of the same name in the payload's headers), so that the target can make
// its effect idempotent: the execution's id, and the attempt number (1 for
// the first attempt; a new attempt after a failure or an expired lease has
// a higher number).
const (
	HeaderExecutionID = "Latch-Execution-Id"
	HeaderAttempt     = "Latch-Attempt"
)

// errNotAllowed is the cause of a request to a host the allow list refuses.
var errNotAllowed = errors.New("host not allowed by " + AllowEnv)

// errBadRedirect is the cause of a redirect no request can follow: to a
// scheme other than http and https.
var errBadRedirect = errors.New("only http and https can be followed")

// httpPayload is the http kind's payload.
type httpPayload struct {
	URL     string            `json:"url"`
	Method  string            `json:"method"`
	Headers map[string]string `json:"headers"`
	// Body is sent as is when it is a JSON string, else as JSON (with
	// Content-Type application/json unless a header sets it).
	Body           json.RawMessage `json:"body"`
	TimeoutSeconds *float64        `json:"timeout_seconds"`
}

// httpResult is the http kind's result.
type httpResult struct {
	StatusCode int    `json:"status_code"`
	Body       string `json:"body"`
}

// NewHTTPHandler returns the http kind's handler, allowed to call the hosts
// matching patterns (see ParseAllow; empty allows every public host), making
// its requests with client (nil: a client on a clone of
// http.DefaultTransport). The client's Transport, if set, must be an
// *http.Transport: the handler uses a clone whose dialling it takes over, so
// that every connection is checked against the address rule (see the
// package documentation), and which uses no proxy.
func NewHTTPHandler(patterns []string, client *http.Client) (engine.Handler, error) {
	return newHTTPHandler(patterns, client, nil)
}

// newHTTPHandler is NewHTTPHandler resolving names with resolver (nil: the
// default): tests give a name any address with it.
func newHTTPHandler(patterns []string, client *http.Client, resolver *net.Resolver) (engine.Handler, error) {
	return newHTTPKind(patterns, client, resolver, httpTimeouts{})
}

// newHTTPKind is newHTTPHandler with the time bounds tm.
func newHTTPKind(patterns []string, client *http.Client, resolver *net.Resolver, tm httpTimeouts) (engine.Handler, error) {
	h, err := buildHTTPKind(patterns, client, resolver, tm)
	if err != nil {
		return nil, err
	}
	return h.handle, nil
}

func buildHTTPKind(patterns []string, client *http.Client, resolver *net.Resolver, tm httpTimeouts) (*httpKind, error) {
	if tm.call <= 0 {
		tm.call = DefaultHTTPTimeout
	}
	if tm.headers <= 0 {
		tm.headers = HTTPHeaderTimeout
	}
	allow, err := newAllowList(patterns)
	if err != nil {
		return nil, fmt.Errorf("kinds: http allow list: %w", err)
	}
	var c http.Client
	if client != nil {
		c = *client
	}
	t, err := checkedTransport(c.Transport, &dialer{allow: allow, resolver: resolver})
	if err != nil {
		return nil, fmt.Errorf("kinds: http client: %w", err)
	}
	if t.ResponseHeaderTimeout <= 0 {
		t.ResponseHeaderTimeout = tm.headers
	}
	c.Transport = t
	next := c.CheckRedirect
	// The dialer checks the address of every hop; the allow list is
	// checked here.
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
			return fmt.Errorf("redirect to a %s: URL: %w", req.URL.Scheme, errBadRedirect)
		}
		if !allow.allows(req.URL) {
			return fmt.Errorf("redirect to %s: %w", req.URL.Redacted(), errNotAllowed)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &httpKind{allow: allow, client: &c, timeout: tm.call}, nil
}

type httpKind struct {
	allow   *allowList
	client  *http.Client
	timeout time.Duration // of a call without timeout_seconds
}

func (h *httpKind) handle(ctx context.Context, job *engine.Job) (json.RawMessage, error) {
	p, err := parseHTTPPayload(job.Payload, h.allow)
	if err != nil {
		return nil, engine.Permanent(err)
	}
	timeout := p.timeout
	if timeout == 0 {
		timeout = h.timeout
	}
	reqCtx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("no answer within %v", timeout))
	defer cancel()
	req, err := p.request(reqCtx)
	if err != nil {
		return nil, engine.Permanent(err)
	}
	// Set after the payload's headers, so that they always tell the truth:
	// the target can recognise a repeated call (same execution and attempt)
	// and a new attempt of work it has already done.
	req.Header.Set(HeaderExecutionID, job.ID)
	req.Header.Set(HeaderAttempt, strconv.Itoa(job.Attempt))
	req, span := traceRequest(req)
	resp, err := h.client.Do(req)
	endRequest(span, resp, err)
	if err != nil {
		if errors.Is(err, errNotAllowed) || errors.Is(err, errBadRedirect) {
			return nil, engine.Permanent(fmt.Errorf("http: %w", err))
		}
		if refused, ok := errors.AsType[*refusedError](err); ok {
			// Said on its own: the request's URL may be an earlier hop.
			return nil, engine.Permanent(fmt.Errorf("http: %w", refused))
		}
		if cause := context.Cause(ctx); cause != nil {
			return nil, fmt.Errorf("http: %s %s: %w", req.Method, req.URL.Redacted(), cause)
		}
		if dns, ok := errors.AsType[*net.DNSError](err); ok {
			// Retried: names come back.
			return nil, fmt.Errorf("http: %s %s: %w", req.Method, req.URL.Redacted(), &resolveError{dns})
		}
		if cause := context.Cause(reqCtx); cause != nil {
			return nil, fmt.Errorf("http: %s %s: %w", req.Method, req.URL.Redacted(), cause) // retried
		}
		return nil, fmt.Errorf("http: %w", err) // network trouble, the header timeout: retry
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxHTTPBody))
	if err != nil {
		return nil, fmt.Errorf("http: %s %s: reading the answer: %w", req.Method, req.URL.Redacted(), err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, statusError(req, resp, body)
	}
	return json.Marshal(httpResult{StatusCode: resp.StatusCode, Body: string(body)})
}

// httpCall is a checked http payload.
type httpCall struct {
	url      *url.URL
	method   string
	headers  map[string]string
	body     []byte
	jsonBody bool
	timeout  time.Duration // 0: none of its own
}

// parseHTTPPayload checks a payload; its errors are the payload's fault.
func parseHTTPPayload(raw json.RawMessage, allow *allowList) (*httpCall, error) {
	var p httpPayload
	if err := decodePayload(raw, &p); err != nil {
		return nil, err
	}
	if p.URL == "" {
		return nil, errors.New("http: payload needs \"url\"")
	}
	u, err := url.Parse(p.URL)
	if err != nil {
		return nil, fmt.Errorf("http: bad url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("http: url must be absolute http or https, not %q", u.Redacted())
	}
	if !allow.allows(u) {
		return nil, fmt.Errorf("http: %s: %w", u.Host, errNotAllowed)
	}
	if allow.listsURL(u) {
		// The allow list names the URL's host; a Host header would send
		// the request to another virtual host behind its address.
		for k := range p.Headers {
			if strings.EqualFold(strings.TrimSpace(k), "Host") {
				return nil, fmt.Errorf("http: headers: %q: setting the Host header is refused for a host %s lists; put the host in the url",
					k, AllowEnv)
			}
		}
	}
	c := &httpCall{url: u, method: strings.ToUpper(p.Method), headers: p.Headers}
	if c.method == "" {
		c.method = http.MethodGet
	}
	if len(p.Body) > 0 && string(p.Body) != "null" {
		var s string
		if json.Unmarshal(p.Body, &s) == nil {
			c.body = []byte(s)
		} else {
			c.body, c.jsonBody = p.Body, true
		}
	}
	for k, v := range p.Headers {
		if !validHeaderName(k) {
			return nil, fmt.Errorf("http: headers: %q is not a valid header name", k)
		}
		if !validHeaderValue(v) {
			return nil, fmt.Errorf("http: headers: the value of %q holds a control character (CR, LF, ...)", k)
		}
	}
	if p.TimeoutSeconds != nil {
		t := *p.TimeoutSeconds
		if !(t > 0 && t <= MaxRunSeconds) {
			return nil, fmt.Errorf("http: timeout_seconds must be in (0, %d] (the built-in kinds' longest run)", MaxRunSeconds)
		}
		c.timeout = time.Duration(t * float64(time.Second))
	}
	return c, nil
}

// request builds the request; its errors are the payload's fault.
func (c *httpCall) request(ctx context.Context) (*http.Request, error) {
	var body io.Reader
	if c.body != nil {
		body = bytes.NewReader(c.body)
	}
	req, err := http.NewRequestWithContext(ctx, c.method, c.url.String(), body)
	if err != nil {
		return nil, fmt.Errorf("http: %w", err)
	}
	for k, v := range c.headers {
		// Only for a host the allow list does not name (parseHTTPPayload
		// refuses it otherwise) may a header set the request's Host.
		if strings.EqualFold(strings.TrimSpace(k), "Host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	if c.jsonBody && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// statusError turns a non-2xx answer into the error the worker records:
// retryable for 5xx and 429 (after Retry-After when given), else permanent.
func statusError(req *http.Request, resp *http.Response, body []byte) error {
	snippet := strings.TrimSpace(strings.ToValidUTF8(string(body), "\uFFFD"))
	if len(snippet) > 512 {
		cut := 512
		for cut > 0 && !utf8.RuneStart(snippet[cut]) {
			cut--
		}
		snippet = snippet[:cut] + "…"
	}
	err := fmt.Errorf("http: %s %s: %s", req.Method, req.URL.Redacted(), resp.Status)
	if snippet != "" {
		err = fmt.Errorf("%w: %s", err, snippet)
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		if d, ok := retryAfter(resp.Header.Get("Retry-After")); ok {
			return engine.RetryAfter(err, d)
		}
		return err
	case resp.StatusCode >= 500:
		return err
	default:
		return engine.Permanent(err)
	}
}

// retryAfter parses a Retry-After header: seconds or an HTTP date.
func retryAfter(v string) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}

// resolveError is a name that did not resolve, said without the
// DNSError's own text, which names the resolver's address: no map of the
// server's network for the tenant. It unwraps to the DNSError.
type resolveError struct{ dns *net.DNSError }

func (e *resolveError) Error() string {
	why := "the lookup failed"
	switch {
	case e.dns.IsNotFound:
		why = "no such host"
	case e.dns.IsTimeout:
		why = "the lookup timed out"
	}
	return "could not resolve " + e.dns.Name + ": " + why
}

func (e *resolveError) Unwrap() error { return e.dns }

// validHeaderName: a token (RFC 9110), as net/http requires of a name.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// validHeaderValue: no control characters but tab, as net/http requires
// of a value (a CR or LF would start another header).
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
