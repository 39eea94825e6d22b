package sqlite

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
)

func (s *Store) pollCount() (polls int64, polling bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.polls, s.w.polling
}

// twoStores opens two Stores on one file, as a server and a CLI in
// another process would, with a tenant to submit to.
func twoStores(t *testing.T) (a, b *Store) {
	t.Helper()
	ctx := t.Context()
	path := testdb.SQLite(t)
	a, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	b, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if _, err := b.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", KeyHash: "h1"}); err != nil {
		t.Fatal(err)
	}
	return a, b
}

func admit(t *testing.T, s *Store) {
	t.Helper()
	if _, err := s.Admit(t.Context(), &store.AdmitParams{Tenant: "acme", Items: []store.Submission{{Kind: "echo"}}}); err != nil {
		t.Fatal(err)
	}
}

// A waiter on one Store is woken by a commit through another Store on the
// same file; with no waiter, nothing polls.
func TestChangedByAnotherStore(t *testing.T) {
	a, b := twoStores(t)
	time.Sleep(20 * pollEvery)
	if polls, polling := a.pollCount(); polls != 0 || polling {
		t.Fatalf("no waiter: %d polls, polling %v; want none", polls, polling)
	}

	ch := a.Changed()
	start := time.Now()
	admit(t, b)
	select {
	case <-ch:
		t.Logf("woken after %v", time.Since(start))
	case <-time.After(100 * time.Millisecond):
		t.Fatal("not woken within 100ms of another Store's Admit")
	}

	// Nobody asked again: the poller stops and stays stopped.
	deadline := time.Now().Add(time.Second)
	for {
		if _, polling := a.pollCount(); !polling {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the poller still runs with no waiter")
		}
		time.Sleep(pollEvery)
	}
	polls, _ := a.pollCount()
	time.Sleep(20 * pollEvery)
	if again, polling := a.pollCount(); again != polls || polling {
		t.Fatalf("idle: polls %d -> %d, polling %v", polls, again, polling)
	}
}

// A Store's own commits do not wake its waiters a second time through the
// poller: data_version is read on the connection that wrote them.
func TestChangedOwnCommitOnce(t *testing.T) {
	a, _ := twoStores(t)
	var unattributed atomic.Int64
	stop := a.WatchChanges(func(c store.Change) {
		if c.IDs == nil {
			unattributed.Add(1)
		}
	})
	defer stop()
	// The tenant, created through the other Store after a's Open, is
	// reported once: wait for it.
	time.Sleep(20 * pollEvery)
	unattributed.Store(0)
	admit(t, a)
	time.Sleep(20 * pollEvery)
	stop()
	if n := unattributed.Load(); n != 0 {
		t.Fatalf("%d unattributed changes for the Store's own Admit", n)
	}
}

// The feed reports another Store's commit as a change of unknown
// executions, and stop ends the polling.
func TestWatchChangesByAnotherStore(t *testing.T) {
	a, b := twoStores(t)
	got := make(chan store.Change, 16)
	stop := a.WatchChanges(func(c store.Change) {
		select {
		case got <- c:
		default:
		}
	})
	admit(t, b)
	select {
	case c := <-got:
		if c.IDs != nil {
			t.Fatalf("change %v; want unknown ids", c.IDs)
		}
	case <-time.After(100 * time.Millisecond):
		t.Fatal("no change within 100ms of another Store's Admit")
	}
	stop()
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if _, polling := a.pollCount(); !polling {
			return
		}
		time.Sleep(pollEvery)
	}
	t.Fatal("the poller still runs after the feed's last subscriber stopped")
}

// Close stops a poller that still has a waiter, and leaves no goroutine.
func TestClosedStopsPoller(t *testing.T) {
	before := goleak.IgnoreCurrent()
	a, b := twoStores(t)
	_ = a.Changed()
	stop := b.WatchChanges(func(store.Change) {})
	defer stop()
	admit(t, b)
	time.Sleep(4 * pollEvery)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, polling := a.pollCount(); polling {
		t.Fatal("polling after Close")
	}
	goleak.VerifyNone(t, before)
}
