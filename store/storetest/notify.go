package storetest

import (
	"slices"
	"sync"
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

	// The optional store.ChangeFeed: each change is reported, before the
	// call that made it returns, with the ids of the executions it changed.
	t.Run("FeedNamesExecutions", func(t *testing.T) {
		e := start(t, ns)
		f, ok := e.s.(store.ChangeFeed)
		if !ok {
			t.Skip("SKIP: this backend does not implement the optional store.ChangeFeed")
		}
		var mu sync.Mutex
		var got []string
		stop := f.WatchChanges(func(c store.Change) {
			mu.Lock()
			defer mu.Unlock()
			if c.IDs == nil {
				got = append(got, "*")
			}
			got = append(got, c.IDs...)
		})
		defer stop()
		reported := func(what, id string) {
			t.Helper()
			mu.Lock()
			defer mu.Unlock()
			if !slices.Contains(got, id) {
				t.Fatalf("%s of %s was not reported; reported: %v", what, id, got)
			}
			got = nil
		}
		x := e.submit(acme, base, job("echo"))
		reported("Admit", x.ID)
		l := e.claimOne(acme, at(time.Second))
		reported("Claim", l.ExecutionID)
		_, err := e.complete(l, at(2*time.Second), nil)
		e.must(err, "Complete")
		reported("Complete", l.ExecutionID)
		y := e.submit(acme, at(3*time.Second), job("echo"))
		mu.Lock()
		got = nil
		mu.Unlock()
		_, err = e.cancel(acme, y.ID, at(4*time.Second))
		e.must(err, "Cancel")
		reported("Cancel", y.ID)
		e.must(e.del(acme, y.ID, false, at(5*time.Second)), "Delete")
		reported("Delete", y.ID)

		// Reads report nothing (an unattributed report may come from
		// elsewhere: it is not this read's).
		e.get(x.ID)
		mu.Lock()
		defer mu.Unlock()
		if slices.ContainsFunc(got, func(id string) bool { return id != "*" }) {
			t.Fatalf("a read reported a change: %v", got)
		}
	})
}
