package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/postgres"
)

// runsFixture is a store on a schema of its own, for the tests that look at
// latch_runs itself.
type runsFixture struct {
	t      *testing.T
	ctx    context.Context
	schema string
	s      *postgres.Store
	now    time.Time
}

func newRunsFixture(t *testing.T) *runsFixture {
	t.Parallel()
	acquireSlot(t)
	schema, _ := newSchema(t)
	s := openSchema(t, databaseURL(t), schema, testPoolSize)
	t.Cleanup(func() { s.Close() })
	return &runsFixture{t: t, ctx: t.Context(), schema: schema, s: s,
		now: time.Date(2031, time.March, 14, 9, 0, 0, 0, time.UTC)}
}

func (f *runsFixture) must(err error, what string) {
	f.t.Helper()
	if err != nil {
		f.t.Fatalf("%s: %v", what, err)
	}
}

// submit admits the submissions to tenant and returns their ids.
func (f *runsFixture) submit(tenant string, subs ...store.Submission) []string {
	f.t.Helper()
	res, err := f.s.Admit(f.ctx, &store.AdmitParams{Tenant: tenant, Items: subs, Now: f.now})
	f.must(err, "Admit")
	ids := make([]string, len(res.Items))
	for i, it := range res.Items {
		f.must(it.Err, "Admit item")
		ids[i] = it.Execution.ID
	}
	return ids
}

func (f *runsFixture) claim(tenant string, n int) []store.Lease {
	f.t.Helper()
	res, err := f.s.Claim(f.ctx, &store.ClaimParams{Tenant: tenant, WorkerID: "w-" + tenant, Max: n, Now: f.now})
	f.must(err, "Claim")
	if len(res.Leases) != n {
		f.t.Fatalf("claimed %d leases, want %d", len(res.Leases), n)
	}
	return res.Leases
}

// runRows counts the rows of latch_runs.
func (f *runsFixture) runRows() int {
	f.t.Helper()
	var n int
	f.must(admin.pool.QueryRow(f.ctx, `SELECT count(*) FROM `+pgx.Identifier{f.schema, "latch_runs"}.Sanitize()).Scan(&n),
		"count latch_runs")
	return n
}

// wantRun asserts that execution id has one run, ended with outcome and
// error msg ("" outcome: still running).
func (f *runsFixture) wantRun(id string, outcome store.RunOutcome, msg string) {
	f.t.Helper()
	runs, err := f.s.Runs(f.ctx, &store.RunsParams{ID: id})
	f.must(err, "Runs")
	if len(runs) != 1 {
		f.t.Fatalf("execution %s has %d runs, want 1", id, len(runs))
	}
	r := runs[0]
	if r.Attempt != 1 || r.WorkerID == "" || !r.ClaimedAt.Equal(f.now) || r.Outcome != outcome || r.Error != msg ||
		r.Ended() != (outcome != "") {
		f.t.Errorf("execution %s: run %+v, want attempt 1 claimed at %s, outcome %q, error %q",
			id, r, f.now, outcome, msg)
	}
}

// TestRunsOnEveryPath covers the paths the conformance suite may not take:
// a claim of several leases in one statement and one decided under a
// concurrency key (claimTx) record a run each; a Fail and a Suspend that a
// cancel request turns into a cancel end the run cancelled, without the
// failure's message.
func TestRunsOnEveryPath(t *testing.T) {
	f := newRunsFixture(t)
	_, err := f.s.CreateTenant(f.ctx, &store.CreateTenantParams{Name: "acme", Now: f.now})
	f.must(err, "CreateTenant")
	ids := f.submit("acme", store.Submission{Kind: "echo"}, store.Submission{Kind: "echo"},
		store.Submission{Kind: "echo", ConcurrencyKey: "k", ConcurrencyLimit: 1})
	leases := f.claim("acme", 3) // the key sends the claim to claimTx
	for _, id := range ids {
		f.wantRun(id, "", "")
	}
	more := f.submit("acme", store.Submission{Kind: "echo"}, store.Submission{Kind: "echo"})
	leases = append(leases, f.claim("acme", 2)...) // sqlClaimMany
	for _, id := range more {
		f.wantRun(id, "", "")
	}

	byID := map[string]store.Lease{}
	for _, l := range leases {
		byID[l.ExecutionID] = l
		_, err := f.s.Cancel(f.ctx, &store.CancelParams{Tenant: "acme", ID: l.ExecutionID, Now: f.now})
		f.must(err, "Cancel")
	}
	l := byID[ids[0]]
	_, err = f.s.Fail(f.ctx, &store.FailParams{ExecutionID: l.ExecutionID, Token: l.Token, Error: "boom",
		Retry: true, Now: f.now.Add(time.Second)})
	f.must(err, "Fail")
	f.wantRun(l.ExecutionID, store.RunCancelled, "")
	l = byID[ids[1]]
	_, err = f.s.Suspend(f.ctx, &store.SuspendParams{ExecutionID: l.ExecutionID, Token: l.Token, Step: "nap",
		Until: f.now.Add(time.Hour), Now: f.now.Add(time.Second)})
	f.must(err, "Suspend")
	f.wantRun(l.ExecutionID, store.RunCancelled, "")
}

