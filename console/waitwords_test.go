package console

import (
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// A suspended execution's page says what it waits for in words: the
// children of a spawn step, an event, a signal, or only its wake time;
// only a wait for a signal offers the signal form.
func TestWaitWords(t *testing.T) {
	t.Parallel()
	wake := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		waitingFor string
		wake       *time.Time
		want       string
		form       bool
	}{
		{store.ChildrenWaitFor("ship"), nil, "Waiting for the children of step ship to end.", false},
		{store.ChildrenWaitFor("ship"), &wake, "Waiting for the children of step ship to end until 2030-01-01 12:00:00Z, then it times out.", false},
		{store.EventWaitFor("parcel-scanned"), nil, "Waiting for event parcel-scanned.", false},
		{store.EventWaitFor("parcel-scanned"), &wake, "Waiting for event parcel-scanned until 2030-01-01 12:00:00Z, then it times out.", false},
		{"approve", nil, "Waiting for signal approve.", true},
		{"", &wake, "Sleeping until 2030-01-01 12:00:00Z.", false},
	} {
		x := &store.Execution{ID: "x", Status: store.StatusSuspended, WaitingFor: c.waitingFor, WakeAt: c.wake}
		if got := waitWords(x); got != c.want {
			t.Errorf("%q: %q, want %q", c.waitingFor, got, c.want)
		}
		if f := signalFormOf(x, ""); (f != nil) != c.form {
			t.Errorf("%q: signal form %+v, want one: %v", c.waitingFor, f, c.form)
		}
	}
	if got := waitingFor(&store.Execution{Status: store.StatusSuspended, WaitingFor: store.EventWaitFor("paid")}); got != ", waiting for event paid" {
		t.Errorf("the timeline's words for an event wait: %q", got)
	}
	if got := waitWords(&store.Execution{Status: store.StatusQueued}); got != "" {
		t.Errorf("a queued execution waits for %q", got)
	}
}
