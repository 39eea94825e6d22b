package api

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/latch-run/latch/internal/sse"
	"github.com/latch-run/latch/internal/tracing"
	"github.com/latch-run/latch/internal/watch"
	"github.com/latch-run/latch/store"
)

// Config configures a Server. Only Store is required.
type Config struct {
	// Store holds all state. Required. If it implements store.Notifier,
	// long polls and event streams wake at once on changes; if it is also
	// a store.ChangeFeed, a change wakes only the waiters it concerns.
	Store store.Store

	// AdminKeyHash is HashKey(LATCH_ADMIN_KEY) when the admin key is set
	// by the environment: then that key, and no admin key stored earlier,
	// is the admin. Empty: the admin is whichever key the store resolves
	// as admin (the one generated and stored at first start).
	AdminKeyHash string

	// Logger receives internal errors and panics. nil = slog.Default().
	Logger *slog.Logger

	// MaxPayloadBytes bounds an execution's payload and a completion's
	// result, in canonical JSON bytes. 0 = 1 MiB.
	MaxPayloadBytes int

	// MaxBatchBytes bounds the body of POST /api/executions/batch.
	// 0 = 32 MiB.
	MaxBatchBytes int64

	// RequestTimeout bounds each request's work. Long polls (wait_seconds)
	// get it on top of their wait; event streams are not bounded by it.
	// 0 = 30s.
	RequestTimeout time.Duration

	// PollInterval is how often waiting requests re-read the store when no
	// change notification arrives. 0 = 500ms.
	PollInterval time.Duration

	// MaxListBytes bounds one page of GET /api/executions by the bytes of
	// its items' payloads and results: the page is cut after the item that
	// reaches it (a page always holds at least one item) and next_cursor is
	// set. 0 = 8 MiB.
	MaxListBytes int

	// ListScan bounds the executions one GET /api/executions examines when
	// its filters are answered by examining executions one by one
	// (store.ListParams.Scan): the page then ends there with the matches
	// found, maybe none, and next_cursor continues after the last one
	// examined. 0 = store.DefaultListScan (10,000).
	ListScan int

	// MaxStreamsPerTenant bounds the event streams one tenant (or the
	// admin) may hold open on this server at once; one more is refused
	// with 429 too_many_requests. 0 = 100; < 0 = no bound.
	MaxStreamsPerTenant int

	// MaxLongPollsPerTenant bounds the long polls (GET
	// /api/executions/{id} and claims with wait_seconds > 0) one tenant (or
	// the admin) may hold open on this server at once; one more is refused
	// with 429 too_many_requests. 0 = 100; < 0 = no bound.
	MaxLongPollsPerTenant int

	// MaxStreamTicketsPerTenant bounds the stream tickets (POST
	// /api/executions/{id}/stream-ticket) one tenant (or the admin) may
	// hold unused on this server at once; one more is refused with 429
	// too_many_requests. 0 = 100; < 0 = no bound.
	MaxStreamTicketsPerTenant int

	// MaxBodyBytesInFlight is the server-wide budget of request body bytes
	// being read and handled at once (bodies over 64 KiB count, by their
	// Content-Length, or by their limit when they declare none). A request
	// that cannot get its share within a second is refused with 503
	// unavailable. 0 = 64 MiB.
	MaxBodyBytesInFlight int64

	// MaxSchedulesPerTenant bounds how many schedules a tenant may have;
	// creating one more is refused with 409 schedule_limit (replacing one
	// is always allowed). 0 = 1000; < 0 = no bound.
	MaxSchedulesPerTenant int

	// MinScheduleInterval is the shortest time between two ticks a
	// schedule may have (schedule.Spec.MinInterval): a PUT of a timing
	// that ticks more often, an every or a cron with seconds, is refused
	// with 400 schedule_too_frequent. Schedules stored before it was
	// raised keep their timing until they are replaced. 0 = 1s, the
	// shortest timing there is.
	MinScheduleInterval time.Duration

	// StreamWriteTimeout bounds each write of an event stream (an event or
	// a keep-alive): a client that stops reading for longer loses the
	// stream. 0 = 30s.
	StreamWriteTimeout time.Duration

	// MaxStreamLifetime bounds how long one event stream stays open: it
	// then ends, and the client opens a new one, its key checked again.
	// (An open stream also checks its key before each event and each
	// keep-alive.) 0 = 1 hour.
	MaxStreamLifetime time.Duration

	// Now is the clock passed to the store. nil = time.Now. Waiting is
	// always measured in real time.
	Now func() time.Time

	// MetricsToken, when set, is required on GET /metrics as
	// Authorization: Bearer <token>: the series name tenants' queues and
	// kinds. "" = /metrics is served to anyone who can reach it.
	MetricsToken string

	// Collectors are further Prometheus collectors served on /metrics with
	// the server's own (the scheduler's tick counter, say).
	Collectors []prometheus.Collector

	// Console serves every path outside /api/, /healthz, /readyz and
	// /metrics. nil = those paths answer 404 not_found.
	Console http.Handler

	// TracerProvider, if set, traces submits, claims and the completes and
	// fails of workers over HTTP (docs/tracing.md). nil: no spans; a
	// submit still keeps the caller's traceparent header.
	TracerProvider trace.TracerProvider

	// OnScheduleChange is called after a schedule was created, replaced or
	// deleted (a successful PUT or DELETE /api/schedules/{name}), so that
	// an in-process scheduler can wake at once instead of at its next
	// poll. It runs on the request's goroutine and must not block. nil =
	// nothing is called.
	OnScheduleChange func()
}

