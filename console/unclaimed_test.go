package console_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// TestOverviewWarnsOfUnclaimedKinds: the overview warns of ready work of a
// kind no live worker claims, and only of that; a tenant sees its own.
func TestOverviewWarnsOfUnclaimedKinds(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	e.tenant("b")
	now := time.Now()
	e.submit("a", store.Submission{Kind: "resize-image"})
	e.submit("a", store.Submission{Kind: "echo"})
	e.submit("b", store.Submission{Kind: "secret-b-kind"})
	if err := e.store.ReportServer(context.Background(), &store.ServerReport{ID: "s1", Now: now,
		Workers: []store.WorkerSeen{{ID: "slot-1", LastSeenAt: now, Kinds: []string{"echo"}}}}); err != nil {
		t.Fatal(err)
	}

	admin := e.browser()
	admin.login(e.admin)
	warn := section(admin.do("GET", "/overview", nil).body, `<div class="unclaimed">`)
	for _, want := range []string{"resize-image", "secret-b-kind", "no live worker claims"} {
		if !strings.Contains(warn, want) {
			t.Errorf("the admin's overview warns without %q:\n%s", want, warn)
		}
	}
	if strings.Contains(warn, "echo") {
		t.Errorf("the admin's overview warns of echo, which a worker claims:\n%s", warn)
	}

	b := e.browser()
	b.login(key)
	warn = section(b.do("GET", "/overview", nil).body, `<div class="unclaimed">`)
	if !strings.Contains(warn, "resize-image") || strings.Contains(warn, "secret-b-kind") {
		t.Errorf("tenant a's overview warns:\n%s", warn)
	}

	// A worker of tenant a claiming every kind: nothing of a is left.
	if err := e.store.ReportServer(context.Background(), &store.ServerReport{ID: "s2", Now: now,
		Workers: []store.WorkerSeen{{ID: "http-1", Tenant: "a", LastSeenAt: now}}}); err != nil {
		t.Fatal(err)
	}
	if body := b.do("GET", "/overview", nil).body; strings.Contains(body, `<div class="unclaimed">`) {
		t.Errorf("tenant a's overview still warns:\n%s", section(body, `<div class="unclaimed">`))
	}
}
