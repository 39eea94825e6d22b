package console

import (
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// A flow waiting for its children is told as such, and offers no signal
// form: a signal named like the wait would not end it.
func TestWaitForChildrenIsNoSignal(t *testing.T) {
	t.Parallel()
	wake := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	fanIn := &store.Execution{ID: "x", Status: store.StatusSuspended, WaitingFor: store.ChildrenWaitFor("ship"), WakeAt: &wake}
	if f := signalFormOf(fanIn, ""); f != nil {
		t.Errorf("a wait for children offers the signal form %+v", f)
	}
	if got := waitingFor(fanIn); got != ", waiting for the children of step ship until 12:00:00Z" {
		t.Errorf("waitingFor: %q", got)
	}
	sig := &store.Execution{ID: "y", Status: store.StatusSuspended, WaitingFor: "approve"}
	if f := signalFormOf(sig, ""); f == nil || f.Name != "approve" {
		t.Errorf("a wait for a signal: form %+v", f)
	}
	if got := waitingFor(sig); got != ", waiting for signal approve" {
		t.Errorf("waitingFor: %q", got)
	}
}
