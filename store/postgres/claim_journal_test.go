package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/postgres"
)

// TestClaimKeepsLeaseForceDeletedBeforeJournal: a claim reads the journals
// of what it leased after its commit, so a force delete can come in
// between, after others saw the execution running under the claim. The
// claim still answers that lease (linearizable at its commit): void (every
// call under it is lease_lost) and marked StepsPartial with the steps it
// could read (none), so that its worker reads the rest, finds the
// execution gone and runs no recorded step again. Dropping it instead made
// a claim that others had seen lease an execution answer nothing (the
// Contention workload of TestLinearizable caught it as a dedup answer
// showing a running execution that no claim had leased).
func TestClaimKeepsLeaseForceDeletedBeforeJournal(t *testing.T) {
	t.Parallel()
	acquireSlot(t)
	ctx := t.Context()
	schema, _ := newSchema(t)
	s := openSchema(t, databaseURL(t), schema, 4)
	t.Cleanup(func() { s.Close() })
	now := time.Date(2031, time.March, 14, 9, 0, 0, 0, time.UTC)
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", MaxInflight: 5, Now: now}); err != nil {
		t.Fatal(err)
	}
	ad, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Now: now,
		Items: []store.Submission{{Kind: "flow", DedupKey: "k"}}})
	if err != nil || ad.Items[0].Err != nil {
		t.Fatalf("Admit: %+v, %v", ad, err)
	}
	id := ad.Items[0].Execution.ID
	res, err := s.Claim(ctx, &store.ClaimParams{WorkerID: "w", Max: 1, Now: now})
	if err != nil || len(res.Leases) != 1 {
		t.Fatalf("Claim: %+v, %v", res, err)
	}
	l := res.Leases[0]
	// A sleep already over: the step is recorded and the execution queued
	// again, a resume with a journal.
	x, err := s.Suspend(ctx, &store.SuspendParams{ExecutionID: id, Token: l.Token, Step: "nap",
		Until: now.Add(-time.Millisecond), Now: now})
	if err != nil || x.Status != store.StatusQueued {
		t.Fatalf("Suspend: %+v, %v", x, err)
	}

	var seen *store.Execution
	postgres.SetAfterClaim(s, func(ids []string) {
		// Others see the claim's lease, then the execution goes.
		ctx := context.Background()
		dup, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Now: now,
			Items: []store.Submission{{Kind: "flow", DedupKey: "k"}}})
		if err != nil || !dup.Items[0].Deduplicated {
			t.Errorf("Admit after the claim: %+v, %v", dup, err)
			return
		}
		seen = dup.Items[0].Execution
		if err := s.Delete(ctx, &store.DeleteParams{Tenant: "acme", ID: id, Force: true}); err != nil {
			t.Errorf("force Delete: %v", err)
		}
	})
	res, err = s.Claim(ctx, &store.ClaimParams{WorkerID: "w", Max: 1, Now: now})
	postgres.SetAfterClaim(s, nil)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if seen == nil || seen.Status != store.StatusRunning {
		t.Fatalf("the dedup answer after the claim showed %+v, want the execution running", seen)
	}
	if len(res.Leases) != 1 || res.Leases[0].ExecutionID != id {
		t.Fatalf("Claim answered %+v; want the lease of %s, which others saw running", res.Leases, id)
	}
	l = res.Leases[0]
	if !l.StepsPartial || len(l.Steps) != 0 {
		t.Errorf("lease of a deleted execution: steps %v, partial %v; want none, partial", l.Steps, l.StepsPartial)
	}
	if _, err := s.Steps(ctx, &store.StepsParams{Tenant: "acme", ID: id}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Steps of the deleted execution: %v, want not found", err)
	}
	if _, err := s.Heartbeat(ctx, &store.HeartbeatParams{ExecutionID: id, Token: l.Token, Now: now}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("Heartbeat under the void lease: %v, want lease lost", err)
	}
}
