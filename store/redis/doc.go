// Package redis is latch's Redis backend, for latch servers sharing one Redis,
// on go-redis v9, for Redis 7 or newer (and API-compatible servers).
//
//	s, err := redis.Open(ctx, "redis://127.0.0.1:6379/0?prefix=latch")
//
// Open reads the URL with go-redis's ParseURL (redis://, rediss://, unix://
// and its query options). The prefix query parameter, or the WithPrefix
// option, names the namespace (default "latch"): Stores with different
// prefixes share one server and nothing else. OpenStore, which latch.Open
// uses, opens the same Store, except on a redis-cluster:// URL, where it
// opens the tenant router (see Redis Cluster).
//
// # Atomicity
//
// Every Store operation that changes state is exactly one Lua script, each
// in its own file under lua/ with a header listing its KEYS, ARGV and
// reply. Open loads them all as one Redis function library, latch_<hash of
// the sources> (FUNCTION LOAD REPLACE), and each operation is one FCALL of
// its function, <library>_<file>; a server that has lost the library (a
// restart without persistence, FUNCTION FLUSH) answers that the function is
// missing without running anything, and the Store loads the library again
// and calls once more. On a server without functions the scripts run with
// EVALSHA instead (go-redis's Script, which falls back to EVAL when the
// server has lost its script cache). Redis runs a function or script to the
// end before any other command, so every check and the act that depends on
// it are one indivisible step. In particular admission — the dedup mapping
// lookup and compare, the quota check and increment, the execution hash,
// its list entries, its queue entry and the dedup mapping — is admit.lua:
// no reader and no crash can ever see a key that maps to nothing, or a
// claim without its row (were SET NX, a placeholder row and the enqueue
// three commands, a second request could take a live claim for an
// "orphan" and delete it). A client that dies mid-call leaves all of its
// call or none of it.
//
// The scripts validate before they write and never fail midway on valid
// data, because Redis does not roll a script back. lua/lib.lua holds the
// helpers they share. In the library it runs once, when the library is
// loaded, rather than on every call as when it is prepended to each
// script's file for EVALSHA, where defining its sixty-odd helpers costs
// every call server time (docs/benchmarks.md has the measure). The
// library's name changes with any change
// to the sources, so Stores of different versions sharing a server each
// call their own functions; a replaced version's library stays loaded (some
// 100 KB) until FUNCTION DELETE. On a Redis Cluster every primary gets
// the library at Open, and every primary again when one answers that it
// lacks it (cluster.go).
//
// Group commit: Admit and Complete, the hot operations, take a group of
// concurrent calls in one script run, each call decided in arrival order
// and all or nothing, as if sent one by one (group.go). The SQLite backend
// groups transactions the same way.
//
// Times are integer microseconds since the Unix epoch, taken from each
// call's Now (never the server's clock, so a fake clock drives leases,
// backoff, dedup TTLs and retention): Execution times and tenant durations
// are kept to the microsecond.
//
// # Key layout
//
// Every key is "{prefix}:" followed by its name, and keys.go is the only
// Go code that spells one (lua/lib.lua derives the same names inside the
// scripts; a test checks they agree):
//
//	{p}:tenants               set    tenant names
//	{p}:tenant:<T>            hash   name max_inflight inflight dedup_ttl retention created turn,
//	                                 disabled ("1", only while disabled), max_bytes stored
//	                                 (the storage budget and the sum of the executions'
//	                                 and events' bytes fields; lib.lua, charge), laned
//	                                 (the members of its lanes, ready:tk), event_ret
//	                                 (the event retention, us; absent: the default)
//	                                 and evseq (its events' publish order)
//	{p}:apikey:<hash>         hash   tenant key_id created used | admin key_id created
//	{p}:keyids:<T>            hash   a tenant's keys: key id -> key hash
//	{p}:session:<id hash>     hash   a console session: key (hash), exp; expires
//	                                 by itself (PEXPIREAT)
//	{p}:admin                 string the admin key's hash (EnsureAdminKey)
//	{p}:exec:<id>             hash   one execution (fields in lua/lib.lua)
//	{p}:dedup:<T>             hash   dedup key -> "<expires_us>:<execution id>"
//	{p}:dedupexp              zset   <len(T)>:<T><key> scored by expiry (Prune)
//	{p}:ready:t:<T>           zset   queued executions of a tenant  ┐ members
//	{p}:ready:q:<queue>       zset   queued executions of a queue   │ prio|run_at|id,
//	{p}:ready:k:<kind>        zset   queued executions of a kind    │ all scores 0
//	{p}:ready:tk:<len(T)>:<T><kind>
//	                          zset   a tenant's lane of one kind    ┘
//	{p}:readykinds            set    kinds that have had ready work
//	{p}:turns                 zset   tenants whose ready:t is not empty,
//	                                 scored by turn (I12); a tenant out of
//	                                 it keeps its turn in its hash (turn)
//	{p}:turnseq               string the last turn given
//	{p}:sched                 zset   scheduled execution ids by run_at, until due
//	{p}:due                   zset   scheduled ones a claim found due, by run_at
//	{p}:running               zset   running execution ids by lease expiry (Rescue)
//	{p}:ck:<len(T)>:<T><ckey> hash   counts for tenant T's concurrency key: run, and
//	                                 r:<group> the ready ones of each group: kind,
//	                                 queue, limit and rate key, <len(kind)>:<kind>
//	                                 <len(queue)>:<queue><limit>:<len(rkey)>:<rkey>
//	{p}:ckparkg:<len(T)>:<T><ckey>
//	                          zset   queued executions held back by their key's
//	                                 limit, members <group><member>
//	{p}:ckpark:<len(T)>:<T><ckey>
//	                          zset   the same, as an older latch kept them (one
//	                                 park a key, emptied at its next settle)
//	{p}:done:<T>              zset   terminal execution ids by finished_at (Prune)
//	{p}:list, {p}:list:<T>    zset   execution ids (all scores 0, so by id: List)
//	{p}:schedule:<len(T)>:<T><name>
//	                          hash   one schedule: settings, next, last_run,
//	                                 last_exec, and its tick template (x_*, qp)
//	{p}:schedules:<T>         zset   a tenant's schedule names (all scores 0)
//	{p}:nextrun               zset   enabled schedules (<len(T)>:<T><name>) by
//	                                 next_run_at (ListSchedules DueBy)
//	{p}:schedlive:<len(T)>:<T><name>
//	                          set    ids of the schedule's executions admitted
//	                                 in flight (ended ones leave lazily)
//	{p}:ratelimit:<len(T)>:<T><rkey>
//	                          hash   rate, per, burst, iv (interval) and the
//	                                 bucket's tat, for tenant T's rate key
//	{p}:ratelimits:<T>        set    a tenant's rate keys that have a limit
//	{p}:steps:<id>            hash   an execution's journal: step name ->
//	                                 "<seq>:<started>:<recorded>:<attempt>:<result>"
//	{p}:steporder:<id>        list   its step names in record order (the
//	                                 exec's jbytes: the journal's size)
//	{p}:sigbuf:<len(id)>:<id><name>
//	                          list   an execution's buffered signals of one
//	                                 name (their data), oldest first
//	{p}:signames:<id>         set    the signal names with a buffer
//	{p}:sigkeys:<id>          hash   signal idempotency key -> first answer
//	{p}:wake                  zset   suspended execution ids by wake_at (Wake)
//	{p}:kids:<id>             zset   a parent's children, scored by spawn order
//	                                 (1, 2, ...): List by ParentID, its end
//	{p}:spawns:<id>           hash   its counters: n (children ever spawned),
//	                                 t:<step> and e:<step> (a spawn's children
//	                                 and those that ended; lib.lua, children)
//	{p}:event:<id>            hash   one event: id tenant name key pub exp seq bytes idem,
//	                                 step (store.EventStep) and lean (without its data)
//	{p}:evname:<len(T)>:<T><name>
//	                          zset   a tenant's events of one name, members
//	                                 <16 hex seq><id> scored by published_at
//	{p}:evkey:<len(T)>:<T><len(name)>:<name><key>
//	                          zset   the same, of one name and key
//	{p}:evexp:<T>             zset   a tenant's event ids by expiry (Prune)
//	{p}:evidem:<T>            hash   publish idempotency key -> the kept answer
//	                                 (store.MarshalPublishAnswer's JSON)
//	{p}:evwait:<len(T)>:<T><name>
//	                          zset   executions suspended waiting for the event
//	                                 with no key, scored by their since
//	{p}:evwaitk:<len(T)>:<T><len(name)>:<name><key>
//	                          zset   the same, of waits that name the key
//	{p}:evdone:<id>           set    the event ids an execution consumed
//	{p}:sub:<len(T)>:<T><name>
//	                          hash   one subscription: its settings and the
//	                                 template of the execution it starts (x_*, qp)
//	{p}:subs:<T>              zset   a tenant's subscription names (all scores 0)
//	{p}:subev:<len(T)>:<T><event>
//	                          zset   the subscription names on one event (all
//	                                 scores 0: name order)
//	{p}:runs:<id>             list   an execution's attempt history, oldest
//	                                 run first, at most store.MaxRunsKept
//	                                 (lib.lua, run_start)
//	{p}:qqueued:<len(T)>:<T><queue>
//	                          zset   queued execution ids of tenant T's queue by run_at
//	{p}:qsched:<len(T)>:<T><queue>
//	                          zset   its scheduled execution ids (due or not) by run_at
//	{p}:qsusp:<len(T)>:<T><queue>
//	                          set    its suspended execution ids
//	{p}:queues:<T>            set    a tenant's queues that have had one of those
//	                                 (QueueStats; Prune drops the empty ones)
//	{p}:servers               zset   server ids by last seen (ReportServer)
//	{p}:server:<id>           hash   host version started seen: a server's report
//	{p}:workers               zset   <len(S)>:<S><len(T)>:<T><worker id> by last
//	                                 seen (never moved back), S its server
//	{p}:activity              zset   minutes with activity counts, by minute
//	{p}:activity:<minute_us>  hash   s:<T>, f:<T>: tenant T's starts and failures
//	{p}:schema                string the layout version (upgrade.go)
//	{p}:version               string change counter (Notifier)
//	{p}:changed               pub/sub channel carrying the counter
//
// The ready indexes order members by bytes (ZRANGEBYLEX): 16 hex digits of
// priority (descending), 16 of run_at (ascending), then the execution id,
// encoded in Go so that Lua never does 64-bit arithmetic. Claims take
// turns across tenants (I12): the turns sorted set holds the tenants whose
// ready:t index is not empty, scored by turn, and a claim for every tenant
// serves them smallest turn first, one execution each a round, walking
// each tenant's own index — or, for a claim filtered by kind (every
// in-process worker's), the tenant's lanes of those kinds, so that a
// backlog of other kinds is never read — and checking the queue and kind
// filters per execution (lua/claim.lua says how far, and what happens
// beyond). A claim for one tenant walks the indexes its filters allow —
// the tenant's, its queues', its kinds' or its lanes of its kinds,
// whichever is smallest — merging them in order and checking the
// remaining filters per execution. The lanes are layout version 3: every
// Open puts older data in them, and a tenant's count of lane members
// (laned) tells a claim whether a server of an older release, running
// beside this one, left them short (lanes.go). A claim first
// makes up to 1000 scheduled executions whose run_at has come due: they
// move from sched to due and join the ready indexes with their status
// unchanged, since a claim changes nothing it does not lease (Promote alone
// turns them queued). An execution whose concurrency key is at its limit is
// parked in the key's ckparkg set instead of being walked past by every
// later claim, with the others of its group (its kind and queue, which
// claims filter by, its limit and its rate key), and goes back when the key
// has a free slot that the group's ready executions do not fill: the
// group's first parked execution stays parked only while the key's running
// count plus the group's ready count reaches its limit (I4; lib.lua,
// ck_settle). So a claim that may take a group's executions either sees its
// parked ones or sees enough of its ready ones, as free to start as they
// are, to fill the slots they would take, whatever kinds and queues it is
// filtered by.
// Concurrency keys are scoped per tenant: the ck and ckpark names carry the
// tenant, its length first so that no tenant/key pair can be read two ways,
// and one tenant's key never counts another tenant's executions.
//
// # Observation
//
// QueueStats reads no terminal execution: the scripts that change an
// execution's status keep the per-queue sets qqueued, qsched and qsusp
// (lib.lua, qs_enter and leave; one ZADD when admitted, one ZREM when
// claimed, nothing when completed), so a queue's ready, scheduled and
// suspended counts and its oldest ready run_at are ZCARD, ZCOUNT and the
// first score; running ones are counted from the running set, as are
// ConcurrencyKeys. An execution admitted before these sets existed is
// counted from its next change of status (there is no upgrade walk).
// Dedup hits (dhits, dhit_at) and the traceparent (trace) are execution
// hash fields, absent until there is one: absent reads as zero, none.
//
// # Schedules and rate limits
//
// FireSchedule is one script (fire_schedule.lua): the compare and set on
// next_run_at, the tick's dedup lookup, the overlap check and the
// admission are one step (I6). The overlap check is exact: every execution
// of a schedule is added to the schedule's schedlive set when it is
// admitted in flight (by Admit or by a tick, lib.lua's admit_new, which
// both share), and the fire reads the status of each member in the same
// script that inserts the tick, dropping members that have ended or gone.
// The scripts that end executions need not know about schedules; the set
// only holds, besides the schedule's work in flight, what ended since the
// schedule's last fire. Running, on read, is whether a member runs.
//
// A rate limit is enforced inside claim.lua (I7): after its concurrency
// key lets a candidate start, the candidate's bucket (store.RateLimit's
// GCRA, in whole microseconds) is checked, and its TAT moves only for the
// candidate the claim starts, in the same script. A candidate the bucket
// refuses is deferred: scheduled, in sched, at the bucket's next free
// start (k-1 intervals later for the k-th refused of one bucket in one
// claim), so later claims do not walk past it again and again.
//
// # Redis Cluster
//
// The braces around the prefix are a hash tag: every key of a namespace
// hashes to the same slot, so every script's keys are on one node, as
// Cluster requires. Each script names in KEYS the keys it can compute from
// its arguments; the keys that hang off stored data (an execution found
// through a dedup key or an index, the indexes of its queue and kind, its
// concurrency key, the records of its tenant) are derived inside the
// script from the same prefix, which is legal because they are in the same
// slot. A redis-cluster:// URL (cluster.go) opens the tenant router
// (OpenStore, OpenRouter; router.go), which gives every tenant a namespace
// of its own, so a slot of its own:
//
//	{p}                       the home namespace: tenants (the registry, and
//	                          each tenant's creation record as tenant:<T>),
//	                          apikey:<hash>, keyids:<T>, admin, session:<id>,
//	                          schema, servers, server:<id>, workers,
//	                          activity, and the router's own keys:
//	{p}:layout                string "tenant": the router's home (a
//	                          single-slot Store refuses it; the router
//	                          refuses a single-slot namespace)
//	{p}:shard:turns           zset   tenants by turn (I12), across tenants
//	{p}:shard:turnseq         string the last turn given
//	{p}:shard:hint:<what>     zset   tenants that may have work of a kind (claim,
//	                                 promote, rescue, wake, fire) by the
//	                                 earliest time, a lower bound (router_hints.go)
//	{p}:shard:gen:<what>:<T>  string lowerings of a hint (its refresh's compare
//	                                 and set)
//	{p}:shard:hold:<what>:<T> zset   calls holding a hint down across their
//	                                 script, by when each hold lapses (ms)
//	{p/T}                     tenant T's namespace: the whole layout above for
//	                          one tenant — its hash (authoritative: quota,
//	                          inflight, disabled), executions, dedup, ready
//	                          indexes, turns, sched, due, running, wake,
//	                          done, concurrency keys, rate limits, schedules,
//	                          nextrun, flows, runs, queue statistics
//
// ('/' is not allowed in a prefix, so no prefix's namespace is another's
// tenant namespace.) Every operation on one tenant is the usual script on
// the tenant's namespace: one script, one slot, one node, atomic as
// above, while tenants spread over the cluster's primaries. The router
// only routes and merges; every rule stays in the scripts:
//
//   - Tenants: CreateTenant writes the home record and key (the name and
//     key hash are claimed there) then the tenant's namespace; DeleteTenant
//     revokes the tenant's keys (unless the tenant has work in flight and
//     the delete is not forced: the namespace would refuse it), deletes
//     the namespace (refused there while work is in flight) then the home
//     record, keys, workers and activity. A crash between the two leaves a
//     tenant that reads as missing; DeleteTenant removes it. LookupAPIKey
//     reads home, then the tenant's hash in its namespace: ErrNotFound when
//     that hash is missing (so a key left by such a crash authenticates
//     nothing), else its Disabled flag.
//   - Claim for every tenant keeps I12 across namespaces: the tenants the
//     claim hint names, by turn, served in rounds of one execution each by
//     their own namespace's claim (batched: n wanted over k tenants asks
//     each for n/k at once), then new turns in the order last served
//     (router_claim.go). Rescue, Promote and Wake visit the tenants their
//     hint names as due, ListSchedules DueBy those of the fire hint: an
//     idle tenant costs them nothing (the hint repair below still reads
//     it every 10 s). A tenant whose part fails is skipped: the others'
//     work is done, and the errors come back joined (ListSchedules DueBy
//     returns the others' schedules with the error). Prune visits every
//     tenant, then re-derives every hint, whatever failed before.
//   - Hint repair: one goroutine per open router re-derives every tenant's
//     hints from its namespace every 10 s (jittered, 8 to 12 s), and at
//     once after a node was out of reach, a hint write failed, or a call
//     failed in a way that may have followed its script's commit (not a
//     refusal, not the caller's cancellation or deadline); repairs never
//     overlap (a failed one is tried again after 1 s), and no Claim or
//     pass runs one. A hint lost by a crash between a script and its hint
//     write (claim.lua's leases and their rescue hint, say) is so back at
//     most about 12 s, plus the repair's own time, after the loss while
//     any process of the namespace runs, and the work is done by the next
//     pass after that (router_repair.go). A repair costs, per process, a
//     pipelined read of every tenant's six index ends and five small
//     scripts per tenant on the home's primary.
//   - Lease tokens name their tenant: the router hands out
//     "<tenant>.<token>" (tenant names have no '.'), and Heartbeat,
//     Complete, Fail, Release, Suspend and RecordStep go straight to that
//     tenant's namespace with the namespace's token, whether or not the
//     call names a tenant; a token naming no tenant, or another than the
//     call names, answers ErrLeaseLost (router_token.go). Any other call
//     naming an execution but no tenant (an admin's Get, Cancel, Delete,
//     Signal, Retry, Steps, Runs) reads the registry (SMEMBERS) and finds
//     the execution with one pipelined EXISTS per tenant: its cost grows
//     with the number of tenants. List over every
//     tenant merges the tenants' pages newest first (the scan bound then
//     applies per tenant); the lists ordered by tenant are the tenants'
//     lists in name order.
//   - Changes: each namespace keeps its version counter and channel; the
//     router subscribes with one pattern, {p[}/]*:changed, and marks
//     versions per namespace (notify.go). A failover may set a
//     tenant namespace's counter back without dropping the subscription
//     (it is on another node), so when a call finds a node out of reach or
//     the cluster down the router wakes every waiter and forgets the
//     versions it knew, as at a resubscription.
//   - Every command goes to its slot's primary: the router overrides the
//     URL's read_only, route_by_latency and route_randomly (cluster.go).
//
// What this gives: a tenant's work stays on one primary (a single huge
// tenant gets one node's throughput, as before), and different tenants'
// work spreads over the primaries. Execution ids the store makes are
// unique everywhere; an id a client chooses is unique within its tenant
// only. A ?layout=single URL keeps a namespace in one slot (one shard: a
// Cluster then spreads several prefixes, not one), as latch did before
// the router, and as it still does on a single server.
//
// A failover loses what the primary had acknowledged but not yet sent to
// the promoted replica (replication is asynchronous): a suffix of that
// primary's changes, each script's effects whole or not at all
// (Durability, below; TestClusterFailover). Home and tenants may be on different primaries,
// so a failover of one may lose a suffix of its own writes only: the
// home's hint writes whose work a tenant's primary kept are re-derived by
// the next hint repair (at once, since the failover made a node
// unreachable; within about 12 s in any case).
//
// # Flows
//
// A flow's records hang off its execution (steps, sigbuf, signames,
// sigkeys) and go with it, in the scripts that delete it (lib.lua,
// remove). Each flow operation that changes state is one script:
// RecordStep (step.lua, fenced like Complete; HSETNX-like, the first
// record wins), Suspend (suspend.lua), Signal (signal.lua), Wake
// (wake.lua) and Retry (retry.lua). A wait ends by a signal or by its
// timeout in whichever of signal.lua and wake.lua runs first, and that
// script takes it out of the suspended state for the other: a wait ends
// once (I11). A suspended execution counts in its tenant's inflight but is
// in no ready index, not in running and not counted in its concurrency
// key's run. A claim hands each lease its journal, read in the claim
// (HGETALL) only for an execution whose journal flag is set, and does not
// count a start for a resume (the execution's resume field, set when the
// flow's own progress queued it).
//
// # Children
//
// A child (store/children.go) is an execution of its parent's tenant, so
// a whole family is in one namespace, on one node even through the tenant
// router, and one script sees parent and children. Spawn is one script
// (spawn.lua): the fence, the replay of a recorded step, the bounds, the
// journal's bounds, the quota and the storage budget, then every child
// admitted as Admit admits one (lib.lua, admit_new) with its parent's
// fields, its place in the parent's kids list and its spawn's counters,
// and the step recorded. Every script that ends an execution does it
// through lib.lua's finish, and every one that deletes one through remove
// or drop, and there the family's rules run in the same script: a child's
// end counts in its spawn's counter (one HINCRBY) and reads its parent's
// wait (one HMGET), never its siblings, and ends that fan-in wait when its
// condition now holds (child_end); a parent's end, or Cancel of a running
// parent, cancels its children spawned with cancel, and theirs (parent_end);
// a parent's delete (Delete, Prune, DeleteTenant) deletes its family but
// for abandoned children in flight, which lose their parent (drop). So a
// child's end racing its parent's Suspend is decided in one script or the
// other: suspend.lua reads the counter that the child's script wrote, or
// the child's script finds the wait that suspend.lua wrote. A terminal
// child has no retention entry (done:<T>): it goes with its parent only.
//
// # Events
//
// Events and subscriptions (store/events.go, I14) are a tenant's, so all
// of a tenant's events, its waits for them and the executions a publish
// starts are in one namespace: one slot, one node even through the tenant
// router, where Publish runs on the tenant's namespace and lowers its
// claim hint when it queued work. Publish is one script (publish.lua): the
// idempotency key's kept answer, the storage budget, the event with its
// indexes, every wait it matches ended (read from the waits of its name,
// and of its name and key, by their since: exactly the ones it ends), and
// each enabled subscription's start admitted as Admit admits one, its
// refusal answered; the answer is kept under the idempotency key as
// store.MarshalPublishAnswer encodes it. A wait for an event is
// suspend.lua's: it consumes the oldest retained match (the index of the
// name, or of name and key, from its since, skipping the events the
// execution consumed) or joins the waits of its name. A publish and a
// suspend of one tenant's event are two scripts on one slot, so one of
// them sees the other: the suspend the event, or the publish the wait
// (never a lost wake-up). A wait's timeout (wake.lua), a cancel or a
// delete takes it out of the waits (lib.lua, leave), so a wait ends once.
// An event counts store.EventSize in its tenant's stored until Prune
// deletes it at its expiry, with its index entries and its idempotency
// key (lib.lua, ev_drop); the step each wait it ends records is a copy of
// it, counted in that execution's bytes and its tenant's stored (lib.lua,
// ev_step and ev_consume): a publish is refused when its event and copies
// together pass the budget, a wait when its copy of the retained event it
// would consume does, each with nothing written. DeleteTenant deletes its
// events and subscriptions. The step an event records and the payload it
// gives are encoded in Go at the publish (store.EventStep, kept in the
// event's hash with the same without its data), never in Lua: each copy's
// bytes, Lua's string length, are those of Go's JSON.
//
// # Attempt history
//
// Each lease is a run in its execution's runs list, written by the scripts
// that start and end it: claim.lua adds it with one RPUSH (an LTRIM past
// store.MaxRunsKept), and complete, fail, release, suspend and rescue
// rewrite that last element with the run's end and outcome (lib.lua,
// run_end). The list goes with its execution (lib.lua, remove).
//
// # Wake-ups
//
// The Store implements store.Notifier across processes: every script that
// changes state increments {p}:version and publishes the new value on
// {p}:changed, and one subscriber goroutine per Store closes its Changed
// channels. Messages arrive asynchronously, so each channel remembers the
// newest version its process knew when it was handed out, and only a later
// one closes it (notify.go). When the subscription drops, go-redis
// resubscribes and every waiter is woken, since changes may have been
// missed; callers poll as well, as the Notifier contract says. On a Redis
// Cluster the channel is a plain one (PUBLISH reaches every node of the
// cluster) and the subscriber connects to the namespace's primary, so a
// failover drops its connection too, and it resubscribes on the new one
// (the tenant router's one pattern subscription: see Redis Cluster).
//
// It is also a store.ChangeFeed: a change made through it is reported with
// the ids of the executions it changed; a version none of its own scripts
// returned (another process's change), or a resubscription, as
// unattributed (notify.go).
//
// # Durability (I8)
//
// An operation that returned nil has been applied by Redis, and Redis
// answers a script only after running it. Whether it survives a Redis
// restart is the server's persistence setting, not latch's:
//
//   - No persistence (save "" and appendonly no): a restart loses
//     everything — executions, dedup keys, tenants and API keys. Fit for
//     tests and throwaway queues only.
//   - RDB snapshots only: a restart goes back to the last snapshot,
//     losing every acknowledged change since (minutes, typically).
//   - AOF with appendfsync everysec (Redis's usual AOF setting): a crash
//     of the Redis process loses nothing (the log is in the OS page
//     cache); a crash of the machine or a power loss loses up to about one
//     second of acknowledged changes.
//   - AOF with appendfsync always: a change is on disk before Redis
//     answers, so nothing acknowledged is lost, at a large cost in
//     throughput.
//
// Within those limits a restart never splits an operation: Redis writes
// each script's effects to the AOF as one MULTI/EXEC block, and a block cut
// short at the end of the file is dropped when Redis loads it
// (aof-load-truncated yes, the default).
//
// A replica promoted after its primary failed lacks whatever the primary
// had acknowledged but not yet sent it: replication is asynchronous and
// latch does not WAIT. What is lost is a suffix of the changes to that
// primary's keys, each operation whole or not at all; how much depends on
// how far behind the replica was (a Redis Cluster refuses to promote a
// replica whose link was down longer than its
// cluster-replica-validity-factor allows; 0 promotes it anyway). Lease
// tokens, dedup keys and quota counters go back with the executions they
// belong to, so the invariants hold on what survives, and a lost change
// shows as follows (TestClusterFailover loses each of these on every run):
//
//   - a lost Admit: Get answers ErrNotFound and the dedup key maps to
//     nothing, so resubmitting it admits a new execution;
//   - a lost Complete: the execution is running again under the same
//     lease, its result gone. The worker's retry with its token completes
//     it; without one the lease expires and Rescue queues it again, and the
//     work is done again (at least once);
//   - a lost Claim: the execution is queued again and another claim starts
//     it, while the lost lease's worker may still be running it; that
//     worker's heartbeat and Complete answer ErrLeaseLost. Only a lost
//     change starts an execution twice;
//   - a lost tenant setting or API key change is undone: an added key is
//     refused, a revoked key is accepted again.
//
// A Store carries on across the failover without reopening (cluster.go).
package redis
