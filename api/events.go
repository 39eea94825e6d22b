package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/latch-run/latch/auth"
	"github.com/latch-run/latch/internal/sse"
	"github.com/latch-run/latch/internal/watch"
	"github.com/latch-run/latch/store"
)

// keepAliveInterval is how often an idle event stream sends a comment, so
// proxies do not close it.
const keepAliveInterval = 15 * time.Second

// events is GET /api/executions/{id}/events: a text/event-stream with one
// "status" event (data: the execution JSON) for the current state and one
// for every later change of status or attempt the server observes, ending
// after the terminal one. Changes that happen between two reads are
// coalesced (a client may see scheduled then running, without queued): it
// sees each state the server observed, in order, as the OpenAPI document
// says. If the execution is deleted while streamed, an "error" event carrying
// a not_found problem ends the stream. Each write has its own deadline
// (Config.StreamWriteTimeout); a failed write ends the stream. A tenant has
// at most Config.MaxStreamsPerTenant streams open on this server; one more
// is refused with 429 too_many_requests. A browser, which cannot send the
// key, sends ?ticket= instead (streamCaller). The key is checked again
// before every later event and keep-alive, so a stream whose key was
// deleted (or whose tenant was disabled) sends an "error" event with that
// problem and ends; and a stream ends after Config.MaxStreamLifetime
// whatever happens, for the client to open a new one.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	var req idRequest
	var watcher *watch.Watch
	var release func()
	first, err := func() (*store.Execution, error) {
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
		defer cancel()
		p, err := s.streamCaller(r.WithContext(ctx))
		if err != nil {
			return nil, err
		}
		if _, err := query(r, "ticket"); err != nil {
			return nil, err
		}
		if err := req.bindID(r); err != nil {
			return nil, err
		}
		r = r.WithContext(withPrincipal(r.Context(), p))
		if release, err = s.streams.acquire(p, "event streams"); err != nil {
			return nil, err
		}
		wt, e, err := s.watchExecution(ctx, p.scope(), req.id)
		if err != nil {
			release()
			return nil, executionErr(err, req.id)
		}
		watcher = wt
		return e, nil
	}()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	defer release()
	defer watcher.Close()

	// The stream lasts as long as the execution, so it has no overall write
	// deadline; each write gets its own instead (sse.Stream).
	stream := sse.Start(w, r, s.cfg.StreamWriteTimeout)
	if stream == nil {
		return // HEAD
	}
	send := func(event string, v any) bool {
		data, _ := marshal(v) // plain data always marshals
		return stream.Event(event, data)
	}

	caller := principalFrom(r.Context())
	scope := caller.scope()
	last := first
	if !send("status", toExecution(last)) {
		return
	}
	// still reports whether the caller's key still holds; when not, the
	// stream says why and ends.
	still := func() bool {
		if p := s.stillAuthorized(r.Context(), caller); p != nil {
			send("error", p)
			return false
		}
		return true
	}
	keepAlive := time.NewTicker(keepAliveInterval)
	defer keepAlive.Stop()
	lifetime := time.NewTimer(s.cfg.MaxStreamLifetime)
	defer lifetime.Stop()
	for {
		// The snapshot and the channel of its next change come together:
		// a change published between two calls would otherwise be lost.
		snap, changed := watcher.Current()
		e, err := scoped(snap, scope)
		if err != nil { // the hub publishes no other error than not found
			send("error", problem(CodeNotFound, "execution %q was deleted", req.id))
			return
		}
		if e.Status != last.Status || e.Attempt != last.Attempt {
			if !still() || !send("status", toExecution(e)) {
				return
			}
		}
		last = e
		if last.Status.Terminal() {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-s.done:
			return // shutting down; the client reconnects elsewhere
		case <-lifetime.C:
			return // the client opens a new stream, and is checked again
		case <-keepAlive.C:
			// Then look again: the same snapshot sends nothing.
			if !still() || !stream.Comment("keep-alive") {
				return
			}
		case <-changed:
		}
	}
}

// stillAuthorized checks again the key an open stream was opened with: nil
// while it holds, else the problem to end the stream with — unauthorized
// for a deleted key, tenant_disabled, or the store's failure to answer
// (the client opens a new stream when it can).
func (s *Server) stillAuthorized(ctx context.Context, p *principal) *Problem {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	_, err := s.identify(ctx, p.keyHash, false)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, auth.ErrUnknownKey):
		return unauthorized("the key this stream was opened with was deleted")
	}
	return problemFor(err)
}
