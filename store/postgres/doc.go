// Package postgres is latch's distributed backend: any number of latch
// servers share one PostgreSQL database (15 or newer) through pgx v5 and a
// connection pool, with the same guarantees as the embedded SQLite store.
//
// # Opening and migrating
//
// Open(ctx, url) connects and checks the schema. The schema is versioned by
// the embedded files migrations/NNNN_name.up.sql and .down.sql, recorded in
// latch_migrations, and changed only by Migrate (`latch migrate
// up|down|status --store URL`), never by a server starting up: Open refuses
// a database whose schema is missing, older or newer than this build knows,
// and says which command fixes it. Migrators of one schema serialise on a
// session advisory lock and run each step in a transaction, so servers or
// operators migrating at once apply each step exactly once. WithMigrate
// makes Open migrate first (tests, embedded use). Every table is prefixed
// latch_; search_path in the URL picks the schema, and each schema is a
// separate latch (its own NOTIFY channel too).
//
// # One operation, one transaction
//
// Every Store operation is one statement or one transaction. Nothing is
// checked in one round trip and acted on in another without a lock held
// across both, and no decision rests on a read that a concurrent writer
// could invalidate: the arbiters are unique indexes, row locks and the
// re-check PostgreSQL makes on a locked row's newest version.
//
// Isolation is READ COMMITTED (set on every connection and transaction,
// whatever the server's default). It is the level at which these arbiters
// behave as wanted: ON CONFLICT waits for a concurrent inserter of the same
// key and then sees its outcome; UPDATE and SELECT ... FOR UPDATE wait for a
// concurrent writer and re-evaluate their WHERE clause on the row it left;
// SKIP LOCKED passes rows another transaction holds. Each statement sees
// every commit made before it started. SERIALIZABLE would add predicate
// locks and serialization failures to retry on the hot paths without
// closing any race the locks leave open, and REPEATABLE READ would turn a
// lost row race into an error instead of a re-check.
//
// # Dedup (I1)
//
// latch_dedup_keys has the primary key (tenant, dedup_key). A submission
// binds its key with INSERT ... ON CONFLICT DO NOTHING in the statement that
// creates its execution; concurrent submissions of one key wait on the index
// for the first one's transaction and then find the key taken, so exactly
// one execution and one quota unit exist per live key, whatever the timing.
// A submission whose key is taken reads what it maps to (a read, deciding
// nothing but the answer). A transaction that also takes quota holds that
// execution (FOR NO KEY UPDATE, before it waits for quota shards) until it commits,
// so the answer shows it as it is at the commit, not as it was before a
// change whose freed quota unit the same transaction then took. A key past its TTL is removed by compare-and-
// delete — DELETE ... WHERE execution_id = the one read — and bound again, so
// a key re-bound meanwhile stays bound. A group of keys is bound in key
// order, so batches sharing keys wait for each other in one order and never
// deadlock. Delete and Prune remove an execution's key in the same
// transaction as its row, by compare-and-delete too.
//
// A submission (or a schedule's tick) that a key answers with an existing
// execution is a hit, counted on the execution (DedupHits, LastDedupHitAt)
// by the statement that answers it: an UPDATE of the row, dedup_hits =
// dedup_hits + n, under the row's lock, taken in id order where a statement
// takes several and while it holds nothing a claim or a cancel waits for, so
// the count is exact under concurrent submits and a hit only ever waits for
// them (dedup.go). A submit that creates its execution writes nothing more.
//
// # Claims (I2) and concurrency keys (I4)
//
// A claim selects ready executions in claim order with FOR UPDATE SKIP
// LOCKED and leases them in the same statement (sqlClaimMany, its
// candidates from latch_claim_candidates: see Statements): two claimers
// never lease one attempt and never wait for each other, and a row changed
// since the statement's snapshot is re-checked on its newest version. An
// execution row is its own queue entry: a claim updates it in place. A
// ready row that another transaction holds at that moment is passed by, as
// the Claim contract allows under concurrency: the claim may then return
// fewer than Max, or not the first in claim order. Operations that only
// refuse (a Delete of an execution that is not terminal) decide on an
// unlocked read and hold nothing.
//
// Executions with a concurrency key, or with a rate key their tenant has a
// limit for, are never leased by that statement. When
// one is among the candidates, the claim runs as a transaction: it locks its
// candidates (SKIP LOCKED), then takes pg_advisory_xact_lock on each of
// their (tenant, key) pairs in (tenant, key) order, and only then counts
// each pair's running executions, in a statement whose snapshot follows the
// locks and so sees every claim of those keys committed by the lock's
// previous holders. Only claims raise a key's running count, and they all
// do it under the key's lock, so two claimers that each saw room cannot
// together pass the limit. Concurrency keys are scoped per tenant: the same
// key string in two tenants is two keys, with separate locks and counts.
//
// # Rate limits (I7)
//
// A tenant's limit for a rate key is a row of latch_rate_limits holding the
// GCRA's TAT (store.RateLimit). A candidate whose rate key has a limit
// sends the claim to the transaction too. There, after the concurrency
// keys, the claim locks its candidates' bucket rows (SELECT ... ORDER BY
// tenant, rate_key FOR UPDATE: one lock order for every claimer) and
// decides its candidates in claim order with the TATs as the last holder
// left them: the concurrency key first (a candidate it blocks takes no
// token), then the bucket (Allow). A start moves the TAT in memory; the
// moved TATs are written before the commit, in the transaction that leases
// the starts, so a claim never takes a token it does not start. A bucket
// that refuses a start defers the ready executions of its key (those the
// claim's filters select and no one else holds): each becomes scheduled at
// the bucket's next free start plus (k-1) intervals for the k-th in claim
// order, its attempt and quota unit unchanged, and ClaimResult.RetryAt is
// the earliest. Deferring the key's whole backlog at once is what keeps it
// from being passed over by every claim; the bucket still decides every
// start when they come back. TATs and deferred times are rounded up to the
// microsecond, never looser than the exact GCRA.
//
// The tenants take turns over the starts the transaction decides (I12): a
// candidate a limit refuses is passed over and costs its tenant no turn,
// the tenant's next candidate taking it. The claim looks further (a round)
// when it has fewer than Max leases and did not see every ready execution:
// a later round skips the candidates already decided, resumes the turns
// where the previous round left them, and considers only executions whose
// keys and buckets the claim already holds or that have none, so it waits
// for no lock taken out of order (no deadlock between claimers).
//
// # Schedules (I6)
//
// A schedule is a row of latch_schedules. FireSchedule is one transaction
// that first locks that row (FOR UPDATE): fires of one schedule on any
// number of servers run one after the other, and the compare-and-set on
// next_run_at runs on the row as the previous fire left it. Under the row
// lock it takes the schedule's advisory lock, exclusive, and admits the
// tick with Admit's own transaction code (bindAdmission, then finish): the
// tick's dedup key is bound as any key is (a key that maps to a live
// execution makes that execution the tick's), and quota units are taken
// from the same shards, on the same paths. With overlap skip, between the
// two, it looks for an execution of the schedule that is not terminal; if
// there is one the tick is inserted as a skipped execution (no quota unit)
// under the key just bound. A quota refusal rolls everything back.
//
// The overlap check is exact at the commit, under READ COMMITTED, because
// nothing it depends on can change between its read and the commit:
//   - an execution of the schedule committed before the check is in the
//     check's snapshot, which is taken after the row lock was granted, so
//     after the commit of any fire that held it before;
//   - one being inserted by a transaction that has not committed cannot
//     exist: every admission of an execution of a schedule (FireSchedule,
//     or an Admit naming the schedule, which then always runs as a
//     transaction) holds the schedule's advisory lock, shared, from before
//     its insert until its commit, and the fire holds it exclusive from
//     before its check until its commit;
//   - one that is live and being finished (Complete, Fail, Cancel, Rescue,
//     a force Delete) is read FOR SHARE: the check waits for the finishing
//     transaction and re-checks the row's newest version, skipping it if it
//     is terminal now; a live row it holds cannot be finished before the
//     fire commits. Terminal executions never become live again.
//
// Running, on read, is whether an execution of the schedule is running.
// The index latch_executions_schedule serves both, latch_schedules_due the
// scheduler's due list.
//
// # Quota (I3)
//
// A tenant's max_inflight is held as units spread over 32 rows of
// latch_quota_shards (quotaShards). Admission takes units from a shard no
// other transaction holds (FOR UPDATE SKIP LOCKED), in the statement or
// transaction that inserts the executions; every way an execution leaves
// scheduled/queued/running/suspended gives its unit back in the transaction
// that moves it (a suspension keeps it; Retry of a failed execution takes
// one again, as an admission does). Up to 32 transactions of one tenant move quota at once: there is no
// per-tenant counter row that every submit of a tenant must queue for (the
// design that caps a tenant near one commit at a
// time). Tenant.Inflight is exact and cheap: max_inflight minus the free
// units, a sum over 32 rows read in one snapshot with the tenant row.
//
// When the shards nobody holds do not have enough units, the exact path
// (takeQuota) locks every shard of the tenant in shard order, waiting for
// their holders, and decides with the whole quota in hand: a unit held for a
// moment by a transaction that will give it back is waited for, never
// missed, so a refusal is never spurious. Whoever waits for shards takes
// them in shard order while holding no other shard (a savepoint releases
// what the SKIP LOCKED attempt took), so those waits cannot deadlock.
//
// Lowering max_inflight below the number in flight cannot be paid from free
// units: UpdateTenant, with every shard locked, recomputes the quota from
// the count of executions in flight, and if they exceed the new limit it
// freezes the shards (free = -1, no admission) and records the excess as
// debt on shard 0; finishing executions pay the debt before any unit
// becomes free again. The same recount runs on every change of max_inflight,
// so the quota is also re-derived from the ground truth then.
//
// We chose counter shards over a table of max_inflight slot rows (one row
// per unit, bound to its execution): both take units with SKIP LOCKED and
// are exact, but slots cost max_inflight rows per tenant (10000 by default,
// millions for a large tenant) to create, to re-create when the limit
// changes and to count for Inflight, and a lowered limit needs the same debt
// bookkeeping. Shards cost 32 small rows and keep every update HOT.
//
// # Storage budget
//
// A tenant's budget and the bytes its executions count (store/storage.go)
// are one row of latch_storage; each execution's count is its
// stored_bytes column, which the statements that write bytes add to (the
// insert, a complete's result, a fail's error, a step, a signal). The
// triggers on latch_executions (migration 11) move the tenant's row in
// the same statement by every change of an execution's count, an insert's
// and a delete's included, so no statement that adds or removes an
// execution can leave the two apart; a change past the budget ends the
// statement with LA002. The fast paths then run as transactions, as after
// latch_abort, and admitTx checks the room with the row locked before it
// inserts, so each item is decided alone.
//
// Unlike the quota, the count is not sharded: the writes of one tenant
// that add or remove bytes wait for each other on its row, for as long as
// their transactions last. One server's group commit updates it once per
// group; servers writing for one tenant at once take turns at it.
//
// # Fencing (I5)
//
// Heartbeat, Complete, Fail and Release are UPDATEs whose WHERE clause is
// the fence: the execution is running, under this lease token, with a lease
// not expired at Now, of this tenant. Check and change are one step; a
// concurrent change of the row (a rescue, a force delete, a cancel) is waited
// for and the fence re-checked on the row it left (in a group, the row is
// passed by and the operation decided alone: see Lock order). RecordStep
// and Suspend lock the row with the same conditions before they change
// anything.
//
// # Flows (I10, I11)
//
// An execution's journal is latch_steps, its buffered signals
// latch_signals, both keyed by the execution's id and deleted with it in
// the statements that delete it (Delete, Prune, DeleteTenant), found by id
// on their primary keys: no foreign key, so a record costs no key check.
// The first record of a step name wins on latch_steps' primary key (ON
// CONFLICT DO NOTHING); a record under a lease locks the row (the fence),
// so records of one execution run one after the other.
//
// A suspension ends once. Suspend, Signal and Cancel lock the execution row
// (FOR UPDATE) before they read anything that decides, in a statement after
// the lock, so the read shows what the lock's previous holder committed;
// Wake locks its due rows with SKIP LOCKED and re-checks each on its newest
// version (still suspended, still due). So a signal and a timeout never
// both end one wait, a signal that comes while Suspend decides is either
// seen by it (consumed at once) or comes after and finds the wait, and a
// buffered signal is consumed by one wait only, in arrival order (seq,
// taken under the same row lock).
//
// A claim that resumes a flow counts no start: the row's resume flag, set
// by the flow's own progress (Suspend queuing at once, Signal, Wake), keeps
// the attempt, and stays set while that run holds the lease so that a
// Release of an unstarted lease gives it back as it was; every other end of
// the run clears it. A claim reads journals only for the executions whose
// has_steps flag is set, in one read after the claim commits (readJournals):
// a claim of executions without steps costs nothing more.
//
// # Children (I13)
//
// A child is an execution row like any other, with its parent's id and
// spawn step, what its parent's end does to it, its depth and its place
// among its parent's children (child_ord); a parent counts the children it
// spawned (children), and each spawn's step row in latch_steps counts that
// spawn's children and how many have ended (spawned, ended: migration 14).
// Spawn is one transaction under the parent's fenced row lock: a repeat of
// the step finds it recorded (the journal's primary key) and answers its
// ids, so 16 calls of one step under one lease admit one set of children;
// the children take their quota units and storage bytes as one admission
// takes them (takeQuota, then the storage row), all or none.
//
// Every operation that ends an execution of a family, or deletes one,
// locks the family's rows ancestors first (see Lock order): the
// execution's parent (sqlLockParent, by the parent_id it reads unlocked: a
// parent_id only ever becomes NULL, when the parent is deleted), then the
// execution, then the descendants its end changes, level by level, each
// level in id order (lockCascade, lockDescendants); only then does it give
// back the quota units its end frees, all at once (returnQuota, giveBack),
// and make its changes. So a child's end and its parent's end wait for
// each other in that order and never deadlock: whoever holds a child's row
// (a claim, a heartbeat, a step, the child's own spawn) waits for no row
// of its family. Claims pass a held row by (SKIP LOCKED): a child claimed
// before its parent's cascade locks it is cancel-requested by it, one
// claimed after finds it cancelled.
//
// A child's end — Complete, Fail or Release that make it terminal, Cancel,
// a cancelled Suspend, Rescue, a Delete in flight — adds one to its spawn's
// ended count under its parent's lock, and then reads its parent, locked:
// if the parent is suspended in a fan-in wait on that spawn (wait_count
// set) and the count now meets the wait, it records the wait's step
// (store.FanInStep from the children as they are) and queues the parent,
// a resume. A child's end thus costs the parent's lock, one update of the
// spawn's row and one read of the parent's, whatever the number of
// siblings; only the end that resumes reads them. A fan-in Suspend reads
// the counts after its fence locked the parent, so a child that ended
// before committed first and is counted, and one that ends after waits for
// the lock and finds the wait: the wake-up is never lost, and the
// parent's row decides that it resumes once. Wake ends fan-in waits past
// their timeout under the same lock (sqlWakeFanIn). Retry of a failed
// child takes its end back from the count — unless the child was spawned
// with cancel and its parent (locked first, so its end cannot slip in
// between) has ended or has its cancel requested: then the child becomes
// cancelled and stays counted ended (sqlRetryCancel).
//
// A parent's end — Complete, Fail, Release, a cancelled Suspend or Rescue
// that make it terminal, and Cancel, even one only requested — cancels in
// the same transaction its children spawned with cancel that are in flight
// and not cancel-requested yet, and theirs in turn (sqlCascade): a running
// one gets its cancel requested, any other becomes cancelled, its quota
// unit given back and its spawn counting it. The grouped Complete, Fail and
// Release statements leave every execution of a family (parent_id set, or
// children above 0) to endAttemptTx, which does the above, and sqlRescue
// leaves them to rescueFamilies. Delete of a parent, Prune of one (only
// an execution nobody spawned, or whose parent is gone, is Prune's
// candidate) and DeleteTenant delete the family with it, but for the
// abandoned children in flight, whose parent_id becomes NULL.
//
// # Events (I14)
//
// A tenant's events are rows of latch_events (migration 16), each with its
// EventSize counted in the tenant's storage row from its publish until
// Prune deletes it at its expires_at; latch_event_consumed keeps the ids
// of the events each execution consumed, deleted with the execution
// (latch_delete_history). A wait for an event is a suspension whose
// waiting_for is store.EventWaitFor(name), with its key (wait_key) and
// since (wait_since, the execution's created_at when none is given): set
// only on such a wait, wait_since also tells it from a wait for a signal
// of the same name, which a Signal does not end.
//
// A publish and a wait of one tenant's event name decide one after the
// other on the name's advisory lock (lockSpaceEvent), held to the commit.
// Suspend takes it after its fence locked the execution, then reads the
// oldest match its execution has not consumed (latch_event_match): found,
// it consumes it and queues the execution again; else it suspends. Publish
// takes it before it inserts its event, then locks the suspended waits the
// event matches (latch_executions_event_waits, in id order; one that ended
// meanwhile, by a Wake or a Cancel, is re-checked on its newest version
// and left out). Whichever takes the lock second sees what the first
// committed — the event, or the suspended wait — so the wake-up is never
// lost, and a wait's row, locked by the publish that ends it and by the
// Wake that times it out, ends once.
//
// Publish is one transaction: the tenant row (FOR KEY SHARE, so that it
// and a DeleteTenant wait for each other before either takes another
// lock), a kept answer for a repeated idempotency key, the name's lock,
// the event's insert (the unique index on (tenant, idempotency_key) waits
// for a concurrent publish of the key, on any server, and then inserts
// nothing: its answer is read and returned, Replayed), the waits' rows
// and the steps they will record (EventStepWithin the journal's room, each
// a copy of the event), then the subscriptions' starts, admitted by
// Admit's own transaction code (bindAdmission and finish: dedup keys
// store.EventDedupKey, quota shards, then the storage row) with the
// event's bytes and its copies' reserved in the budget before the starts
// (no room for them: ErrStorageExceeded, nothing written; a start refused
// by quota or storage is answered in its EventStart), the event's bytes
// counted, and last the waits resumed — rows the transaction holds: their
// steps, each counted in its execution's stored bytes and, by the trigger,
// in the storage row already held, and their consumed event — and the
// answer kept with the event (store.MarshalPublishAnswer). A Suspend that
// consumes a retained event at once counts its step the same way, while
// its row is still running, so the trigger refuses it past the budget
// (LA002: ErrStorageExceeded, the transaction rolled back).
// Prune deletes the expired events with their idempotency keys and takes
// their bytes from their tenants' counts (latch_prune_events);
// DeleteTenant deletes the tenant's events and subscriptions
// (latch_delete_events). Neither table has a foreign key to its tenant: a
// cascade's plan, made once per connection, could read it whole.
//
// # Attempt history
//
// Each lease is a run, a row of latch_runs keyed (execution_id, run), run
// being the execution's runs counter, which only a claim moves (by one, in
// the UPDATE that leases the row). The claim records the runs of all its
// leases with one INSERT in its own statement (sqlRecordRuns: a CTE of
// sqlClaimMany, and of claimTx's sqlClaimChosen), and drops, for an
// execution past MaxRunsKept, its oldest run in the same statement. The
// statements that end a lease — Complete, Fail and Release (grouped),
// Suspend's, Rescue's — end its run in the same statement too, finding it
// on the primary key by the counter their UPDATE returns (Suspend: its
// fence's locking read), through latch_end_runs (see Statements): a run is
// ended by the
// operation that ends its lease, in its atomic step, and by no other (the
// fence holds the lease's row, and a later claim changes the token). Runs
// go with their execution, as its journal does. Each claimed lease thus
// costs one inserted row and one update when it ends, HOT as a rule (the
// table's fillfactor leaves the room).
//
// # Group commit
//
// The hot operations — a one-item Admit, Claim, Heartbeat, Complete, Fail,
// Release — are set-based statements over arrays (sql_group.go), so one
// statement can decide many operations, each exactly as if alone.
// Operations that arrive while a group is at the server are sent together
// next, as one pipelined batch: one round trip, one transaction, one WAL
// flush (group.go). With synchronous commits the flush is the main cost of
// a write, so throughput is what each flush carries. If any statement of a
// group fails, the whole group rolls back and every operation runs again
// alone; a fenced operation whose row another transaction holds is passed
// by its group and runs alone (see Lock order), as does a Complete, Fail or
// Release of an execution of a family (see Children); if a statement
// cannot decide (no quota unit at hand without waiting, a key past its
// TTL, a concurrency key or a rate-limited key among the claim's
// candidates) it aborts itself with latch_abort, or says so, and the
// operation runs as a transaction that can wait. An Admit of several
// items is first tried as one statement that admits all of them or
// nothing.
// Store.admit (admit.go) follows one submit through these paths in order.
//
// A worker of this process that waits for work can leave its next claim
// with the Store (RideClaim, store.ClaimRider): the next group holding a
// submission the claim can lease sends the claim's statement after its
// own, in its transaction, so that the execution is leased in the commit
// that creates it and the job's claim costs no flush of its own (ride.go).
//
// # Cancellation
//
// An operation's context bounds the wait for a connection. Once its first
// statement is sent the operation runs to its end — commit or rollback —
// before the caller gets its answer, as with the SQLite store: a statement
// cancelled midway may still commit on the server after the client has
// gone, and a caller that retried or read at once would race its own ghost.
//
// # Lock order
//
// The locks a transaction waits for come in one order, the same for every
// operation, so that no two transactions wait for each other:
//
//  1. a schedule's row and advisory lock (a fire; an admission naming it);
//  2. the tenant row (UpdateTenant, DeleteTenant; FOR KEY SHARE: Publish,
//     PutSubscription);
//  3. a tenant's event name (its advisory lock, see Events): Publish takes
//     it before the rows of the waits it resumes; Suspend of a wait for an
//     event after its own row (5), which is running, while Publish locks
//     only suspended rows, so no row is held by one and waited for by the
//     other; then a concurrent publish of the same idempotency key (the
//     unique index);
//  4. dedup keys, in key order (an admission binding them; a publish binds
//     its starts' keys after the waits' rows, but those keys are new, of
//     the event it just inserted, and never waited for);
//  5. execution rows: a family's ancestors first — the parent, then the
//     execution, then its descendants level by level (see Children) — and
//     in id order where one statement waits for several (a dedup hit; a
//     level of a family; a fenced operation, Cancel, Delete, Retry,
//     Suspend, Signal, a step: one row, after its parent's);
//  6. the tenant's quota shards, in shard order when waiting for them
//     (the exact path of takeQuota, returnQuota, resetQuota; a
//     transaction gives its units back once, giveBack, so it never holds
//     one shard while it waits for another);
//  7. the tenant's storage row (latch_storage), last: storageRoom, or the
//     trigger (migration 11) that moves the count at the end of any
//     statement that inserts or deletes executions or changes their bytes.
//
// A lock taken with SKIP LOCKED never waits and may come out of order, but
// it is held, and counts when its transaction waits next. So:
//   - a transaction changes an execution's bytes in its last statement
//     that can wait; what follows touches only rows it holds (a family's,
//     locked before) or guards (a spawn's counters, under its parent's
//     lock). endAttemptTx (a Complete, Fail or Release that found no
//     quota shard at hand, or of an execution of a family) locks the
//     parent, the row (evaluating whether the change ends the execution)
//     and the children its end cancels before it gives the units back, and
//     changes the rows after; Cancel locks its family likewise before its
//     units; Delete locks its family, unbinds the dedup keys of what it
//     deletes and gives the units back before it deletes (pruneFamilies
//     likewise); UpdateTenant re-spreads the quota before it sets the
//     budget; admitTx takes its units before storageRoom. Changing a row
//     first held the storage row while waiting for a shard, which an
//     admission on the exact path, holding every shard, waited for in turn;
//   - a group (group.go) sends the admissions' statement first: it waits
//     for dedup keys holding nothing, then holds a quota shard and the
//     storage row. Its fenced statements (Heartbeat, Complete, Fail,
//     Release) lock their rows with SKIP LOCKED, and its Complete, Fail and
//     Release neither lock nor change the rows of a family's executions:
//     an operation whose row another transaction holds, or of a family, is
//     left unanswered, and runs again alone (a Heartbeat as one statement,
//     an end of attempt as endAttemptTx), where it waits for the rows
//     holding nothing else. A group that waited for a row held what the
//     row's holder (a dedup hit, a step, a Delete, a family's end) waits
//     for next.
//
// Known exceptions, each a collision of rare timing: Delete and Prune
// remove an execution's dedup key after locking its row (another
// transaction holds that key row only to unbind it as expired, and an
// admission doing so does not wait for that execution); Wake locks due
// suspensions in (wake_at, id) order, not id order (a publish locks the
// waits it resumes in id order); DeleteTenant deletes
// its tenant's terminal executions and dedup keys with every shard held;
// and a group's statements touch several tenants' storage rows in
// statement order, not tenant order (a group the server rolls back runs
// its operations alone: no caller sees it).
//
// # Deadlocks
//
// The lock order leaves deadlocks to the exceptions above. PostgreSQL
// detects them; the store runs the operation again (deadlock_detected and
// serialization_failure are retried a few times). DeleteTenant takes its
// locks in the order the operations it races take theirs — the tenant's
// schedules (as a fire), the tenant row, its executions in flight (as a
// worker's complete), then every quota shard (as an admission's exact
// path) — so while it decides no execution of the tenant is added or
// ended, and a collision it cannot foresee is retried.
// TestLockOrderNoDeadlock runs admissions at the quota limit against
// completes, fails, deletes, cancels, steps, heartbeats, waits for an
// event, publishes that resume them and start executions, and wakes, and
// finds none; TestPublishRacesSuspend races publishes against waits,
// signals and admissions of one tenant, and finds no deadlock and no lost
// wake-up;
// TestFamilyLockOrder runs the ends, spawns, heartbeats and fan-in waits
// of one family at once, and finds none.
//
// # Observation
//
// QueueStats and ConcurrencyKeys read the executions in flight from partial
// indexes that hold nothing else (latch_executions_inflight answers
// QueueStats by an index only scan), so they cost what is in flight, not
// what the table holds. Server reports, workers and activity minutes are
// tables of their own (latch_servers, latch_workers, latch_activity),
// written by one statement per report, which adds the activity deltas to
// their minutes (ON CONFLICT DO UPDATE, rows in key order), and trimmed by
// Prune.
//
// # Durability (I8)
//
// Connections run with synchronous_commit = on unless the URL says
// otherwise: an operation that returned nil is on disk. Setting it off in
// the URL trades that for speed, knowingly.
//
// # Wake-ups
//
// The Store implements store.Notifier. A change made through it wakes local
// waiters at once and is announced to other processes with NOTIFY on the
// schema's channel, sent after the commit by one goroutine that coalesces
// (PostgreSQL serialises the commits of notifying transactions, so the
// writes themselves never notify). A dedicated connection LISTENs and
// reconnects by itself; a reconnect counts as a change, since announcements
// may have been lost meanwhile. Waiters poll as well.
//
// It is also a store.ChangeFeed: a change made through it is reported with
// the ids of the executions it changed; one heard from another process
// (the NOTIFY carries no ids), or a reconnect, as unattributed.
//
// # Statements
//
// Connections use plan_cache_mode = force_generic_plan unless the URL says
// otherwise: the store's statements are fixed and indexed, and planning a
// custom plan for every execution of the large set-based statements cost
// more than running them. JIT is off for the same reason: every statement
// touches a handful of rows by index, but statistics that promise many rows
// (a long queue, many dead tuples) push estimates past jit_above_cost, and
// compiling a claim's expressions takes some 22 ms against 0.3 ms to run
// it.
//
// The one plan that statistics could turn against the queue is the claim's
// choice of candidates: walking a tenant's latch_executions_queued in claim
// order and stopping after the rows it needs, or a bitmap scan of every
// ready execution and a sort. The planner picks the second whenever it
// expects few ready rows, which is what it expects of a table without
// statistics (a new one, or autovacuum off) or analyzed while the queue was
// empty; with tens of thousands queued each claim then reads and sorts them
// all. So the candidates come from the function latch_claim_candidates
// (migration 5; a function also for its loop over the tenants in turn
// order, I12), with its settings: no bitmap scans (the
// ordered index walk is then the cheapest plan, whatever the statistics,
// and stays so when the plan is made again after an ANALYZE) and no JIT
// (an estimate inflated by statistics would compile expressions on every
// claim). The claim then finds the rows it leases by id, = ANY(array) on
// the primary key, not by a join the planner could make a scan of the
// whole table.
//
// A claim filtered by kind — every in-process worker's — reads the lanes
// of its kinds (migration 12): latch_executions_queued_kind (tenant, kind,
// claim order) and latch_executions_scheduled_kind (tenant, kind, run_at),
// through latch_tenant_candidates, one ordered walk per kind merged into
// the tenant's claim order; a backlog of other kinds is never read (3,500
// ready executions of another kind cost such a claim 28,029 rows read
// before, 6 after: TestClaimKindPlans). Both functions also turn
// sequential scans off: a plan made while the table was small read it
// whole at each step of the skip through the tenants, and for each lane.
// A claim's excluded tenants (ClaimParams.ExcludeTenants) are left out of
// the function's tenants in turn order (migration 13, its exclude
// argument): none of their executions is read, and their turns stay.
//
// The attempt history and the journal are found the same way, whatever
// the statistics: every write of latch_runs by execution, and the deletes
// of an execution's journal, signals and runs, go through functions
// (migration 10) whose settings leave no sequential scan to choose:
// latch_end_runs (the runs ended by Complete, Fail, Release, Suspend and
// Rescue), latch_drop_runs (a claim's runs past MaxRunsKept) and
// latch_delete_history (Delete, Prune, DeleteTenant). A generic plan is
// kept until an ANALYZE of its tables, and one made while statistics say a
// table is small (a new deployment, a quiet table, autovacuum off) reads it
// whole, the cheapest plan for a page or two: as the table grows, each
// group of ends would read all of latch_runs (a 50,000-job drain slows to
// some 200 jobs/s). The functions' plans find the rows by the primary key (an
// = ANY on execution_id bounds every index path to the ids given) when they
// are made and whenever they are made again. Each function runs as a
// command of the calling statement, in its transaction, so the history
// still changes in the same atomic step as the execution; its queries take
// their own snapshots, which show the rows they change (committed by the
// earlier claim or step; the caller holds the execution's row). The
// function's CTE is one row that the statement's final query reads, since
// PostgreSQL runs a CTE that only reads when it is referenced.
// Events are found the same way (migration 16): a wait's oldest match
// through latch_event_match, Prune's expired events through
// latch_prune_events, a tenant's events and subscriptions through
// latch_delete_events; a publish's resume writes the steps and consumed
// events on their primary keys (TestRunsPlans checks them all).
// Point lookups of one execution's journal and runs (Steps, Runs, a
// step's record, Suspend's probe) are plain statements still.
package postgres