// Defaults of Config's zero fields.
const (
	DefaultMaxPayloadBytes    = store.DefaultMaxPayloadBytes
	DefaultMaxBatchBytes      = 32 << 20
	DefaultRequestTimeout     = 30 * time.Second
	DefaultPollInterval       = 500 * time.Millisecond
	DefaultMaxListBytes       = 8 << 20
	DefaultStreamWriteTimeout = 30 * time.Second
	DefaultMaxStreamLifetime  = time.Hour
	DefaultMaxStreams         = sse.DefaultMaxStreams
	DefaultMaxLongPolls       = 100
	DefaultMaxBodyInFlight    = 64 << 20
	DefaultMaxSchedules       = 1000
)

// bodySlack is what a single-execution body may hold beyond its payload.
const bodySlack = 64 << 10

// Server is the HTTP API. It is an http.Handler; the caller owns the
// http.Server and its timeouts.
type Server struct {
	cfg      Config
	log      *slog.Logger
	mux      *http.ServeMux
	patterns map[string]bool
	metrics  *metrics
	hub      *watch.Hub  // what waiting requests wait on
	streams  *slots      // event streams per tenant
	polls    *slots      // long polls per tenant
	tickets  *tickets    // stream tickets issued, not yet used
	bodies   *bodyBudget // body bytes being read at once

	tracer trace.Tracer // nil: tracing off

	closeOnce sync.Once
	done      chan struct{} // closed by Close
}

// New returns the API server for cfg. It panics if cfg.Store is nil.
func New(cfg Config) *Server {
	if cfg.Store == nil {
		panic("api: Config.Store is nil")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxPayloadBytes <= 0 {
		cfg.MaxPayloadBytes = DefaultMaxPayloadBytes
	}
	if cfg.MaxBatchBytes <= 0 {
		cfg.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.MaxListBytes <= 0 {
		cfg.MaxListBytes = DefaultMaxListBytes
	}
	if cfg.ListScan <= 0 {
		cfg.ListScan = store.DefaultListScan
	}
	if cfg.StreamWriteTimeout <= 0 {
		cfg.StreamWriteTimeout = DefaultStreamWriteTimeout
	}
	if cfg.MaxStreamLifetime <= 0 {
		cfg.MaxStreamLifetime = DefaultMaxStreamLifetime
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxStreamsPerTenant == 0 {
		cfg.MaxStreamsPerTenant = DefaultMaxStreams
	}
	if cfg.MaxLongPollsPerTenant == 0 {
		cfg.MaxLongPollsPerTenant = DefaultMaxLongPolls
	}
	if cfg.MaxStreamTicketsPerTenant == 0 {
		cfg.MaxStreamTicketsPerTenant = DefaultMaxTickets
	}
	if cfg.MaxBodyBytesInFlight <= 0 {
		cfg.MaxBodyBytesInFlight = DefaultMaxBodyInFlight
	}
	if cfg.MaxSchedulesPerTenant == 0 {
		cfg.MaxSchedulesPerTenant = DefaultMaxSchedules
	}
	s := &Server{
		cfg:      cfg,
		log:      cfg.Logger,
		mux:      http.NewServeMux(),
		patterns: map[string]bool{},
		metrics:  newMetrics(cfg.Collectors...),
		done:     make(chan struct{}),
		hub: watch.New(watch.Config{Store: cfg.Store, PollInterval: cfg.PollInterval,
			ReadTimeout: cfg.RequestTimeout}),
		streams: newSlots(cfg.MaxStreamsPerTenant),
		polls:   newSlots(cfg.MaxLongPollsPerTenant),
		tickets: newTickets(cfg.MaxStreamTicketsPerTenant, time.Now),
		bodies:  newBodyBudget(cfg.MaxBodyBytesInFlight),
		tracer:  tracing.Tracer(cfg.TracerProvider),
	}
	for _, rt := range s.routes() {
		s.mux.Handle(rt.pattern, rt.handler)
		s.patterns[rt.pattern] = true
	}
	return s
}

// Handler returns s; it exists for callers that prefer the explicit form.
func (s *Server) Handler() http.Handler { return s }

// Close ends waiting early: long polls answer what they have now (the
// execution as it is, no leases) and event streams end, so that
// http.Server.Shutdown need not wait for them. Register it with
// http.Server.RegisterOnShutdown. Requests keep being served; Close is
// idempotent.
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.done) })
}

