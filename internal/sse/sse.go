// Package sse writes text/event-stream responses (server-sent events) that
// last: each write has its own deadline, so a client that stops reading
// ends its stream instead of holding the handler until a hard close, and a
// HEAD request gets the headers alone.
package sse

import (
	"bytes"
	"net/http"
	"strconv"
	"time"
)

// DefaultMaxStreams is how many event streams one holder may keep open on
// one server unless configured otherwise: a tenant's (or the admin's) on
// the API (GET /api/executions/{id}/events), a console session's (/live).
// Each holds a goroutine and a connection until it ends, so without a
// bound one client could hold the server's; one more is refused with 429.
const DefaultMaxStreams = 100

// Stream is one event stream being written.
type Stream struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	seq     int
}

// Start answers 200 with the headers of an event stream and returns the
// stream; each later write must finish within writeTimeout. For a HEAD
// request it sends the headers and returns nil: a HEAD's body is
// discarded, so no write would ever fail and the stream would never end.
func Start(w http.ResponseWriter, r *http.Request, writeTimeout time.Duration) *Stream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	return &Stream{w: w, rc: http.NewResponseController(w), timeout: writeTimeout}
}

// Event writes one event named name, with the next id (1, 2, ...) and data
// (one line), and reports whether it reached the client.
func (s *Stream) Event(name string, data []byte) bool {
	s.seq++
	var b bytes.Buffer
	b.WriteString("event: " + name + "\nid: " + strconv.Itoa(s.seq) + "\ndata: ")
	b.Write(bytes.TrimRight(data, "\n"))
	b.WriteString("\n\n")
	return s.write(b.Bytes())
}

// Checkpoint writes a comment that also sets the client's last event id to
// the current one (0 before any event), so that a browser that reconnects
// sends Last-Event-ID even when no event had come yet.
func (s *Stream) Checkpoint(text string) bool {
	return s.write([]byte(": " + text + "\nid: " + strconv.Itoa(s.seq) + "\n\n"))
}

// Comment writes a comment (a keep-alive for proxies) and reports whether it
// reached the client.
func (s *Stream) Comment(text string) bool {
	return s.write([]byte(": " + text + "\n\n"))
}

func (s *Stream) write(b []byte) bool {
	// Best effort: a ResponseWriter without deadlines (a test recorder)
	// is written to without one.
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	if _, err := s.w.Write(b); err != nil {
		return false
	}
	return s.rc.Flush() == nil
}
