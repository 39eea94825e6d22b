package engine

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/latch-run/latch/store"
)

// TestWorkerStartsAnotherTenantsJobWhenASlotFrees: tenant acme fills every
// slot with long jobs and has a large backlog at the highest priority;
// globex's one job, at the lowest, starts in the first slot that frees, not
// after acme's backlog (I12).
func TestWorkerStartsAnotherTenantsJobWhenASlotFrees(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const slots, backlog = 2, 300
	if _, err := e.st.CreateTenant(e.ctx, &store.CreateTenantParams{Name: "globex", Now: e.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	starts := make(chan string, backlog+1) // the tenant of each job started, in order
	free := make(chan struct{})            // each value ends one long job
	done := make(chan struct{})
	cfg := e.config()
	cfg.Slots = slots
	cfg.TenantSlots = slots // acme may fill every slot: this is about the order of starts
	w := NewWorker(cfg)
	w.Handle("long", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		starts <- job.Tenant
		select {
		case <-free:
		case <-done:
		case <-ctx.Done():
		}
		return nil, nil
	})
	w.Handle("echo", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		starts <- job.Tenant
		return job.Payload, nil
	})

	items := make([]store.Submission, backlog)
	for i := range items {
		items[i] = store.Submission{Kind: "long", Payload: json.RawMessage(`{}`), Priority: 1000}
	}
	if _, err := e.st.Admit(e.ctx, &store.AdmitParams{Tenant: e.tenant, Items: items, Now: e.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	e.start(w)
	t.Cleanup(func() { close(done) }) // runs before the worker's Stop
	for range slots {
		if got := recv(t, starts, "acme's first jobs"); got != e.tenant {
			t.Fatalf("a job of %s started, want acme's", got)
		}
	}

	res, err := e.st.Admit(e.ctx, &store.AdmitParams{Tenant: "globex", Now: e.clock.Now(),
		Items: []store.Submission{{Kind: "echo", Payload: json.RawMessage(`{}`), Priority: -1000}}})
	if err != nil || res.Items[0].Err != nil {
		t.Fatalf("admit globex's job: %v %v", err, res.Items[0].Err)
	}
	// Free one slot at a time: globex's job must take the first.
	for freed := 1; ; freed++ {
		free <- struct{}{}
		if got := recv(t, starts, "the job started in the freed slot"); got == "globex" {
			if freed != 1 {
				t.Errorf("globex's job started in freed slot %d, want the first", freed)
			}
			break
		}
		if freed == 10 {
			t.Fatalf("globex's job still waits after %d slots freed and went to acme's backlog", freed)
		}
	}
	e.waitStatus(res.Items[0].Execution.ID, store.StatusSucceeded)
}
