package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// spec describes how the wrapper treats one typed endpoint.
type spec struct {
	// body: the request carries a JSON object, decoded strictly into Req.
	body bool
	// optional: the body may be left out (no bytes at all), then Req
	// stays as if {} was sent.
	optional bool
	// limit is the body limit in bytes; 0 = Server.bodyLimit.
	limit int64
	// hold is how long the endpoint may hold a request on purpose (a long
	// poll). The request timeout grows by it and the write deadline is
	// pushed out so the answer is not cut off.
	hold time.Duration
	// public: no Authorization needed.
	public bool
	// leased: a worker's call on a lease it holds, answered for a disabled
	// tenant's keys too, so that running work can finish.
	leased bool
}

// binder is implemented by requests that read path values, query
// parameters or headers. It runs after the body is decoded.
type binder interface {
	bind(r *http.Request) error
}

// validator is implemented by requests with rules beyond their JSON types.
// It runs after bind.
type validator interface {
	validate() error
}

// statusCoder is implemented by responses whose success status is not 200.
// A 204 has no body.
type statusCoder interface {
	statusCode() int
}

// endpoint wraps a typed handler: it authenticates the caller, checks the
// Content-Type, decodes the body strictly and within its size limit, binds
// path and query values, validates, applies the request timeout, runs fn
// and writes its answer as JSON, or the error as a problem document.
func endpoint[Req, Resp any](s *Server, sp spec, fn func(context.Context, *Req) (*Resp, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		timeout := s.cfg.RequestTimeout + sp.hold
		if sp.hold > 0 {
			// Best effort: a recorder in tests does not support it.
			_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(timeout + time.Second))
		}
		ctx, cancel := context.WithTimeout(withIncomingTrace(r.Context(), r), timeout)
		defer cancel()
		r = r.WithContext(ctx)

		resp, err := func() (*Resp, error) {
			if !sp.public {
				p, err := s.authenticate(r, sp.leased)
				if err != nil {
					return nil, err
				}
				ctx = withPrincipal(ctx, p)
				noteTenant(ctx, p.tenant)
				r = r.WithContext(ctx)
			}
			req := new(Req)
			if sp.body && !(sp.optional && r.ContentLength == 0) {
				limit := sp.limit
				if limit == 0 {
					limit = s.bodyLimit()
				}
				release, err := s.bodies.acquire(ctx, r, limit)
				if err != nil {
					return nil, err
				}
				defer release() // when answered: the decoded body lives until then
				data, err := readBody(w, r, limit)
				if err != nil {
					return nil, err
				}
				if err := decodeJSON(data, req, ""); err != nil {
					return nil, err
				}
			}
			if b, ok := any(req).(binder); ok {
				if err := b.bind(r); err != nil {
					return nil, err
				}
			} else if _, err := query(r); err != nil {
				return nil, err
			}
			if v, ok := any(req).(validator); ok {
				if err := v.validate(); err != nil {
					return nil, err
				}
			}
			return fn(ctx, req)
		}()
		if err != nil {
			s.fail(w, r, err)
			return
		}
		status := http.StatusOK
		if sc, ok := any(resp).(statusCoder); ok {
			status = sc.statusCode()
		}
		if status == http.StatusNoContent {
			w.WriteHeader(status)
			return
		}
		writeJSON(w, status, resp)
	})
}

// fail answers with the problem for err, logging what the client is not
// told. The stores map their outages to store.ErrUnavailable (problemFor);
// an internal error seen while the connection fails or the store fails a
// ping is taken for an outage too, as a backstop for a driver error no
// store has mapped yet.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	p := problemFor(err)
	if p.Code == CodeInternal && (connectionLost(err) || s.storeDown(r.Context())) {
		p = problem(CodeUnavailable, "the store does not answer; retry later (with the same dedup key, for a submit)")
		p.retryAfter = storeDownRetryAfter
		p.cause = err
	}
	if p.Status >= 500 {
		// The path only: the query may carry a stream ticket, which must
		// never reach a log.
		level := slog.LevelError
		if r.Context().Err() != nil && errors.Is(err, context.Canceled) {
			level = slog.LevelDebug // the client went away
		}
		s.log.Log(r.Context(), level, "request failed", append([]any{
			"method", r.Method, "path", r.URL.Path, "status", p.Status, "err", err}, logAttrs(r)...)...)
	}
	writeProblem(w, p)
}

// connectionLost reports whether err is the store's connection failing
// under the call (reset, refused, closed, timed out). Such a call may or may
// not have committed; the pool reconnects at once, so the ping that follows
// usually succeeds — but the request is still the network's fault, to be
// retried, not this server's.
func connectionLost(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE)
}

// storeDownRetryAfter is the Retry-After, in seconds, of an answer given
// while the store does not answer.
const storeDownRetryAfter = 2

// storeDown reports whether the store fails a ping: an internal error seen
// while it does is an outage (a restart, a lost connection), which clients
// should retry, not a fault of this server.
func (s *Server) storeDown(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	return s.cfg.Store.Ping(ctx) != nil
}

// writeJSON answers with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := marshal(v)
	if err != nil {
		// Response types are plain data; this cannot happen.
		writeProblem(w, problemFor(err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(body) // the client may be gone; nothing to do
}

// marshal encodes v followed by a newline, without HTML escaping: payloads
// and results are answered byte for byte as stored.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// query returns the request's query parameters, refusing any not allowed and
// any given twice: a misspelt filter must not silently match everything.
func query(r *http.Request, allowed ...string) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, invalid("query", "malformed query string")
	}
	for k, vs := range q {
		if !slices.Contains(allowed, k) {
			if len(allowed) == 0 {
				return nil, invalid(k, "unknown query parameter; this endpoint takes none")
			}
			return nil, invalid(k, "unknown query parameter; known: %s", strings.Join(allowed, ", "))
		}
		if len(vs) > 1 {
			return nil, invalid(k, "query parameter given more than once")
		}
	}
	return q, nil
}

// queryLimit is a list's page size: the limit parameter of q, def when it
// is absent, refused unless an integer from 1 to max.
func queryLimit(q url.Values, def, max int) (int, error) {
	v := q.Get("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		return 0, invalid("limit", "must be an integer from 1 to %d", max)
	}
	return n, nil
}
