package storetest

import (
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testNotifier covers the optional store.Notifier capability. A backend
// without it skips these tests, saying so.
func testNotifier(t *testing.T, ns NewStore) {
	// wake waits for ch with a generous bound; it is a signal, not a sleep.
	wake := func(t *testing.T, what string, ch <-chan struct{}) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("Changed channel not closed within 10s of %s", what)
		}
	}
	quiet := func(t *testing.T, ch <-chan struct{}) {
		t.Helper()
		select {
		case <-ch:
			t.Fatal("Changed channel closed although nothing changed since the call")
		default:
		}
	}
	notifier := func(t *testing.T, e *env) store.Notifier {
		t.Helper()
		n, ok := e.s.(store.Notifier)
		if !ok {
			t.Skip("SKIP: this backend does not implement the optional store.Notifier")
		}
		return n
	}

	t.Run("SubmitWakes", func(t *testing.T) {
		e := start(t, ns)
		n := notifier(t, e)
		ch := n.Changed()
		quiet(t, ch)
		e.submit(acme, base, job("echo"))
		wake(t, "Admit", ch)
	})

	t.Run("FinishWakes", func(t *testing.T) {
		e := start(t, ns)
		n := notifier(t, e)
		l := e.run(acme, base, job("echo"))
		ch := n.Changed()
		quiet(t, ch)
		_, err := e.complete(l, at(time.Second), nil)
		e.must(err, "Complete")
		wake(t, "Complete", ch)
	})
}
