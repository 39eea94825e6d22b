package sqlite

import (
	"context"
	"testing"
	"time"

	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
)

// TestRunClaimedBeforeTheHistory: a lease claimed before version 6 (its
// row's runs is 0, as the migration leaves it) is in the history while it
// runs, read from its row, and recorded as run 0 when it ends; the next
// claim is run 1.
func TestRunClaimedBeforeTheHistory(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2031, time.March, 14, 9, 0, 0, 0, time.UTC)
	s, err := Open(ctx, testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", Now: base}); err != nil {
		t.Fatal(err)
	}
	admitted, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: []store.Submission{{Kind: "k"}}, Now: base})
	if err != nil || admitted.Items[0].Err != nil {
		t.Fatalf("Admit: %+v, %v", admitted, err)
	}
	id := admitted.Items[0].Execution.ID
	c, err := s.Claim(ctx, &store.ClaimParams{WorkerID: "old", Max: 1, Now: base})
	if err != nil || len(c.Leases) != 1 {
		t.Fatalf("Claim: %+v, %v", c, err)
	}
	if _, err := s.write.ExecContext(ctx, `UPDATE executions SET runs = 0 WHERE id = ?`, id); err != nil {
		t.Fatal(err)
	}
	runs, err := s.Runs(ctx, &store.RunsParams{ID: id})
	if err != nil || len(runs) != 1 || runs[0].WorkerID != "old" || runs[0].Ended() {
		t.Fatalf("Runs while it runs = %v, %v; want its lease, running", runs, err)
	}
	if _, err := s.Fail(ctx, &store.FailParams{ExecutionID: id, Token: c.Leases[0].Token, Error: "boom",
		Retry: true, Now: base.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	c, err = s.Claim(ctx, &store.ClaimParams{WorkerID: "new", Max: 1, Now: base.Add(2 * time.Second)})
	if err != nil || len(c.Leases) != 1 {
		t.Fatalf("Claim again: %+v, %v", c, err)
	}
	runs, err = s.Runs(ctx, &store.RunsParams{ID: id})
	if err != nil || len(runs) != 2 {
		t.Fatalf("Runs = %v, %v; want the old run and the new", runs, err)
	}
	if r := runs[0]; r.WorkerID != "old" || r.Attempt != 1 || r.Outcome != store.RunFailed || r.Error != "boom" ||
		!r.ClaimedAt.Equal(base) || r.EndedAt == nil || !r.EndedAt.Equal(base.Add(time.Second)) {
		t.Errorf("the old run: %+v", r)
	}
	if r := runs[1]; r.WorkerID != "new" || r.Attempt != 2 || r.Ended() {
		t.Errorf("the new run: %+v", r)
	}
	if _, err := s.Complete(ctx, &store.CompleteParams{ExecutionID: id, Token: c.Leases[0].Token,
		Now: base.Add(3 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	rows, err := s.read.QueryContext(ctx, `SELECT seq FROM execution_runs WHERE execution_id = ? ORDER BY seq`, id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, seq)
	}
	if len(seqs) != 2 || seqs[0] != 0 || seqs[1] != 1 {
		t.Errorf("stored runs %v, want [0 1]: the old lease, then the first claim after the migration", seqs)
	}
}
