package console

import (
	"net/http"
	"strconv"
	"time"

	"github.com/latch-run/latch/internal/sse"
)

// streamRetryAfter is the Retry-After, in seconds, of a /live refused at
// the session's bound: a slot frees when one of its streams ends.
const streamRetryAfter = 5

// keepAlive is how often an idle stream sends a comment, so that proxies
// keep it open.
const keepAlive = 15 * time.Second

// live is GET /live: a text/event-stream that sends a "change" event when
// the store reports a change (at most one a Config.MinRefresh) or, as the
// fallback, every PollInterval. An open page (static/live.js) reloads its
// live part on each. The event carries no data: the page reads what its
// key may see with its own request. The store's notifications are not per
// tenant, so the events tell a tenant no more than that the store changed,
// at most once a MinRefresh.
//
// A browser that reconnects (it sends Last-Event-ID, which the stream sets
// from its first line) gets a change at once: what changed while it was
// away was announced to nobody. The short
// span between rendering a page and opening its stream is covered by the
// next change or poll.
//
// A session holds at most Config.MaxStreamsPerSession streams on this
// server (one more is refused with 429), and its streams end when it
// does: at once at its logout on this server, at its expiry, and at the
// next poll or keep-alive (each checks the session again, as a request
// would) once it was logged out on another server or its key deleted.
func (c *Console) live(w http.ResponseWriter, r *http.Request) {
	ses := sessionFrom(r.Context())
	ended, release, ok := c.streams.open(ses.IDHash)
	if !ok {
		w.Header().Set("Retry-After", strconv.Itoa(streamRetryAfter))
		http.Error(w, "this session's live streams are at their bound; retry when one has ended", http.StatusTooManyRequests)
		return
	}
	defer release()
	expiry := time.NewTimer(ses.ExpiresAt.Sub(c.cfg.Now()))
	defer expiry.Stop()
	// live reports whether the session may go on streaming.
	live := func() bool {
		_, _, err := c.identify(r)
		return err == nil
	}
	stream := sse.Start(w, r, c.cfg.StreamWriteTimeout)
	if stream == nil {
		return // HEAD
	}
	change := func() bool { return stream.Event("change", nil) }
	if r.Header.Get("Last-Event-ID") != "" {
		if !change() {
			return
		}
	} else if !stream.Checkpoint("live") {
		return
	}
	poll := time.NewTicker(c.cfg.PollInterval)
	defer poll.Stop()
	ping := time.NewTicker(keepAlive)
	defer ping.Stop()
	var last time.Time
	changed := c.changed()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-c.done:
			return
		case <-ended:
			return
		case <-expiry.C:
			return
		case <-ping.C:
			if !live() || !stream.Comment("keep-alive") {
				return
			}
			continue
		case <-changed:
		case <-poll.C:
			if !live() {
				return
			}
		}
		if wait := c.cfg.MinRefresh - time.Since(last); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-r.Context().Done():
				t.Stop()
				return
			case <-c.done:
				t.Stop()
				return
			case <-ended:
				t.Stop()
				return
			case <-t.C:
			}
		}
		// Renewed before the event: a change from now on brings another.
		changed = c.changed()
		last = time.Now()
		if !change() {
			return
		}
	}
}

// changed is closed at the store's next change; nil (never ready) when the
// store sends no notifications.
func (c *Console) changed() <-chan struct{} {
	if c.notifier == nil {
		return nil
	}
	return c.notifier.Changed()
}
