package sqlite

import (
	"context"
	"testing"

	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
)

// TestReopenKeepsAcknowledged checks I8 for this backend: what Admit and
// Claim acknowledged is there after the file is closed and opened again.
func TestReopenKeepsAcknowledged(t *testing.T) {
	ctx := context.Background()
	path := testdb.SQLite(t)
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", KeyHash: "h1"}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: []store.Submission{
		{Kind: "echo", DedupKey: "k1"}, {Kind: "echo"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	claimed, err := s.Claim(ctx, &store.ClaimParams{WorkerID: "w", Max: 1})
	if err != nil || len(claimed.Leases) != 1 {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, it := range res.Items {
		if _, err := s.Get(ctx, &store.GetParams{ID: it.Execution.ID}); err != nil {
			t.Errorf("execution %s lost after reopen: %v", it.Execution.ID, err)
		}
	}
	ten, err := s.GetTenant(ctx, &store.GetTenantParams{Name: "acme"})
	if err != nil || ten.Inflight != 2 {
		t.Fatalf("tenant after reopen = %+v, %v; want inflight 2", ten, err)
	}
	if _, err := s.Heartbeat(ctx, &store.HeartbeatParams{ExecutionID: claimed.Leases[0].ExecutionID,
		Token: claimed.Leases[0].Token}); err != nil {
		t.Errorf("lease lost across reopen: %v", err)
	}
	again, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: []store.Submission{{Kind: "echo", DedupKey: "k1"}}})
	if err != nil || !again.Items[0].Deduplicated || again.Items[0].Execution.ID != res.Items[0].Execution.ID {
		t.Errorf("dedup key lost across reopen: %+v %v", again, err)
	}
}

func TestOpenRejectsNewerSchema(t *testing.T) {
	ctx := context.Background()
	path := testdb.SQLite(t)
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.write.ExecContext(ctx, `INSERT INTO schema_migrations (version) VALUES (9999)`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err := Open(ctx, path); err == nil {
		s.Close()
		t.Fatal("Open accepted a schema newer than this build knows")
	}
}
