package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latch-run/latch/store"
)

// holdLocks begins a transaction on the admin pool that runs lockSQL (a
// SELECT ... FOR UPDATE on the test's schema) and returns it with its
// backend pid, so that a test can hold rows as a concurrent operation would.
func holdLocks(t *testing.T, lockSQL string) (pgx.Tx, int32) {
	t.Helper()
	ctx := context.Background()
	tx, err := admin.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	var pid int32
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, lockSQL); err != nil {
		t.Fatal(err)
	}
	return tx, pid
}

// waitBlockedBy waits until n backends wait, directly or behind another
// waiter, for a lock that backend pid holds (other tests of the package run
// in parallel on other schemas, so waiters are counted by whom they wait
// for).
func waitBlockedBy(t *testing.T, pid int32, n int) {
	t.Helper()
	for range 1000 {
		var k int
		if err := admin.pool.QueryRow(context.Background(),
			`WITH RECURSIVE w(pid) AS (
    SELECT pid FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))
    UNION SELECT a.pid FROM pg_stat_activity a JOIN w ON w.pid = ANY(pg_blocking_pids(a.pid)))
SELECT count(*) FROM w`, pid).Scan(&k); err != nil {
			t.Fatal(err)
		}
		if k >= n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("fewer than %d backends wait for backend %d", n, pid)
}

// TestAdmitBatchDedupHitNotStale: a batch that mixes a dedup hit with a new
// item reads the hit's execution, then waits for quota; a Fail of that
// execution commits meanwhile and frees the unit the batch then takes. The
// answer must show the hit as the Fail left it (failed), not as it was read
// before the wait (running): with max_inflight 1, "new item admitted and the
// hit still running" is a state no order of the two operations produces.
//
// It needs quota rows held by another transaction at a precise moment, which
// the Store interface cannot express, so it is this backend's own test.
func TestAdmitBatchDedupHitNotStale(t *testing.T) {
	ctx := context.Background()
	schema, _ := newSchema(t)
	acquireSlot(t)
	s := openSchema(t, databaseURL(t), schema, 8)
	defer s.Close()
	now := time.Now()
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", MaxInflight: 1, Now: now}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: []store.Submission{{Kind: "echo", DedupKey: "k"}}, Now: now})
	if err != nil || res.Items[0].Err != nil {
		t.Fatal(err, res.Items[0].Err)
	}
	x := res.Items[0].Execution
	cl, err := s.Claim(ctx, &store.ClaimParams{WorkerID: "w", Tenant: "acme", Max: 1, Now: now})
	if err != nil || len(cl.Leases) != 1 {
		t.Fatal(err, cl)
	}
	tok := cl.Leases[0].Token

	// Hold every quota shard of the tenant, as a concurrent quota mover would.
	tx, pid := holdLocks(t, `SELECT 1 FROM `+pgx.Identifier{schema, "latch_quota_shards"}.Sanitize()+
		` WHERE tenant = 'acme' FOR UPDATE`)
	failed := make(chan *store.Execution, 1)
	go func() {
		e, err := s.Fail(ctx, &store.FailParams{ExecutionID: x.ID, Tenant: "acme", Token: tok, Now: now})
		if err != nil {
			t.Error("Fail:", err)
		}
		failed <- e
	}()
	waitBlockedBy(t, pid, 1) // Fail has marked x failed (uncommitted) and waits to give its unit back
	admitted := make(chan *store.AdmitResult, 1)
	go func() {
		r, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Now: now,
			Items: []store.Submission{{Kind: "echo"}, {Kind: "echo", DedupKey: "k"}}})
		if err != nil {
			t.Error("Admit:", err)
		}
		admitted <- r
	}()
	waitBlockedBy(t, pid, 2) // the batch has read k's execution and waits for quota
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	f, r := <-failed, <-admitted
	if f == nil || r == nil {
		t.FailNow()
	}
	if f.Status != store.StatusFailed {
		t.Fatalf("Fail answered %s, want failed", f.Status)
	}
	if len(r.Items) != 2 || r.Items[1].Err != nil || !r.Items[1].Deduplicated || r.Items[1].Execution.ID != x.ID {
		t.Fatalf("batch answered %+v, want item 1 deduplicated onto %s", r.Items, x.ID)
	}
	if r.Items[0].Err != nil {
		// Admitted before the Fail: then the hit may be running, but the
		// new item had no unit. Not the interleaving this test builds.
		t.Fatalf("batch item 0: %v, want admitted with the unit the Fail freed", r.Items[0].Err)
	}
	if got := r.Items[1].Execution.Status; got != store.StatusFailed {
		t.Errorf("batch took the unit x's failure freed (max_inflight 1), yet answers x as %s, want failed", got)
	}
}

// TestRefusedDeleteTakesNoLock: a Delete without Force of an execution that
// is not terminal is refused from an unlocked read. It must not lock the row
// (concurrent claims, which pass locked rows by, would skip a ready
// execution for nothing), so it does not wait for a lock someone else holds.
func TestRefusedDeleteTakesNoLock(t *testing.T) {
	ctx := context.Background()
	schema, _ := newSchema(t)
	acquireSlot(t)
	s := openSchema(t, databaseURL(t), schema, 4)
	defer s.Close()
	now := time.Now()
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", Now: now}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: []store.Submission{{Kind: "echo"}}, Now: now})
	if err != nil || res.Items[0].Err != nil {
		t.Fatal(err, res.Items[0].Err)
	}
	x := res.Items[0].Execution
	tx, _ := holdLocks(t, `SELECT 1 FROM `+pgx.Identifier{schema, "latch_executions"}.Sanitize()+` FOR UPDATE`)
	done := make(chan error, 1)
	go func() { done <- s.Delete(ctx, &store.DeleteParams{ID: x.ID, Tenant: "acme"}) }()
	select {
	case err := <-done:
		if !errors.Is(err, store.ErrNotTerminal) {
			t.Fatalf("Delete of a queued execution: %v, want ErrNotTerminal", err)
		}
	case <-time.After(5 * time.Second):
		_ = tx.Rollback(ctx)
		<-done
		t.Fatal("a refused Delete waited for the row's lock: it locks the row before refusing")
	}
	// The execution is still ready: a claim takes it.
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	cl, err := s.Claim(ctx, &store.ClaimParams{WorkerID: "w", Tenant: "acme", Max: 1, Now: now})
	if err != nil || len(cl.Leases) != 1 || cl.Leases[0].ExecutionID != x.ID {
		t.Fatalf("claim after the refused Delete: %+v, %v", cl, err)
	}
}