// Registry is the server's own Prometheus registry, served at /metrics.
// Other components may register their collectors on it.
func (s *Server) Registry() *prometheus.Registry { return s.metrics.reg }

// ServeHTTP routes the request and records its metrics.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w}
	s.metrics.inflight.Inc()
	defer s.metrics.inflight.Dec()
	route := s.dispatch(rec, r)
	s.metrics.observe(route, rec.status(), time.Since(start))
}

// dispatch serves r and returns the route label for metrics: the route's
// pattern, "console", "redirect", "unmatched" or "headers_too_large" (so
// labels stay few).
func (s *Server) dispatch(w *recorder, r *http.Request) (route string) {
	r = withLogInfo(r)
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler { //nolint:errorlint // a recovered value, never wrapped
				panic(v)
			}
			s.log.Error("handler panic", append([]any{"method", r.Method, "path", r.URL.Path,
				"panic", fmt.Sprint(v), "stack", string(debug.Stack())}, logAttrs(r)...)...)
			if !w.wrote {
				writeProblem(w, problem(CodeInternal, "internal error"))
			}
		}
	}()
	securityHeaders(w.Header())
	if n := headerBytes(r); n > MaxHeaderBytes {
		writeProblem(w, problem(CodeHeadersTooLarge, "the request's headers are %d bytes; at most %d are accepted", n, MaxHeaderBytes))
		return "headers_too_large"
	}
	h, pattern := s.mux.Handler(r)
	switch {
	case s.patterns[pattern]:
		route = pattern
		s.mux.ServeHTTP(w, r)
		return route
	case pattern != "":
		route = "redirect" // to the cleaned path
		s.mux.ServeHTTP(w, r)
		return route
	case s.cfg.Console != nil && !apiPath(r.URL.Path):
		route = "console"
		s.cfg.Console.ServeHTTP(w, r)
		return route
	}
	// No route: learn from the mux's own answer whether the path exists
	// with other methods (405) or not at all (404).
	probe := &probeWriter{header: http.Header{}}
	h.ServeHTTP(probe, r)
	if probe.code == http.StatusMethodNotAllowed {
		p := problem(CodeMethodNotAllowed, "%s is not allowed on %s; allowed: %s",
			r.Method, r.URL.Path, probe.header.Get("Allow"))
		p.allow = probe.header.Get("Allow")
		writeProblem(w, p)
	} else {
		writeProblem(w, problem(CodeNotFound, "no such endpoint: %s %s", r.Method, r.URL.Path))
	}
	return "unmatched"
}

// apiPath reports whether path belongs to the API rather than the console.
func apiPath(path string) bool {
	switch path {
	case "/api", "/healthz", "/readyz", "/metrics":
		return true
	}
	return strings.HasPrefix(path, "/api/")
}

// bodyLimit is the body limit of a request that carries one payload or
// result.
func (s *Server) bodyLimit() int64 { return int64(s.cfg.MaxPayloadBytes) + bodySlack }

// recorder remembers the status a handler wrote.
type recorder struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.code, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if !r.wrote {
		r.code, r.wrote = http.StatusOK, true
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush and deadlines.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *recorder) Flush() {
	if !r.wrote {
		r.code, r.wrote = http.StatusOK, true
	}
	_ = http.NewResponseController(r.ResponseWriter).Flush()
}

func (r *recorder) status() int {
	if !r.wrote {
		return http.StatusOK
	}
	return r.code
}

// probeWriter captures the mux's plain-text 404/405 answer.
type probeWriter struct {
	header http.Header
	code   int
}

func (p *probeWriter) Header() http.Header { return p.header }
func (p *probeWriter) WriteHeader(code int) {
	if p.code == 0 {
		p.code = code
	}
}
func (p *probeWriter) Write(b []byte) (int, error) {
	if p.code == 0 {
		p.code = http.StatusOK
	}
	return len(b), nil
}
