package postgres_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/postgres"
)

// openFireTest opens a store with tenant acme and an overlap-skip schedule
// "s" of it, for the tests below, which hold locks as a concurrent
// operation would at a precise moment — something the Store interface
// cannot express, so these are this backend's own tests.
func openFireTest(t *testing.T) (*postgres.Store, string, time.Time) {
	t.Helper()
	ctx := context.Background()
	schema, _ := newSchema(t)
	acquireSlot(t)
	s := openSchema(t, databaseURL(t), schema, 8)
	t.Cleanup(func() { s.Close() })
	now := time.Now().Truncate(time.Millisecond)
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", Now: now}); err != nil {
		t.Fatal(err)
	}
	_, err := s.PutSchedule(ctx, &store.PutScheduleParams{Now: now, Schedule: store.Schedule{
		Tenant: "acme", Name: "s", Every: time.Minute, Timezone: "UTC", Kind: "sweep",
		Overlap: store.OverlapSkip, Catchup: store.CatchupOne, Enabled: true, NextRunAt: now.Add(time.Minute),
	}})
	if err != nil {
		t.Fatal(err)
	}
	return s, schema, now
}

// trigger fires an off-cycle tick of "s" in the background.
func trigger(t *testing.T, s *postgres.Store, tick time.Time) <-chan *store.FireScheduleResult {
	out := make(chan *store.FireScheduleResult, 1)
	go func() {
		res, err := s.FireSchedule(context.Background(), &store.FireScheduleParams{
			Tenant: "acme", Name: "s", Tick: tick, Trigger: true, Now: tick})
		if err != nil {
			t.Error("FireSchedule:", err)
		}
		out <- res
	}()
	return out
}

// liveOf counts the executions of "s" that are not terminal.
func liveOf(t *testing.T, s *postgres.Store) int {
	t.Helper()
	res, err := s.List(context.Background(), &store.ListParams{Tenant: "acme", Schedule: "s", Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	return len(slices.DeleteFunc(res.Items, func(e *store.Execution) bool { return e.Status.Terminal() }))
}

// TestFireSkipSeesUncommittedAdmit: an Admit of an execution of the
// schedule has inserted it but not committed (it waits for quota) when a
// tick of the overlap-skip schedule is fired. Under READ COMMITTED the
// fire's check cannot see the uncommitted row: it must wait for that Admit
// (the schedule's lock, shared by the Admit) and then skip the tick, not
// admit a second live execution.
func TestFireSkipSeesUncommittedAdmit(t *testing.T) {
	ctx := context.Background()
	s, schema, now := openFireTest(t)
	tx, pid := holdLocks(t, `SELECT 1 FROM `+pgx.Identifier{schema, "latch_quota_shards"}.Sanitize()+
		` WHERE tenant = 'acme' FOR UPDATE`)
	admitted := make(chan *store.AdmitResult, 1)
	go func() {
		r, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Now: now,
			Items: []store.Submission{{Kind: "sweep", Schedule: "s"}}})
		if err != nil {
			t.Error("Admit:", err)
		}
		admitted <- r
	}()
	waitBlockedBy(t, pid, 1) // the Admit holds the schedule's lock, shared, and waits for quota
	fired := trigger(t, s, now.Add(time.Second))
	waitBlockedBy(t, pid, 2) // the fire waits behind the Admit
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	r, f := <-admitted, <-fired
	if r == nil || f == nil {
		t.FailNow()
	}
	if r.Items[0].Err != nil {
		t.Fatalf("Admit: %v", r.Items[0].Err)
	}
	if f.Execution.Status != store.StatusSkipped {
		t.Errorf("I6: the tick fired while an execution of the schedule was being admitted is %s, want skipped",
			f.Execution.Status)
	}
	if n := liveOf(t, s); n != 1 {
		t.Errorf("I6: %d live executions of an overlap-skip schedule, want 1", n)
	}
}

