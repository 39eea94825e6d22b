package redis_test

import (
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// TestRouterUnavailableResetsNotifier (H2): after a tenant primary's
// failover the tenant namespace's version counter may go back, below what
// the router's notifier knew, and the pattern subscription, on another
// node, is not dropped: another process's changes would then close no
// Changed channel. When the cluster hook sees a node out of reach, the
// router wakes every waiter and forgets the versions it knew, so the next
// change wakes the channels handed out after it.
func TestRouterUnavailableResetsNotifier(t *testing.T) {
	url := clusterURL(t)
	prefix := newClusterPrefix(t, url)
	r := openRouter(t, url, prefix)
	defer r.Close()
	other := openRouter(t, url, prefix) // another process
	defer other.Close()
	ctx := t.Context()
	if _, err := r.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", KeyHash: "h"}); err != nil {
		t.Fatal(err)
	}
	admit := func(s store.Store) {
		t.Helper()
		if _, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: []store.Submission{{Kind: "k"}}}); err != nil {
			t.Fatal(err)
		}
	}
	closed := func(ch <-chan struct{}, within time.Duration) bool {
		select {
		case <-ch:
			return true
		case <-time.After(within):
			return false
		}
	}
	// What a failover leaves: the notifier knows a version of acme's
	// namespace far above its counter now.
	r.RaiseKnown(r.TenantNamespace("acme"), 1<<40)
	ch := r.Changed()
	admit(other)
	if closed(ch, 500*time.Millisecond) {
		t.Fatal("setup: a change below the known version woke the waiter; the test shows nothing")
	}
	r.Unavailable()
	if !closed(ch, time.Second) {
		t.Fatal("a node out of reach did not wake the waiters")
	}
	ch = r.Changed()
	admit(other)
	if !closed(ch, 5*time.Second) {
		t.Error("after a node was out of reach, another process's change did not wake a new waiter: the versions known before are still in force")
	}
}
