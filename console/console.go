// Package console is latch's web console: server-rendered pages over the
// store for a person holding an API key (docs/console.md). A tenant key
// sees its own tenant's overview (queues, activity, workers), executions,
// schedules and limits, and acts on them (cancel, retry, force delete,
// signal, run, pause and resume a schedule); the admin key sees every
// tenant's, or one tenant's with the tenant filter, and alone sees the
// servers and the tenants page. Pages refresh
// themselves while open: the store's change notifications reach the
// browser as a server-sent event stream (/live), with a slow poll as the
// fallback.
//
// The console is plain HTML forms and links with one small script for the
// live refresh; it works without the script. A session is a record in the
// store (the hash of its id, the hash of the key it was opened with, its
// expiry) and an HttpOnly, SameSite=Strict cookie holding a token the
// console signed of its id (token.go), never the key. Every request checks
// the token, reads the record and resolves the key again, as the API
// resolves a bearer key, so a logout (which deletes the record), a deleted
// key or a changed admin key ends the session at once on every server
// sharing the store. Requests that
// change something (log in, log out, cancel, trigger and the actions of
// actions.go) are refused when a browser marks them cross-origin
// (http.CrossOriginProtection). Every action asks for confirmation
// first (actions.go).
//
// It serves every path outside the API (api.Config.Console).
package console

import (
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/latch-run/latch/auth"
	"github.com/latch-run/latch/internal/sse"
	"github.com/latch-run/latch/store"
)

// Authenticator resolves an API key, or the hash of one (auth.HashKey), to
// whom it acts for, answering auth.ErrUnknownKey for one that is not valid.
// auth.Authenticator is one.
type Authenticator interface {
	Identify(ctx context.Context, key string) (auth.Identity, error)
	IdentifyHash(ctx context.Context, hash string) (auth.Identity, error)
}

// Config configures a Console. Store and Auth are required.
type Config struct {
	Store store.Store
	// Auth resolves API keys as the API does (auth.Authenticator).
	Auth   Authenticator
	Logger *slog.Logger
	// Now is the clock passed to the store (Cancel). nil = time.Now.
	Now func() time.Time
	// RequestTimeout bounds the store calls of one page. 0 = 10 s.
	RequestTimeout time.Duration
	// PollInterval is how often /live tells open pages to refresh when the
	// store sent no change notification. 0 = 10 s.
	PollInterval time.Duration
	// StreamWriteTimeout bounds each write of /live. 0 = 10 s.
	StreamWriteTimeout time.Duration
	// MinRefresh is the least time between two events of /live. 0 = 2 s.
	MinRefresh time.Duration
	// MaxStreamsPerSession bounds the live streams (/live) one session may
	// hold open on this server at once, as api.Config.MaxStreamsPerTenant
	// bounds a tenant's event streams; one more is refused with 429.
	// 0 = sse.DefaultMaxStreams (100), the API's default; < 0 = no bound.
	MaxStreamsPerSession int
	// SessionSecret signs session tokens (token.go). Servers that share a
	// store behind one address need the same secret, or a session opened
	// on one is refused by the others. Empty = a random secret of this
	// process: its sessions end when it stops.
	SessionSecret []byte
	// ListScan bounds the executions one list page examines when its
	// filters are answered by examining executions one by one
	// (store.ListParams.Scan): the page then shows the matches found so
	// far, maybe none, and its Older link goes on from there. 0 =
	// store.DefaultListScan.
	ListScan int
}

// pageSize is how many executions a list page shows.
const pageSize = 50

// maxListBytes cuts a list page short once the payloads and results read
// reach it (the list shows neither, but the store reads them).
const maxListBytes = 8 << 20

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Console is the web console, an http.Handler. Close ends its live streams
// (register it with http.Server.RegisterOnShutdown).
type Console struct {
	cfg      Config
	log      *slog.Logger
	notifier store.Notifier // nil when the store sends no notifications
	pages    map[string]*template.Template
	handler  http.Handler
	secret   []byte // signs session tokens
	streams  *liveStreams

	done      chan struct{}
	closeOnce sync.Once
}

