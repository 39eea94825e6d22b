package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/internal/migration"
	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/storetest"
)

// TestMigrateRoundTrip applies the newest migration's down and then its up
// again on a file holding data: the down removes exactly what the up added
// (and restores what it dropped) and leaves the older schema and its rows
// intact, and the up applies cleanly on top of it.
func TestMigrateRoundTrip(t *testing.T) {
	ctx := context.Background()
	path := testdb.SQLite(t)
	base := time.Date(2031, time.March, 14, 9, 0, 0, 0, time.UTC)
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", Now: base}); err != nil {
		t.Fatal(err)
	}
	sc := store.Schedule{Tenant: "acme", Name: "s", Every: time.Minute, Timezone: "UTC", Kind: "sweep",
		Payload: []byte(`{}`), Overlap: store.OverlapSkip, Catchup: store.CatchupOne, Enabled: true,
		NextRunAt: base.Add(time.Minute)}
	if _, err := s.PutSchedule(ctx, &store.PutScheduleParams{Schedule: sc, Now: base}); err != nil {
		t.Fatal(err)
	}
	// A flow asleep with a journal, a buffered signal and a run in its
	// history: version 5's and 6's rows and columns hold data when their
	// downs run.
	admitted, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: []store.Submission{{Kind: "flow"}}, Now: base})
	if err != nil || admitted.Items[0].Err != nil {
		t.Fatalf("Admit: %+v, %v", admitted, err)
	}
	flowID := admitted.Items[0].Execution.ID
	if _, err := s.Signal(ctx, &store.SignalParams{ExecutionID: flowID, Name: "later", Now: base}); err != nil {
		t.Fatal(err)
	}
	c, err := s.Claim(ctx, &store.ClaimParams{Max: 1, Now: base})
	if err != nil || len(c.Leases) != 1 {
		t.Fatalf("Claim of the flow: %+v, %v", c, err)
	}
	if _, err := s.RecordStep(ctx, &store.RecordStepParams{ExecutionID: flowID, Token: c.Leases[0].Token,
		Name: "one", Now: base}); err != nil {
		t.Fatal(err)
	}
	// A child, scheduled after the claims below: version 12's columns and
	// spawns hold data when its down runs.
	if _, err := s.Spawn(ctx, &store.SpawnParams{ExecutionID: flowID, Token: c.Leases[0].Token, Step: "kids",
		Items: []store.Submission{{Kind: "child", RunAt: base.Add(time.Hour)}}, Now: base}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Suspend(ctx, &store.SuspendParams{ExecutionID: flowID, Token: c.Leases[0].Token,
		Step: "nap", Until: base.Add(time.Hour), Now: base}); err != nil {
		t.Fatal(err)
	}
	fired, err := s.FireSchedule(ctx, &store.FireScheduleParams{Tenant: "acme", Name: "s",
		Tick: sc.NextRunAt, Expected: sc.NextRunAt, Next: sc.NextRunAt.Add(time.Minute), Now: sc.NextRunAt})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutRateLimit(ctx, &store.PutRateLimitParams{Limit: store.RateLimit{Tenant: "acme",
		Key: "k", Rate: 1, Per: time.Second, Burst: 1}, Now: base}); err != nil {
		t.Fatal(err)
	}
	// An event and a subscription: version 13's tables hold data when its
	// down runs, and the event's bytes leave the tenant's count with it.
	if _, err := s.PutSubscription(ctx, &store.PutSubscriptionParams{Subscription: store.Subscription{Tenant: "acme",
		Name: "audit", Event: "other", Kind: "audit", Enabled: true}, Now: base}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Publish(ctx, &store.PublishParams{Tenant: "acme", Name: "payment", Data: []byte(`{"n":1}`),
		IdempotencyKey: "p", Now: base}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	// The eleven newest: 13 (events), 12 (children), 11 (worker claims), 10 (lanes by
	// kind), 9 (storage budget), 8 (schedule ticks), 7 (observation), 6
	// (attempt history), 5 (flows), 4 (fair claims) and 3 (keys and
	// sessions), newest first.
	downs := []migration.Migration{ms[len(ms)-1], ms[len(ms)-2], ms[len(ms)-3], ms[len(ms)-4], ms[len(ms)-5], ms[len(ms)-6],
		ms[len(ms)-7], ms[len(ms)-8], ms[len(ms)-9], ms[len(ms)-10], ms[len(ms)-11]}
	db, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	before := schemaObjects(t, db)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range downs {
		if _, err := tx.ExecContext(ctx, m.Down); err != nil {
			t.Fatalf("migration %d down: %v", m.Version, err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM schema_migrations WHERE version = ?`, m.Version); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	after := schemaObjects(t, db)
	// Version 13 adds the events, the events consumed and the
	// subscriptions; version 12 adds the children's indexes and spawns; version 10 adds
	// the lanes by kind; version 7 adds the servers, workers and activity minutes and the
	// index of live executions; version 6 adds the attempt history;
	// version 5 adds the journal, the
	// signals and the wake index; version 4 (fair claims) replaces the
	// queue index across tenants by one per tenant and adds the tenants'
	// turns; version 3 adds key ids and console sessions.
	for _, gone := range []string{"table events", "index events_match", "index events_match_key",
		"index events_idempotency", "index events_expiry", "index events_tenant", "table event_consumed",
		"index executions_event_waits", "table subscriptions", "index subscriptions_event", "table spawns", "index executions_children", "index executions_live_children",
		"index executions_finished_roots",
		"index executions_ready_kind", "table servers", "index servers_seen", "table workers", "index workers_seen",
		"index workers_tenant", "table activity", "index activity_minute", "index executions_suspended",
		"table execution_runs", "table flow_steps", "index flow_steps_name", "table flow_signals",
		"index flow_signals_pending", "index flow_signals_key", "index executions_wake",
		"index executions_ready_tenant", "index tenants_ready", "index tenants_turn",
		"table console_sessions", "index console_sessions_expires", "index api_keys_key_id", "index api_keys_tenant"} {
		if after[gone] {
			t.Errorf("%s survives the down migration", gone)
		}
		if !before[gone] {
			t.Errorf("%s was not created by the up migration", gone)
		}
	}
	for obj := range after {
		if !before[obj] && obj != "index executions_ready" {
			t.Errorf("the down migration created %s", obj)
		}
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM executions WHERE id = ?`, fired.Execution.ID).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the tick's execution after the down migration: %d rows, %v", n, err)
	}
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM pragma_table_info('executions')
		WHERE name IN ('runs', 'trace_parent', 'dedup_hits', 'last_dedup_hit_at', 'parent_id', 'parent_step',
		'parent_seq', 'on_parent_end', 'depth', 'children', 'wait_count', 'wait_key', 'wait_since')`).
		Scan(&n); err != nil || n != 0 {
		t.Errorf("executions.runs, trace_parent, dedup_hits, last_dedup_hit_at and the children's columns after the down migration: %d columns, %v", n, err)
	}
	// A key stored before the migration: the up gives it a key id.
	if _, err := db.ExecContext(ctx, `INSERT INTO api_keys (hash, tenant, created_at) VALUES ('hash-old', 'acme', ?)`,
		base.UnixNano()); err != nil {
		t.Fatal(err)
	}
	db.Close()

	// Open migrates up again.
	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.GetSchedule(ctx, &store.GetScheduleParams{Tenant: "acme", Name: "s"}); err != nil {
		t.Errorf("GetSchedule after down and up: %v", err)
	}
	if e, err := s.Get(ctx, &store.GetParams{ID: fired.Execution.ID}); err != nil || e.DedupHits != 0 || e.TraceParent != "" {
		t.Errorf("the tick's execution after down and up: %+v, %v; want it, without dedup hits or trace context", e, err)
	} else if e.StoredBytes != store.StoredSize(e.Payload) {
		t.Errorf("the tick's execution counts %d stored bytes after the up, want its payload's %d", e.StoredBytes, len(e.Payload))
	}
	// The up counts what the executions stored before it hold.
	storetest.CheckStorage(t, s, "acme")
	if ten, err := s.GetTenant(ctx, &store.GetTenantParams{Name: "acme"}); err != nil || ten.StoredBytes == 0 ||
		ten.MaxStoredBytes != store.DefaultMaxStoredBytes {
		t.Errorf("tenant after the up: %+v, %v; want its usage counted, and the default budget", ten, err)
	}
	res, err := s.Claim(ctx, &store.ClaimParams{Max: 1, Now: sc.NextRunAt})
	if err != nil || len(res.Leases) != 1 || res.Leases[0].ExecutionID != fired.Execution.ID {
		t.Errorf("Claim after down and up = %+v, %v; want the tick's execution", res, err)
	}
	// The history starts again: the flow's run went with the down, the
	// claim after the up is recorded.
	if runs, err := s.Runs(ctx, &store.RunsParams{ID: flowID}); err != nil || len(runs) != 0 {
		t.Errorf("Runs of the flow after down and up = %v, %v; want none", runs, err)
	}
	if runs, err := s.Runs(ctx, &store.RunsParams{ID: fired.Execution.ID}); err != nil || len(runs) != 1 ||
		runs[0].Attempt != 1 || !runs[0].ClaimedAt.Equal(sc.NextRunAt) || runs[0].Ended() {
		t.Errorf("Runs of the tick's execution after down and up = %v, %v; want its running claim", runs, err)
	}
	ks, err := s.ListAPIKeys(ctx, &store.ListAPIKeysParams{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ks) != 1 || !strings.HasPrefix(ks[0].KeyID, "key_") || !ks[0].CreatedAt.Equal(base) {
		t.Errorf("keys after the up migration: %+v, want the old key with a key id", ks)
	}
	k, err := s.LookupAPIKey(ctx, &store.LookupAPIKeyParams{KeyHash: "hash-old"})
	if err != nil || k.Tenant != "acme" || len(ks) == 1 && k.KeyID != ks[0].KeyID {
		t.Errorf("LookupAPIKey of the old key = %+v, %v", k, err)
	}
	if err := s.DeleteAPIKey(ctx, &store.DeleteAPIKeyParams{Tenant: "acme", KeyID: k.KeyID}); err != nil {
		t.Errorf("DeleteAPIKey of the old key by its backfilled id: %v", err)
	}
	tn, err := s.GetTenant(ctx, &store.GetTenantParams{Name: "acme"})
	if err != nil || tn.Disabled {
		t.Errorf("the tenant after the up migration: %+v, %v; want it enabled", tn, err)
	}
}

// TestQueryPlans checks that the schedule and rate-limit queries use the
// indexes made for them rather than scanning a table.
func TestQueryPlans(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	type query struct {
		sql  string
		args []any
	}
	list := func(p store.ListSchedulesParams) query {
		q, args := listSchedulesQuery(&p)
		return query{q, args}
	}
	due := time.Unix(1, 0)
	claimSQL, claimArgs, _ := claimQuery(&store.ClaimParams{Queues: []string{"q"}}, due, "acme", 1)
	kindSQL, kindArgs, _ := claimQuery(&store.ClaimParams{Kinds: []string{"x", "y"}}, due, "acme", 1)
	turnSQL, turnArgs := turnQuery(&store.ClaimParams{Queues: []string{"q"}}, due, turnMark{turn: -1}, 1)
	stepsSQL, stepsArgs := stepsQuery(&store.StepsParams{Tenant: "acme", ID: "x"})
	runsSQL, runsArgs := runsQuery(&store.RunsParams{Tenant: "acme", ID: "x"})
	stats := func(p store.QueueStatsParams) query {
		q, args := queueStatsQuery(&p)
		return query{q, args}
	}
	ckeys := func(p store.ConcurrencyKeysParams) query {
		q, args := concurrencyKeysQuery(&p)
		return query{q, args}
	}
	listing := func(p store.ListParams, where ...string) query {
		args := make([]any, len(where)+1)
		for i := range args {
			args[i] = "x"
		}
		return query{listQuery(&p, where), args}
	}
	children := func(p store.ListParams) query {
		q, args := listChildrenQuery(&p)
		return query{q, append(args, 10)}
	}
	activity := func(p store.ActivityParams) query {
		q, args := activityQuery(&p)
		return query{q, args}
	}
	aheadSQL, aheadArgs := aheadQuery(due, 3, "acme")
	explainAhead := query{aheadSQL, aheadArgs}
	workersSQL, workersArgs := workersQuery("acme", true, 1)
	explainWorkers := query{workersSQL, workersArgs}
	for what, c := range map[string]struct {
		query
		want string
	}{
		"overlap check": {query{sqlScheduleInFlight, []any{"acme", "s"}}, "executions_schedule"},
		"running": {query{`SELECT ` + scheduleColumns + ` FROM schedules WHERE tenant = ? AND name = ?`,
			[]any{"acme", "s"}}, "executions_schedule"},
		// Without INDEXED BY the planner, lacking statistics, counted a
		// key's running executions through executions_tenant: every
		// claim read the tenant's whole history (found by the soak).
		"claim's running count per concurrency key": {query{claimSQL, claimArgs}, "executions_concurrency"},
		"claim's candidates of a tenant":            {query{claimSQL, claimArgs}, "executions_ready_tenant (tenant=?)"},
		"claim's candidates of a tenant's kinds":    {query{kindSQL, kindArgs}, "executions_ready_kind (tenant=? AND kind=?)"},
		"claim's tenants in turn order":             {query{turnSQL, turnArgs}, "tenants_ready ((turn,name)>(?,?))"},
		"claim's probe of a tenant's queue":         {query{turnSQL, turnArgs}, "executions_ready_tenant (tenant=?)"},
		"due":                                       {list(store.ListSchedulesParams{DueBy: due}), "schedules_due"},
		"due suspensions":                           {query{sqlDue, []any{1, 10}}, "executions_wake (wake_at<?)"},
		"journal in record order":                   {query{stepsSQL, stepsArgs}, "SEARCH flow_steps USING PRIMARY KEY (execution_id=? AND seq>?)"},
		"history in run order":                      {query{runsSQL, runsArgs}, "SEARCH r USING PRIMARY KEY (execution_id=?)"},
		"run's end":                                 {query{sqlEndRun, []any{1, "succeeded", nil, "x"}}, "(id=?)"},
		"oldest runs' drop":                         {query{sqlDropRuns, []any{"x", 1}}, "SEARCH execution_runs USING PRIMARY KEY (execution_id=? AND seq<?)"},
		"oldest buffered signal":                    {query{sqlOldestSignal, []any{"x", "s"}}, "flow_signals_pending (execution_id=? AND name=?)"},
		"all":                                       {list(store.ListSchedulesParams{}), "PRIMARY KEY ((tenant,name)>(?,?))"},
		"all of a tenant":                           {list(store.ListSchedulesParams{Tenant: "acme"}), "PRIMARY KEY (tenant=?)"},
		"bucket": {query{`SELECT ` + rateLimitColumns + ` FROM rate_limits WHERE tenant = ? AND rate_key = ?`,
			[]any{"acme", "k"}}, "PRIMARY KEY (tenant=? AND rate_key=?)"},
		// The observation reads (observe.go): the live executions only,
		// however long the history.
		"queue stats":              {stats(store.QueueStatsParams{Now: due}), "SCAN executions USING COVERING INDEX executions_ready_tenant; UNION ALL; SCAN executions USING COVERING INDEX executions_leases; UNION ALL; SCAN executions USING COVERING INDEX executions_suspended"},
		"queue stats of a tenant":  {stats(store.QueueStatsParams{Tenant: "acme", Now: due}), "SEARCH executions USING COVERING INDEX executions_ready_tenant (tenant=?); UNION ALL; SCAN executions USING COVERING INDEX executions_leases; UNION ALL; SEARCH executions USING COVERING INDEX executions_suspended (tenant=?)"},
		"running concurrency keys": {ckeys(store.ConcurrencyKeysParams{}), "executions_concurrency"},
		// Explain's reads (explain.go): by index, whatever the history.
		"explain's holders of a key":          {query{sqlExplainHolders, []any{"k", "acme"}}, "SEARCH executions USING INDEX executions_concurrency (concurrency_key=?)"},
		"explain's tenants ahead in turn":     {explainAhead, "SEARCH t USING INDEX tenants_ready ((turn,name)<(?,?))"},
		"explain's probe of a tenant's queue": {explainAhead, "executions_ready_tenant (tenant=?)"},
		"ready kinds' next pair":              {query{sqlNextKind, []any{"acme", "k"}}, "SEARCH executions USING COVERING INDEX executions_ready_kind ((tenant,kind)>(?,?))"},
		"ready kinds' next kind of a tenant":  {query{sqlNextKindOf, []any{"acme", "k"}}, "SEARCH executions USING COVERING INDEX executions_ready_kind (tenant=? AND kind>?)"},
		"ready kinds' probe of a pair":        {query{sqlKindReady, []any{"acme", "k", 1}}, "SEARCH executions USING COVERING INDEX executions_ready_kind (tenant=? AND kind=?)"},
		"explain's live workers":              {explainWorkers, "SEARCH workers USING INDEX workers_tenant (tenant=?)"},
		"activity of every tenant":            {activity(store.ActivityParams{Since: due}), "SEARCH activity USING INDEX activity_minute (minute>?)"},
		"list of a tenant's queued": {listing(store.ListParams{Tenant: "acme", Status: store.StatusQueued},
			"tenant = ?", "status = ?", "id < ?"), "SEARCH executions USING COVERING INDEX executions_ready_tenant (tenant=?)"},
		// A schedule's ticks and a dedup key's executions in listing
		// order, whatever the tenant's history (not its executions_tenant
		// walk, which read all of it for a rare schedule).
		"list of a schedule's ticks": {listing(store.ListParams{Tenant: "acme", Schedule: "s"},
			"tenant = ?", "schedule = ?", "id < ?"), "SEARCH executions USING INDEX executions_schedule_ticks (tenant=? AND schedule=? AND id<?)"},
		"list by dedup key": {listing(store.ListParams{Tenant: "acme", DedupKey: "k"},
			"tenant = ?", "dedup_key = ?"), "SEARCH executions USING INDEX executions_tenant_dedup (tenant=? AND dedup_key=?)"},
		"activity of a tenant": {activity(store.ActivityParams{Tenant: "acme", Since: due}), "SEARCH activity USING PRIMARY KEY (tenant=? AND minute>?)"},
		// List's window (read.go): its bound from an index alone, then the
		// page from that range of ids only, whatever the filters.
		"list window of a tenant": {query{listWindowQuery([]string{"tenant = ?", "id < ?"}), []any{"acme", "x", 10}},
			"SEARCH executions USING COVERING INDEX executions_tenant (tenant=? AND id<?)"},
		"list window of every tenant": {query{listWindowQuery([]string{"id < ?"}), []any{"x", 10}},
			"SEARCH executions USING PRIMARY KEY (id<?)"},
		"list page in a tenant's window": {listing(store.ListParams{Tenant: "acme", Kind: "k", Status: store.StatusSucceeded},
			"tenant = ?", "id < ?", "id >= ?", "status = ?", "kind = ?"), "SEARCH executions USING INDEX executions_tenant (tenant=? AND id>? AND id<?)"},
		"list first page in a tenant's window": {listing(store.ListParams{Tenant: "acme", Kind: "k"},
			"tenant = ?", "id >= ?", "kind = ?"), "SEARCH executions USING INDEX executions_tenant (tenant=? AND id>?)"},
		"list page in every tenant's window": {listing(store.ListParams{Kind: "k", Queue: "q"},
			"id < ?", "id >= ?", "kind = ?", "queue = ?"), "SEARCH executions USING PRIMARY KEY (id>? AND id<?)"},
		// A tenant's dedup key and schedule: their matches only, no window.
		"list of a tenant's dedup key": {listing(store.ListParams{Tenant: "acme", DedupKey: "d"},
			"tenant = ?", "dedup_key = ?", "id < ?"), "SEARCH executions USING INDEX executions_tenant_dedup (tenant=? AND dedup_key=? AND id<?)"},
		"list of a tenant's schedule, succeeded": {listing(store.ListParams{Tenant: "acme", Schedule: "s", Status: store.StatusSucceeded},
			"tenant = ?", "schedule = ?", "status = ?", "id < ?"), "SEARCH executions USING COVERING INDEX executions_schedule (tenant=? AND schedule=? AND status=? AND id<?)"},
		// Children (children.go): a child's end reads one row of spawns
		// and its parent's; a parent's end its live children only.
		"children in spawn order": {children(store.ListParams{ParentID: "p", Tenant: "acme", Status: store.StatusQueued}),
			"SEARCH executions USING INDEX executions_children (parent_id=?)"},
		"children after a cursor": {children(store.ListParams{ParentID: "p", After: "c"}),
			"SEARCH executions USING INDEX executions_children (parent_id=? AND parent_seq>?)"},
		"a parent's live children":   {query{sqlLiveChildren, []any{"p"}}, "SEARCH executions USING INDEX executions_live_children (parent_id=?)"},
		"a parent's children":        {query{sqlChildren, []any{"p"}}, "SEARCH executions USING INDEX executions_children (parent_id=?)"},
		"a child's end of its spawn": {query{sqlSpawnEnded, []any{"p", "s"}}, "SEARCH spawns USING PRIMARY KEY (parent_id=? AND step=?)"},
		// Events (events.go): a publish reads its waits and subscriptions
		// by index; a wait its oldest match, skipping only the events its
		// execution consumed.
		"a publish's waits": {query{sqlEventWaits, []any{"acme", "event:e", 1, "k"}},
			"SEARCH executions USING INDEX executions_event_waits (tenant=? AND waiting_for=?)"},
		"a publish's subscriptions": {query{sqlEventSubscriptions, []any{"acme", "e"}},
			"SEARCH subscriptions USING INDEX subscriptions_event (tenant=? AND event=?)"},
		"a publish's repeat": {query{sqlPublishRepeat, []any{"acme", "k"}},
			"SEARCH events USING INDEX events_idempotency (tenant=? AND idempotency_key=?)"},
		"a wait's oldest match": {query{sqlOldestEvent, []any{"acme", "e", 1, 1, "x"}},
			"SEARCH e USING INDEX events_match (tenant=? AND name=? AND published_at>?); CORRELATED SCALAR SUBQUERY 1; SEARCH c USING PRIMARY KEY (execution_id=? AND event_id=?)"},
		"a keyed wait's oldest match": {query{sqlOldestKeyedEvent, []any{"acme", "e", 1, 1, "x", "k"}},
			"SEARCH e USING INDEX events_match_key (tenant=? AND name=? AND key=? AND published_at>?)"},
		"expired events":     {query{sqlExpiredEvents, []any{1, 10}}, "SEARCH events USING INDEX events_expiry (expires_at<?)"},
		"prune's candidates": {query{sqlPruneDue, []any{1, 10}}, "SEARCH e USING INDEX executions_finished_roots"},
	} {
		rows, err := s.read.QueryContext(ctx, `EXPLAIN QUERY PLAN `+c.sql, c.args...)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		text := strings.Join(plan, "; ")
		t.Logf("%s: %s", what, text)
		// The queue statistics read every live execution through the
		// partial indexes that hold them (a scan of an index, never of the
		// table); they, the running keys, and the ids of a tenant's
		// executions of a status in flight, are sorted in a temporary
		// tree: they are few; so are the candidates of a claim's lanes by
		// kind, merged from at most its limit per kind.
		scan := strings.Contains(strings.ReplaceAll(text, "SCAN executions USING COVERING INDEX", ""), "SCAN executions")
		temp := strings.Contains(text, "USE TEMP B-TREE") && what != "running concurrency keys" &&
			what != "list of a tenant's queued" && !strings.HasPrefix(what, "queue stats") &&
			what != "explain's holders of a key" && what != "explain's live workers" &&
			!strings.HasPrefix(what, "list of a tenant's schedule") && what != "claim's candidates of a tenant's kinds"
		if !strings.Contains(text, c.want) || scan || temp {
			t.Errorf("%s: plan %q, want a search using %s", what, text, c.want)
		}
	}
}

func schemaObjects(t *testing.T, db *sql.DB) map[string]bool {
	t.Helper()
	rows, err := db.Query(`SELECT type, name FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	objs := map[string]bool{}
	for rows.Next() {
		var typ, name string
		if err := rows.Scan(&typ, &name); err != nil {
			t.Fatal(err)
		}
		objs[typ+" "+name] = true
	}
	return objs
}

// Version reads a file's schema version and creates nothing: a missing
// file is fs.ErrNotExist and stays missing.
func TestVersionCreatesNothing(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "latch.db")
	if _, err := Version(ctx, path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Version of a missing file: %v, want fs.ErrNotExist", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Version made the file: %v", err)
	}
	st, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if v, err := Version(ctx, path); err != nil || v != SchemaVersion() {
		t.Fatalf("Version after Open: %d %v, want %d", v, err, SchemaVersion())
	}
}
