package sqlite

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
)

// TestFlowRowsGoWithTheExecution checks what the conformance suite cannot
// see: the journal's and the signals' rows of an execution are deleted with
// it (force Delete, Prune, DeleteTenant with Force), and a consumed signal
// keeps its row only for its idempotency key.
func TestFlowRowsGoWithTheExecution(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2031, time.March, 14, 9, 0, 0, 0, time.UTC)
	s, err := Open(ctx, testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, name := range []string{"acme", "globex"} {
		if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: name, Retention: time.Hour, Now: base}); err != nil {
			t.Fatal(err)
		}
	}
	count := func(table, id string) int {
		t.Helper()
		var n int
		if err := s.write.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+table+` WHERE execution_id = ?`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// flow runs an execution of tenant that records a step, consumes an
	// unkeyed signal, keeps a keyed one consumed and buffers one more.
	flow := func(tenant string) store.Lease {
		t.Helper()
		res, err := s.Admit(ctx, &store.AdmitParams{Tenant: tenant, Items: []store.Submission{{Kind: "flow"}}, Now: base})
		if err != nil || res.Items[0].Err != nil {
			t.Fatalf("Admit: %+v, %v", res, err)
		}
		id := res.Items[0].Execution.ID
		for _, sig := range []store.SignalParams{{Name: "a"}, {Name: "a", IdempotencyKey: "k"}, {Name: "b"}} {
			sig.ExecutionID, sig.Now = id, base
			if _, err := s.Signal(ctx, &sig); err != nil {
				t.Fatal(err)
			}
		}
		c, err := s.Claim(ctx, &store.ClaimParams{Tenant: tenant, Max: 1, Now: base})
		if err != nil || len(c.Leases) != 1 {
			t.Fatalf("Claim: %+v, %v", c, err)
		}
		l := c.Leases[0]
		if _, err := s.RecordStep(ctx, &store.RecordStepParams{ExecutionID: id, Token: l.Token, Name: "one",
			Result: json.RawMessage(`1`), Now: base}); err != nil {
			t.Fatal(err)
		}
		for _, step := range []string{"w1", "w2"} {
			if _, err := s.Suspend(ctx, &store.SuspendParams{ExecutionID: id, Token: l.Token, Step: step,
				Signal: "a", Now: base}); err != nil {
				t.Fatal(err)
			}
			if c, err = s.Claim(ctx, &store.ClaimParams{Tenant: tenant, Max: 1, Now: base}); err != nil || len(c.Leases) != 1 {
				t.Fatalf("Claim: %+v, %v", c, err)
			}
			l = c.Leases[0]
		}
		if n := count("flow_steps", id); n != 3 {
			t.Errorf("journal rows: %d, want 3", n)
		}
		if n := count("flow_signals", id); n != 2 {
			t.Errorf("signal rows: %d, want 2 (the keyed one consumed, b buffered)", n)
		}
		return l
	}
	gone := func(what, id string) {
		t.Helper()
		for _, table := range []string{"flow_steps", "flow_signals"} {
			if n := count(table, id); n != 0 {
				t.Errorf("%s: %d rows of %s left", what, n, table)
			}
		}
	}

	l := flow("acme")
	if err := s.Delete(ctx, &store.DeleteParams{ID: l.ExecutionID, Force: true}); err != nil {
		t.Fatal(err)
	}
	gone("force Delete", l.ExecutionID)

	l = flow("acme")
	if _, err := s.Complete(ctx, &store.CompleteParams{ExecutionID: l.ExecutionID, Token: l.Token, Now: base}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prune(ctx, &store.PruneParams{Now: base.Add(2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	gone("Prune", l.ExecutionID)

	l = flow("globex")
	if err := s.DeleteTenant(ctx, &store.DeleteTenantParams{Name: "globex", Force: true}); err != nil {
		t.Fatal(err)
	}
	gone("DeleteTenant", l.ExecutionID)
}