// New returns a Console. It panics when Store or Auth is nil.
func New(cfg Config) *Console {
	if cfg.Store == nil || cfg.Auth == nil {
		panic("console: Config.Store and Config.Auth are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 10 * time.Second
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 10 * time.Second
	}
	if cfg.StreamWriteTimeout <= 0 {
		cfg.StreamWriteTimeout = 10 * time.Second
	}
	if cfg.MinRefresh <= 0 {
		cfg.MinRefresh = 2 * time.Second
	}
	c := &Console{cfg: cfg, log: cfg.Logger, pages: parsePages(), done: make(chan struct{}), secret: cfg.SessionSecret}
	if len(c.secret) == 0 {
		c.secret = make([]byte, 32)
		rand.Read(c.secret) // never fails (crypto/rand panics rather than return short)
	}
	c.notifier, _ = cfg.Store.(store.Notifier)
	if cfg.MaxStreamsPerSession == 0 {
		cfg.MaxStreamsPerSession = sse.DefaultMaxStreams
	}
	c.streams = newLiveStreams(cfg.MaxStreamsPerSession)

	mux := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", staticFiles(static)))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/executions", http.StatusSeeOther)
	})
	mux.HandleFunc("GET /login", c.loginForm)
	mux.HandleFunc("POST /login", c.login)
	mux.HandleFunc("POST /logout", c.logout)
	mux.Handle("GET /executions", c.session(c.listExecutions))
	mux.Handle("GET /executions/{id}", c.session(c.showExecution))
	mux.Handle("GET /executions/{id}/json", c.session(c.executionJSON))
	mux.Handle("POST /executions/{id}/cancel", c.session(c.cancelExecution))
	mux.Handle("POST /executions/{id}/delete", c.session(c.deleteExecution))
	mux.Handle("POST /executions/{id}/retry", c.session(c.retryExecution))
	mux.Handle("POST /executions/{id}/signal", c.session(c.signalExecution))
	mux.Handle("GET /schedules", c.session(c.listSchedules))
	mux.Handle("GET /schedule", c.session(c.showSchedule))
	mux.Handle("GET /schedule/json", c.session(c.scheduleJSON))
	mux.Handle("POST /schedules/trigger", c.session(c.triggerSchedule))
	mux.Handle("POST /schedules/pause", c.session(c.pauseSchedule))
	mux.Handle("POST /schedules/resume", c.session(c.resumeSchedule))
	mux.Handle("GET /overview", c.session(c.overview))
	mux.Handle("GET /tenants", c.session(c.tenants))
	mux.Handle("GET /limits", c.session(c.limits))
	mux.Handle("GET /subscriptions", c.session(c.listSubscriptions))
	mux.Handle("GET /live", c.session(c.live))
	mux.HandleFunc("/", c.notFound)
	c.handler = http.NewCrossOriginProtection().Handler(mux)
	return c
}

// ServeHTTP serves the console's pages with its security headers.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; script-src 'self'; "+
		"connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	c.handler.ServeHTTP(w, r)
}

// Close ends the live streams; pages keep being served. Idempotent.
func (c *Console) Close() {
	c.closeOnce.Do(func() { close(c.done) })
}

// staticFiles serves the embedded assets. They change only with the
// binary, so browsers may keep them for an hour.
func staticFiles(fsys fs.FS) http.Handler {
	files := http.FileServerFS(fsys)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		files.ServeHTTP(w, r)
	})
}

// storeCtx bounds the store calls of one request.
func (c *Console) storeCtx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), c.cfg.RequestTimeout)
}

// fail answers a page whose store call failed: not found as a 404 page,
// anything else logged and shown as a 500 page without its details.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, store.ErrInvalid) {
		c.render(w, r, http.StatusBadRequest, "error", errorPage{Title: "Bad request",
			Message: "The request's parameters are not valid."})
		return
	}
	if errors.Is(err, store.ErrNotFound) {
		c.render(w, r, http.StatusNotFound, "error", errorPage{Title: "Not found",
			Message: "It does not exist, or it belongs to another tenant."})
		return
	}
	if r.Context().Err() == nil {
		c.log.Error("console: store call failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	c.render(w, r, http.StatusInternalServerError, "error", errorPage{Title: "Something went wrong",
		Message: "The store did not answer. The server's log has the details."})
}

// notFound answers a path the console has no page at: a 404 page, with
// the navigation and Log out for a person logged in.
func (c *Console) notFound(w http.ResponseWriter, r *http.Request) {
	if id, ses, err := c.identify(r); err == nil && (id.Admin || !id.Disabled) {
		r = r.WithContext(withSession(r.Context(), id, ses))
	}
	c.render(w, r, http.StatusNotFound, "error", errorPage{Title: "Not found",
		Message: "There is no page at " + r.URL.Path + "."})
}
