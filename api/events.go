package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/latch-run/latch/internal/sse"
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
// (Config.StreamWriteTimeout); a failed write ends the stream.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	var req idRequest
	first, err := func() (*store.Execution, error) {
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
		defer cancel()
		p, err := s.authenticate(r.WithContext(ctx), false)
		if err != nil {
			return nil, err
		}
		if err := req.bind(r); err != nil {
			return nil, err
		}
		r = r.WithContext(withPrincipal(r.Context(), p))
		e, err := s.cfg.Store.Get(ctx, &store.GetParams{Tenant: p.scope(), ID: req.id})
		return e, executionErr(err, req.id)
	}()
	if err != nil {
		s.fail(w, r, err)
		return
	}

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

	scope := principalFrom(r.Context()).scope()
	changed := s.changed()
	last := first
	if !send("status", toExecution(last)) {
		return
	}
	poll := time.NewTicker(s.cfg.PollInterval)
	defer poll.Stop()
	keepAlive := time.NewTicker(keepAliveInterval)
	defer keepAlive.Stop()
	for !last.Status.Terminal() {
		select {
		case <-r.Context().Done():
			return
		case <-s.done:
			return // shutting down; the client reconnects elsewhere
		case <-keepAlive.C:
			if !stream.Comment("keep-alive") {
				return
			}
			continue
		case <-changed:
		case <-poll.C:
		}
		changed = s.changed()
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
		e, err := s.cfg.Store.Get(ctx, &store.GetParams{Tenant: scope, ID: req.id})
		cancel()
		switch {
		case errors.Is(err, store.ErrNotFound):
			send("error", problem(CodeNotFound, "execution %q was deleted", req.id))
			return
		case err != nil:
			if r.Context().Err() == nil {
				s.log.Error("event stream read failed", "execution_id", req.id, "err", err)
				send("error", problem(CodeInternal, "internal error"))
			}
			return
		}
		if e.Status != last.Status || e.Attempt != last.Attempt {
			if !send("status", toExecution(e)) {
				return
			}
		}
		last = e
	}
}
