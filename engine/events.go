package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/latch-run/latch/store"
)

// WaitEvent waits, as the step name, for an event called event (published
// with the HTTP API, the CLI or Client.Publish): with key, only one
// published with that correlation key; published at or after since (zero:
// the execution's creation). It returns the event as the step recorded it
// ({"event_id", "name", "key", "data", "published_at"}). If the journal
// holds name the wait is over: WaitEvent returns the event recorded, or
// ErrWaitTimedOut if the timeout passed first. Otherwise the execution
// consumes the oldest matching event it has not consumed before and is
// queued again at once, or is suspended until one is published or timeout
// passes (0: no timeout); either way WaitEvent returns ErrSuspended:
// return it from the handler.
func (j *Job) WaitEvent(ctx context.Context, name, event, key string, since time.Time, timeout time.Duration) (json.RawMessage, error) {
	if j == nil || j.flow == nil {
		return nil, errNoFlow
	}
	if r, ok, err := j.flow.recorded(ctx, name); err != nil {
		return nil, err
	} else if ok {
		return RecordedEvent(name, r)
	}
	return nil, j.flow.suspend(ctx, &store.SuspendParams{Step: name, Event: event, EventKey: key, Since: since, Timeout: max(timeout, 0)})
}

// RecordedEvent is what a wait for an event whose step name recorded r
// answers on a replay: r when an event ended it, ErrWaitTimedOut when its
// timeout did, and a Permanent error when the step was recorded by
// something other than a wait for an event.
func RecordedEvent(name string, r json.RawMessage) (json.RawMessage, error) {
	var rec struct {
		EventID  string `json:"event_id"`
		TimedOut bool   `json:"timed_out"`
	}
	if err := json.Unmarshal(r, &rec); err != nil {
		return nil, Permanent(fmt.Errorf("step %q is recorded, but not by a wait for an event: %w", name, store.ErrInvalid))
	}
	if rec.EventID == "" {
		if rec.TimedOut {
			return nil, ErrWaitTimedOut
		}
		return nil, Permanent(fmt.Errorf("step %q is recorded, but not by a wait for an event: %w", name, store.ErrInvalid))
	}
	return r, nil
}