// TestFireSkipSeesFinishInFlight: the schedule's live execution is being
// finished by a transaction that has not committed yet when a tick is
// fired. The fire's check must wait for it and see it finished (and admit
// the tick), or see it live only if it stays live until the fire commits —
// never skip the tick on a row version that was already being replaced.
func TestFireSkipSeesFinishInFlight(t *testing.T) {
	ctx := context.Background()
	s, schema, now := openFireTest(t)
	first := <-trigger(t, s, now)
	if first == nil || first.Execution.Status != store.StatusQueued {
		t.Fatalf("first tick: %+v, want queued", first)
	}
	// Finish it as Cancel would, in a transaction that stays open.
	tx, pid := holdLocks(t, `UPDATE `+pgx.Identifier{schema, "latch_executions"}.Sanitize()+
		` SET status = 'cancelled', finished_at = now() WHERE id = '`+first.Execution.ID+`'`)
	if _, err := tx.Exec(ctx, `UPDATE `+pgx.Identifier{schema, "latch_quota_shards"}.Sanitize()+
		` SET free = free + 1 WHERE tenant = 'acme' AND shard = 0`); err != nil {
		t.Fatal(err)
	}
	fired := trigger(t, s, now.Add(time.Second))
	waitBlockedBy(t, pid, 1) // the fire's check waits for the finishing row
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	f := <-fired
	if f == nil {
		t.FailNow()
	}
	if f.Execution.Status != store.StatusQueued {
		t.Errorf("the tick fired while the live execution finished is %s, want queued: it was skipped "+
			"on the execution's old row version", f.Execution.Status)
	}
	if n := liveOf(t, s); n != 1 {
		t.Errorf("I6: %d live executions of an overlap-skip schedule, want 1", n)
	}
}

// TestMigrateSchedulesDownAndUp reverts schema version 2 (and the versions
// after it, first): schedules and rate limits go, executions stay; Open then
// refuses the older schema, and migrating up again brings them back.
func TestMigrateSchedulesDownAndUp(t *testing.T) {
	t.Parallel()
	acquireSlot(t)
	ctx := t.Context()
	schema, u := newSchema(t)
	latest := postgres.SchemaVersion()
	if latest < 2 {
		t.Fatalf("SchemaVersion() = %d, want 2 or newer", latest)
	}
	s := openMigrated(t, u)
	now := time.Now()
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", Now: now}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Now: now, Items: []store.Submission{{Kind: "echo"}}})
	if err != nil || res.Items[0].Err != nil {
		t.Fatal(err, res.Items[0].Err)
	}
	if _, err := s.PutRateLimit(ctx, &store.PutRateLimitParams{Now: now,
		Limit: store.RateLimit{Tenant: "acme", Key: "k", Rate: 1, Per: time.Second, Burst: 1}}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	var reapplied []int
	for v := latest; v >= 2; v-- {
		st, err := postgres.Migrate(ctx, u, "down")
		if err != nil || st.Version != v-1 || !slices.Equal(st.Ran, []int{v}) {
			t.Fatalf("down: %+v, %v; want version %d, %d reverted", st, err, v-1, v)
		}
		reapplied = append([]int{v}, reapplied...)
	}
	var tables, indexes int
	if err := admin.pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables
		WHERE table_schema = $1 AND table_name IN ('latch_schedules', 'latch_rate_limits')`, schema).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if err := admin.pool.QueryRow(ctx, `SELECT count(*) FROM pg_indexes
		WHERE schemaname = $1 AND indexname = 'latch_executions_schedule'`, schema).Scan(&indexes); err != nil {
		t.Fatal(err)
	}
	if tables != 0 || indexes != 0 {
		t.Errorf("after down: %d of version 2's tables and %d of its indexes left", tables, indexes)
	}
	if s, err := postgres.Open(ctx, u); err == nil {
		s.Close()
		t.Fatal("Open accepted schema version 1")
	}

	if st, err := postgres.Migrate(ctx, u, "up"); err != nil || st.Version != latest || !slices.Equal(st.Ran, reapplied) {
		t.Fatalf("up again: %+v, %v; want version %d, %v applied", st, err, latest, reapplied)
	}
	s, err = postgres.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	x, err := s.Get(ctx, &store.GetParams{Tenant: "acme", ID: res.Items[0].Execution.ID})
	if err != nil || x.Status != store.StatusQueued {
		t.Fatalf("the execution after down and up: %+v, %v", x, err)
	}
	if _, err := s.GetRateLimit(ctx, &store.GetRateLimitParams{Tenant: "acme", Key: "k"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a rate limit survived reverting version 2: %v", err)
	}
}
