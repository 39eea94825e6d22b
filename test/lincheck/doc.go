// Package lincheck proves that a store's core operations are linearizable
// and match a sequential model of the contract (store.Store and
// docs/api.md), on any backend.
//
// # The model
//
// State (model.go) is the sequential specification: per tenant, the quota
// counter and its max_inflight; every execution's status, attempt, cancel
// request, run_at, finished_at, lease expiry, current lease token, its
// suspension (wake_at, waiting_for, the step) and whether its next run is a
// resume; every execution's flow state (flow_model.go): its journal in
// record order, the signals kept for a later wait in arrival order, and the
// first answers of its idempotent signals; and the dedup map (tenant, key)
// -> execution with its TTL. State.Apply takes one operation's input and
// the store's answer, checks the answer (errors by sentinel) and advances.
// It encodes:
//
//   - dedup: a live key maps to one execution; a submit with it is answered
//     with that execution as it is now (deduplicated), or ErrDedupKeyReused
//     for another kind or payload; the key dies with its execution (delete,
//     force delete, prune) or its TTL, and then admits a new one; each
//     deduplicated answer counts one hit on the execution (DedupHits, the
//     latest at LastDedupHitAt), shown in that answer and every later one
//     (State.Hits: a backend whose first deduplicated answer shows no hit
//     is held to showing none);
//   - quota: admitting more than max_inflight scheduled+queued+running is
//     ErrQuotaExceeded (after the dedup lookup: a duplicate takes no quota);
//     every exit path frees the slot exactly once;
//   - claims: only ready executions (queued, or scheduled and due), each
//     attempt to one claim, each claim starting a new attempt with a fresh
//     token; one with a concurrency key only while fewer than its limit of
//     its tenant's executions with that key run (I4; suspended ones hold
//     no slot), which of a key's startable executions goes first being
//     left to the backend; alone (Property), higher priority first then older run_at, as
//     many as Max allows and are ready; under concurrency (Check, with
//     State.Concurrent) any of those ready, up to Max, since store.Store's
//     Claim lets a claim pass by what concurrent operations hold;
//   - fencing: Heartbeat, Complete, Fail and Release act only with the
//     current, unexpired token (CodeLeaseLost otherwise, also for a missing
//     or another tenant's execution); Complete or Fail after a cancel
//     request end cancelled; Fail retries while attempts remain;
//   - cancel and delete: queued/scheduled/suspended cancel at once, running
//     records the request, terminal is unchanged; Delete needs a terminal
//     execution unless forced, and takes the journal and signals with it;
//   - the journal (I10): RecordStep is fenced like Complete and the first
//     record of a name wins (a later one answers it, Recorded false); every
//     lease carries every step recorded before its claim, or, marked
//     partial, the first of them (maybe none: a lease whose execution was
//     force deleted before its claim read the journal; the claim is still
//     answered with it, as others may have seen it running); Steps reads
//     them all in record order, with their attempt and times;
//   - suspensions and signals (I11): Suspend is fenced, ends the lease and
//     keeps the quota slot; after a cancel request it cancels, on a recorded
//     step it queues again, a sleep not in the future or a wait whose
//     signal is kept records at once (consuming the oldest signal of that
//     name) and queues again, else the execution is suspended. Signal
//     answers an idempotency key's first answer whatever the status, is
//     refused for a terminal execution (not_active), ends a wait for its
//     name (Delivered) or is kept, in arrival order. Wake ends every
//     suspension due (a sleep's null, a wait's TimedOut). A wait thus ends
//     exactly once, by the first of its signal and its timeout; a signal is
//     consumed once, oldest first, and never lost while the execution is
//     not terminal;
//   - resumes: an execution queued again by Suspend, Signal or Wake keeps
//     its attempt at its next claim; a crash (rescue), a failure or a
//     release after it counts the next start; an unstarted Release gives
//     its claim back (the start, or the resume);
//   - retry: only a failed execution, under the quota, queued with its
//     journal and its attempts counted from 0.
//
// What the contract leaves to a backend is learned from its answers, never
// pinned: the ids and tokens it mints, and which of several equally ranked
// ready executions a Claim takes.
//
// # Linearizability (Check)
//
// Check records histories of 12 concurrent clients (admit with and without
// dedup keys, batches, get, cancel, delete, force delete, claim, complete,
// fail with and without retry, the tenant's quota counter, and the flow
// operations: record a step under a current or stale token, sleep, wait,
// signal with and without idempotency keys, retry, read the journal; and
// spawn, fan-in waits and children's ends) against a real
// database opened by three stores at once — as three latch servers would
// open it, each with its own connections, grouping of concurrent operations
// and wake-ups, the clients spread over them — with porcupine's timestamps from a monotonic clock fenced by atomic
// operations, and checks each with github.com/anishathalye/porcupine. The
// workloads keep the search small through partitioning:
//
//	Tenants     three tenants, max_inflight 3 or 4: one partition per
//	            tenant (quota couples a tenant's executions, nothing
//	            couples two tenants).
//	Contention  one tenant whose quota never binds, two kinds with two hot
//	            keys each; claims filter by kind, so each kind is a
//	            partition, and many clients race inside it.
//	Flows       one tenant running flows, 8 clients (the search over one
//	            partition of journals and signal buffers grows fast with
//	            more), whose quota suspended executions hold; sleeps until
//	            the past or a few milliseconds ahead, waits with and without
//	            timeouts, signals of two names with distinct data (so the
//	            journal shows which one a wait consumed), Wake at the
//	            advancing clock. Wake acts on every tenant, so the workload
//	            is one partition, and each history's executions are force
//	            deleted after it.
//	Children    one tenant of max_inflight 12 whose flows spawn children
//	            (I13), 8 clients: spawns of one to three children under
//	            two step names, under current and stale tokens and by two
//	            clients with one lease at once (a repeat admits nothing),
//	            some with on_parent_end abandon; fan-in waits for all or a
//	            count of a spawn's children (and refused ones: a spawn not
//	            made, a count above its children); children ended by
//	            complete, fail, cancel and force delete while their parents
//	            spawn, suspend, are cancelled, complete or fail. The model
//	            cancels a parent's cancel children in the operation that
//	            ends it (so a claim of one after it is refused), ends a
//	            fan-in wait in the operation whose child's end makes its
//	            condition hold, and compares the fan-in step (every child's
//	            id and status, a succeeded one's result, a failed one's
//	            error) wherever a journal shows it. Parents and children
//	            relate across the tenant: one partition. A client that
//	            spawned mostly waits on that spawn next, under the same
//	            lease, as latch.Map does.
//	Events      two tenants publishing events of two names (I14), with and
//	            without correlation keys, about half with an idempotency
//	            key of a small set (a client's retries and other clients'
//	            publishes of one key meet); two subscriptions on the first
//	            name in one tenant, one in the other. Executions wait for
//	            events (with and without a key; since the history's start,
//	            5 ms before now or now; some with a timeout Wake ends) and
//	            are cancelled while waiting. The model keeps the retained
//	            events, the first answer of every idempotency key, the
//	            events each execution consumed and each wait's key and
//	            since: a publish must resume exactly the matching waits of
//	            its tenant and start one execution per subscription (dedup
//	            key event:<id>:<subscription>, payload the event), a
//	            repeat of its key must answer the first answer and start
//	            nothing, a wait must consume the oldest matching event it
//	            has not consumed. 6 clients; Wake makes it one partition,
//	            both tenants in it, so an event crossing tenants shows.
//
// Once a history's clients have stopped, one more client reads (Get)
// every execution the history revealed, so that a wrong state no later
// operation happened to look at — a wait that never ended, a cancel that
// did not cascade — is seen all the same.
//
// In Tenants and Contention, where nothing wakes, sleeps end at once and
// waits have no timeout: a signal, a cancel or a delete ends them.
//
// A non-linearizable history fails the test, and porcupine's HTML
// visualization is written to $LATCH_LINCHECK_OUT (or the test's temporary
// directory, removed when the test ends); the log names the file and what
// the model refused at the point where linearization got stuck.
//
// Rescue, Promote and Prune act on every tenant at once, so they would join
// all partitions into one; they are checked by the property test instead.
// Wake does too, and is checked by both: Flows is one partition.
//
// # Property test (Property)
//
// Property drives random operation sequences (all of the above plus
// heartbeat, release (started or not), rescue, promote, prune, wake,
// concurrency keys of limit 1 and 2, and a fake clock that advances onto
// and past leases, retry delays, dedup TTLs, retention, sleeps and wait
// timeouts) against the store and State with
// pgregory.net/rapid, and after every step compares every execution, each
// tenant's inflight counter and the journal of every execution ever
// claimed. Failures print rapid's seed and fail file for replay.
// Concurrency keys are in Property only: under concurrency a claim may pass
// by any execution, so only a claim alone shows a slot wrongly held (by a
// suspended execution, say).
//
// # Running
//
// A backend runs both from its own test package, with the constructor of
// its conformance suite, as it runs storetest.Run; this package, like
// storetest, imports no backend (its own tests run SQLite):
//
//	func TestLinearizable(t *testing.T) { lincheck.Check(t, newServers) }
//	func TestProperty(t *testing.T)     { lincheck.Property(t, newStore) }
//
// newServers must return n stores on one fresh database per call (Check
// uses one database per workload and fresh tenants per history); newStore
// one fresh store per call (Property uses one store and fresh tenants per
// case, and force-deletes each case's executions so that the
// global Rescue, Promote and Prune of the next case see only their own).
// Where each backend runs them, and on what:
//
//	test/lincheck/lincheck_test.go   TestLinearizable/sqlite, TestProperty/sqlite:
//	                                 a database file in the test's temporary directory
//	store/postgres/lincheck_test.go  TestLinearizable/postgres, TestProperty/postgres:
//	                                 a schema of its own, dropped when the test ends,
//	                                 and 12 connections over the three stores' pools,
//	                                 one per client
//	store/redis/lincheck_test.go     TestLinearizable/redis, TestProperty/redis:
//	                                 a key prefix of its own, its keys deleted when the
//	                                 test ends (after CheckConsistency)
//
// The PostgreSQL and Redis tests need LATCH_TEST_POSTGRES_URL and
// LATCH_TEST_REDIS_URL, and the Redis Cluster ones (.../redis-cluster)
// LATCH_TEST_REDIS_CLUSTER_URL; without them they skip, loudly, unless
// LATCH_REQUIRE_BACKENDS is set, when they fail instead. CI (.ci/run) sets
// them all (starting a local cluster with test/rediscluster/start.sh) and
// runs go test -race ./..., so every backend is checked there.
//
//	go test -race ./test/lincheck                       # the short version, SQLite
//	LATCH_TEST_POSTGRES_URL=postgres://... go test -race ./store/postgres -run 'Linearizable|Property'
//	LATCH_TEST_REDIS_URL=redis://... go test -race ./store/redis -run 'Linearizable|Property'
//	LATCH_LINCHECK_OPS=20000 go test ./test/lincheck -run Linearizable
//	go test ./test/lincheck -run Property -rapid.checks=2000 -rapid.steps=100
//
// Every backend runs the defaults below. Under -race on two cores, Check
// takes 5-45 s per backend (Flows, Children and Events the longest:
// porcupine's search over their one partition) and Property 3-15 s (Redis
// the fastest); go test -race ./test/lincheck takes one to two minutes, the
// racy-store tests included.
//
// Environment: LATCH_LINCHECK_OPS (operations per workload, default 900),
// LATCH_LINCHECK_HISTORY_OPS (per history, default 300), LATCH_LINCHECK_CLIENTS
// (default 12), LATCH_LINCHECK_SERVERS (stores on the database, default 3),
// LATCH_LINCHECK_TIMEOUT_SECONDS (porcupine's budget per
// history, default 60), LATCH_LINCHECK_SEED (the clients' choices; the
// interleaving stays the scheduler's), LATCH_LINCHECK_OUT (keep
// visualizations there). rapid reads -rapid.checks, -rapid.steps,
// -rapid.seed or RAPID_CHECKS, RAPID_STEPS, RAPID_SEED; test/lincheck runs
// 30 cases under -race (the SQLite driver is some twenty times slower
// there) and 100 without; store/postgres and store/redis run rapid's
// default 100 either way.
//
// TestCheckerCatchesCheckThenActSpawn does the same for I13: a wrapper
// whose Spawn reads the journal for the step, then admits the children
// under a private step and records the public one afterwards (two spawns
// of one step by one lease both admit their children, the second answered
// as a repeat) is rejected on the Children workload — a claim hands out a
// child the model never admitted, or the quota counter is off; run by a
// single client it is accepted. TestCheckerCatchesCheckThenActFanIn
// does the same for the wake-up: a wrapper whose fan-in wait reads the
// children, then suspends on a private signal that a child's end sends
// afterwards (a child ending between the two wakes no one) is rejected.
// TestCheckerCatchesCheckThenActPublishKey and
// TestCheckerCatchesCheckThenActEventWait do the same for I14 on the Events
// workload: a wrapper whose Publish looks its idempotency key up in a side
// table, then publishes without it (two publishes of one key both publish,
// and a retry starts the subscriptions again), and one whose wait looks for
// a retained event in a side log, then suspends for events from its Now on,
// while Publish logs the event after publishing it (a publish between the
// two steps is lost to the wait) are rejected; each run by a single client
// is accepted.
//
// TestCheckerCatchesCheckThenActSignal does the same for I11: a wrapper
// whose Signal reads the execution, then keeps the signal aside when it is
// not waiting, and whose wait suspends, then looks aside (a signal between
// the two is lost to the wait, or consumed out of order), is rejected on
// the Flows workload; run by a single client it is accepted.
//
// TestCheckerCatchesCheckThenActDedup shows the check is not vacuous: a
// test-only wrapper that reintroduces a check-then-act dedup (the race
// docs/design.md's one rule forbids) (look the key up in one call, admit without it in a second, record
// the key afterwards) is rejected, while the real store and the wrapper run
// by a single client are accepted.
package lincheck