// TestRunsGoWithTheirExecutions: Prune and DeleteTenant remove the runs of
// the executions they remove (no foreign key does it for them).
func TestRunsGoWithTheirExecutions(t *testing.T) {
	f := newRunsFixture(t)
	for _, name := range []string{"acme", "globex"} {
		_, err := f.s.CreateTenant(f.ctx, &store.CreateTenantParams{Name: name, Retention: time.Hour, Now: f.now})
		f.must(err, "CreateTenant")
	}
	f.submit("acme", store.Submission{Kind: "echo"}, store.Submission{Kind: "echo"})
	f.submit("globex", store.Submission{Kind: "echo"})
	for _, l := range f.claim("acme", 2) {
		_, err := f.s.Complete(f.ctx, &store.CompleteParams{ExecutionID: l.ExecutionID, Token: l.Token, Now: f.now})
		f.must(err, "Complete")
	}
	f.claim("globex", 1)
	if n := f.runRows(); n != 3 {
		t.Fatalf("%d runs recorded, want 3", n)
	}
	res, err := f.s.Prune(f.ctx, &store.PruneParams{Now: f.now.Add(2 * time.Hour)})
	f.must(err, "Prune")
	if res.Executions != 2 {
		t.Fatalf("Prune removed %d executions, want acme's 2", res.Executions)
	}
	if n := f.runRows(); n != 1 {
		t.Fatalf("%d runs left after Prune, want globex's 1", n)
	}
	f.must(f.s.DeleteTenant(f.ctx, &store.DeleteTenantParams{Name: "globex", Force: true, Now: f.now}), "DeleteTenant")
	if n := f.runRows(); n != 0 {
		t.Fatalf("%d runs left after DeleteTenant, want none", n)
	}
}

// TestMigrateRunsDownAndUp: reverting schema version 7 drops the history;
// a lease taken before goes on and ends without a run to end, and the next
// claim records the execution's first run again.
func TestMigrateRunsDownAndUp(t *testing.T) {
	t.Parallel()
	acquireSlot(t)
	ctx := t.Context()
	schema, u := newSchema(t)
	s := openMigrated(t, u)
	now := time.Date(2031, time.March, 14, 9, 0, 0, 0, time.UTC)
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", Now: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: []store.Submission{{Kind: "echo"}}, Now: now}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Claim(ctx, &store.ClaimParams{WorkerID: "w", Max: 1, Now: now})
	if err != nil || len(res.Leases) != 1 {
		t.Fatalf("Claim: %+v, %v", res, err)
	}
	l := res.Leases[0]
	s.Close()

	// Down to version 6, below the history (and the versions after it).
	for v := postgres.SchemaVersion(); v > 6; v-- {
		if st, err := postgres.Migrate(ctx, u, "down"); err != nil || st.Version != v-1 {
			t.Fatalf("down from %d: %+v, %v", v, st, err)
		}
	}
	var tables int
	if err := admin.pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables
		WHERE table_schema = $1 AND table_name = 'latch_runs'`, schema).Scan(&tables); err != nil || tables != 0 {
		t.Fatalf("after down: latch_runs is still there (%d, %v)", tables, err)
	}
	s = openMigrated(t, u)
	defer s.Close()
	if _, err := s.Fail(ctx, &store.FailParams{ExecutionID: l.ExecutionID, Token: l.Token, Error: "boom", Retry: true,
		Now: now.Add(time.Second)}); err != nil {
		t.Fatalf("Fail of a lease taken before the history: %v", err)
	}
	runs, err := s.Runs(ctx, &store.RunsParams{ID: l.ExecutionID})
	if err != nil || len(runs) != 0 {
		t.Fatalf("Runs after down and up: %+v, %v; want none", runs, err)
	}
	if res, err = s.Claim(ctx, &store.ClaimParams{WorkerID: "w2", Max: 1, Now: now.Add(2 * time.Second)}); err != nil || len(res.Leases) != 1 {
		t.Fatalf("Claim after down and up: %+v, %v", res, err)
	}
	runs, err = s.Runs(ctx, &store.RunsParams{ID: l.ExecutionID})
	if err != nil || len(runs) != 1 || runs[0].Attempt != 2 || runs[0].WorkerID != "w2" || runs[0].Ended() {
		t.Fatalf("Runs after the next claim: %+v, %v; want attempt 2 running on w2", runs, err)
	}
}
