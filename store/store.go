package store

import (
	"context"
	"encoding/json"
	"time"
)

// Store is the set of atomic business operations latch runs on. Every method
// that changes state does so in one indivisible step (one transaction, one
// script) and returns an error wrapping one of this package's sentinels when
// a business rule refuses it. A nil error means the change is durable to the
// backend's stated degree (I8).
//
// Times: every Params struct carries Now. Backends use it, never the wall
// clock, for everything they compare or record, so tests can drive leases,
// backoff and retention with a fake clock. A zero Now means time.Now().
type Store interface {
	// Admit submits a group of executions for one tenant. Items are decided
	// one by one in order, as if submitted singly, and committed together:
	// a later item sees earlier ones (two items with one dedup key get one
	// execution). A per-item refusal (quota, storage budget, reused key,
	// invalid) is reported
	// in that item's Err and does not affect the others. The returned error
	// is for the whole call: ErrNotFound for an unknown tenant, or a backend
	// failure, in which case nothing was admitted.
	Admit(ctx context.Context, p *AdmitParams) (*AdmitResult, error)

	// Claim leases up to Max ready executions (queued, whatever its RunAt,
	// or scheduled with RunAt <= Now) in claim order, each to WorkerID for
	// LeaseDuration (0 = 30s). Each claimed execution becomes running, its
	// Attempt grows by one (not for a resume of a flow: see Suspend) and it
	// gets a fresh lease token; its Lease carries its journal. The
	// execution row stays the one durable copy: a claim never deletes it.
	//
	// Claim order is fair across tenants (I12). Every tenant has a turn, a
	// place in an order the store keeps; the tenants with an execution the
	// claim may take are served in rounds, smallest turn first (equal turns
	// in name order), each tenant one execution a round: its first in its
	// own order, highest Priority first, then oldest RunAt (then id).
	// Priority orders a tenant's own executions only. Among executions that
	// share a concurrency key the order is best effort: one the key held
	// back may start after one of that key queued again later (a resume, a
	// release, a retry); the key's limit, not their order, is what holds. The claim then gives
	// every tenant it leased to a turn after every other tenant's, in the
	// order it last served them; a tenant it did not reach keeps its turn,
	// and so comes first in the next claim. Tenant filters the claim to one
	// tenant and still moves that tenant's turn; Queues and Kinds filter the
	// executions, not the turns. So one tenant's backlog, of any size or
	// priority, holds back another tenant's next start by one round at
	// most: a tenant with work comes first once every tenant served after
	// it has been served again. A Disabled tenant's executions are never
	// claimed (it keeps its turn until it is enabled again).
	//
	// Under concurrency the order and the count are best effort: a claim may
	// pass by executions that concurrent operations hold at that moment, so
	// it may return fewer than Max (even none) while some are ready, or not
	// the first in claim order, and concurrent claims may serve one tenant
	// in one round. Safety is not relaxed: it returns only executions ready
	// at the claim, each attempt to one claim only, each under a fresh token
	// (the fence of Heartbeat and the rest). Alone, a claim returns exactly
	// min(Max, ready) in claim order.
	//
	// Limits are decided inside the claim (I4, I7): a candidate with a
	// concurrency key starts only while fewer than its limit of that
	// tenant's executions with that key run; a candidate whose tenant has a
	// RateLimit for its rate key starts only when the bucket allows it, and
	// the bucket's TAT moves in the same step. A candidate the bucket
	// refuses is deferred, not passed over again and again: it becomes
	// scheduled with RunAt at the bucket's next free start (the k-th refused
	// in one claim for one key k-1 intervals later), its Attempt unchanged,
	// and ClaimResult.RetryAt tells the worker when to claim again. Deferral
	// only spreads the retries; the bucket alone decides every start.
	Claim(ctx context.Context, p *ClaimParams) (*ClaimResult, error)

	// Heartbeat extends a running execution's lease. The fence shared by
	// Heartbeat, Complete, Fail and Release: ErrLeaseLost unless the
	// execution is running under Token with a lease that has not expired at
	// Now and belongs to Tenant ("" = any). A missing execution (force
	// deleted, pruned, never existed) and another tenant's answer the same
	// ErrLeaseLost: to a worker each means "stop, this attempt is over", and
	// another tenant's execution stays indistinguishable from a missing one.
	// An expired lease is lost even before Rescue has run: the old token
	// changes nothing from the moment it expires (I5).
	Heartbeat(ctx context.Context, p *HeartbeatParams) (*HeartbeatResult, error)

	// Complete ends the attempt as succeeded with Result. Fenced like
	// Heartbeat. Frees the quota slot. Result counts in the tenant's
	// storage budget (storage.go): ErrStorageExceeded past it, nothing
	// changed, the lease kept. If cancel was requested the execution
	// ends cancelled instead (docs/api.md: a cancelled running execution becomes
	// cancelled when its worker stops, however it stops); Result is kept.
	Complete(ctx context.Context, p *CompleteParams) (*Execution, error)

	// Fail ends the attempt. If cancel was requested the execution becomes
	// cancelled. Otherwise, if Retry is set and attempts remain, it is queued
	// again (scheduled at Now+RetryDelay); else it becomes failed. Fenced.
	// Error counts in the tenant's storage budget, never refused.
	Fail(ctx context.Context, p *FailParams) (*Execution, error)

	// Release hands a running attempt back (graceful shutdown): the
	// execution is queued again at once, or cancelled if cancel was
	// requested. Fenced. The attempt still counts as a start (Attempt counts
	// starts), but Claim never checks MaxAttempts, so a released execution
	// always runs again; only a failure after it may end it for lack of
	// attempts.
	Release(ctx context.Context, p *ReleaseParams) (*Execution, error)

	// Cancel cancels an execution. Scheduled, queued or suspended:
	// cancelled at once, quota freed. Running: CancelRequested is recorded durably; the worker
	// learns it from its heartbeat and the execution ends cancelled when the
	// worker stops or its lease expires. Terminal: unchanged.
	Cancel(ctx context.Context, p *CancelParams) (*Execution, error)

	// Delete removes a terminal execution (ErrNotTerminal otherwise) or, with
	// Force, any execution: the row, its quota slot, its dedup key, its
	// journal and its buffered signals go at once, and its stored bytes
	// leave its tenant's count. A worker holding a lease on it gets ErrLeaseLost from then on.
	Delete(ctx context.Context, p *DeleteParams) error

	// Rescue ends every lease that expired before Now: cancelled if cancel
	// was requested, queued again (claimable at once) while attempts remain,
	// else failed. Fenced: an execution that completed in the meantime is
	// left as it is.
	Rescue(ctx context.Context, p *RescueParams) (*RescueResult, error)

	// Promote moves scheduled executions whose RunAt has come to queued. It is
	// housekeeping for readers: Claim already takes due scheduled executions.
	Promote(ctx context.Context, p *PromoteParams) (*PromoteResult, error)

	// Prune deletes terminal executions finished more than their tenant's
	// retention ago, together with their dedup keys, journals and signals,
	// dedup keys whose TTL has passed, and events whose ExpiresAt has come
	// (with their idempotency keys; their EventSize leaves the tenant's
	// stored bytes); servers and workers not seen for
	// PresenceKept and activity minutes older than ActivityKept.
	Prune(ctx context.Context, p *PruneParams) (*PruneResult, error)

	// RecordStep records a step in a running execution's journal (I10).
	// Fenced like Heartbeat. The first record of a name wins: recording a
	// name already recorded changes nothing and answers the recorded step
	// with Recorded false. The step's Attempt is the execution's. A new
	// name when the journal holds p.StepBound() steps is ErrTooManySteps,
	// nothing written (the lease kept); the count and the insert are one
	// atomic step. A new step's result counts in the tenant's storage
	// budget: ErrStorageExceeded past it, nothing written, the lease kept.
	RecordStep(ctx context.Context, p *RecordStepParams) (*RecordStepResult, error)

	// Suspend ends a running attempt to sleep or to wait for a signal
	// (docs/flows.md), in one step. Fenced like Heartbeat. The lease ends
	// and the concurrency-key slot is freed; the quota slot is kept.
	//
	//   - Cancel requested: the execution becomes cancelled, as Complete
	//     would make it.
	//   - Step already recorded: nothing is recorded, the execution is
	//     queued again at once.
	//   - Step new and the journal holds p.StepBound() steps:
	//     ErrTooManySteps, nothing changed (the lease kept), since the
	//     outcome, now or when the suspension ends, is one more step.
	//   - A sleep (Until) not after Now, or a wait (Signal) for a signal of
	//     that name buffered and not yet consumed: the step is recorded
	//     (null; the oldest such signal's data, consuming it) and the
	//     execution is queued again at once.
	//   - A fan-in wait (Children): ErrInvalid, nothing changed (the lease
	//     kept), unless Children names a spawn step of this execution's
	//     journal and Count is at most its number of children. When Count
	//     of them (0 = all) have ended already (terminal or deleted), the
	//     step is recorded (FanInStep, TimedOut false, within the journal's
	//     room) and the execution is queued again at once.
	//   - A wait for an event (Event): when a retained event of the
	//     tenant matches it (EventMatches; not consumed by this execution
	//     before), the oldest such is consumed: the step is recorded
	//     (EventStepWithin the journal's room), its bytes counted in the
	//     storage budget (ErrStorageExceeded past it, nothing written, the
	//     lease kept, the event not consumed), and the execution is queued
	//     again at once.
	//   - Else it becomes suspended: WakeAt Until for a sleep; for a wait,
	//     WaitingFor Signal (ChildrenWaitFor(Children) for a fan-in wait,
	//     EventWaitFor(Event) for a wait for an event, its EventKey and
	//     Since kept with it) and WakeAt Now+Timeout (nil without a
	//     timeout). A fan-in wait ends when a child's end makes its
	//     condition hold (children.go); a wait for an event when a
	//     Publish matches it (events.go).
	//
	// An execution queued again by a flow's own progress (here, Signal and
	// Wake) is a resume: its next claim does not count a start, so the run
	// keeps its attempt number.
	Suspend(ctx context.Context, p *SuspendParams) (*Execution, error)

	// Spawn admits children of a running execution under a step, in one
	// fenced step (I13, children.go). Fenced like Heartbeat. Checks, in
	// order, each refusal changing nothing and keeping the lease:
	//
	//   - Step already recorded: a spawn's (ParseSpawnStep) answers its
	//     children with Recorded false and admits nothing, whatever Items
	//     hold now; another step's is ErrInvalid.
	//   - More than p.ItemBound() items, more than p.ChildBound() children
	//     of this execution with them, or children deeper than
	//     p.DepthBound(): ErrTooManyChildren.
	//   - The journal's bounds for the new step (ErrTooManySteps,
	//     ErrJournalTooLarge), as RecordStep.
	//   - The tenant's quota for all the items together: ErrQuotaExceeded.
	//   - The storage budget for the payloads and the step together:
	//     ErrStorageExceeded.
	//
	// Then every child is admitted as Admit admits a submission (queued,
	// or scheduled with a later RunAt; counted in the tenant's inflight),
	// with ParentID, ParentStep, OnParentEnd and Depth set, and the step is
	// recorded with SpawnStep of their ids in item order. A parent whose
	// cancel was requested spawns its ParentEndCancel children already
	// cancelled (FinishedAt Now, no quota slot taken), as its Cancel would
	// have cancelled them: none is ever claimed.
	Spawn(ctx context.Context, p *SpawnParams) (*SpawnResult, error)

	// Publish publishes an event of Tenant (I14, events.go) in one atomic
	// step. With an IdempotencyKey already used by a retained event of
	// the tenant it answers that publish's answer (Replayed) and changes
	// nothing. Otherwise it records the event (ExpiresAt = Now + the
	// tenant's EventRetention), counting EventSize and the copy each
	// resumed wait records in the storage budget (ErrStorageExceeded when
	// they pass it together, nothing written); resumes every
	// execution of the tenant suspended waiting for the event's name that
	// the event matches (EventMatches with the wait's key and since),
	// recording EventStepWithin the journal's room as its step (the
	// event without its data when it does not fit, so a wait's outcome
	// always lands) and marking the event consumed by it; and admits,
	// for each Enabled subscription of the tenant on the name in name
	// order, its StartSubmission as Admit would (a start refused by the
	// quota or the storage budget is answered in its EventStart and does
	// not fail the publish). ErrNotFound for an unknown tenant;
	// ErrInvalid for invalid params (PublishParams.Check).
	Publish(ctx context.Context, p *PublishParams) (*PublishResult, error)

	// PutSubscription creates (Created) or replaces a tenant's
	// subscription, CreatedAt kept by a replace, UpdatedAt Now.
	// ErrNotFound for an unknown tenant; ErrInvalid when
	// Subscription.Check refuses it; ErrTooManySubscriptions when it
	// would create one more than p.SubscriptionBound().
	PutSubscription(ctx context.Context, p *PutSubscriptionParams) (*PutSubscriptionResult, error)
	// GetSubscription reads one; ErrNotFound if the tenant has none of
	// that name.
	GetSubscription(ctx context.Context, p *GetSubscriptionParams) (*Subscription, error)
	// ListSubscriptions reads a page of subscriptions ordered by tenant
	// then name: at most p.ListLimit(), the first after p.After.
	ListSubscriptions(ctx context.Context, p *ListSubscriptionsParams) ([]*Subscription, error)
	// DeleteSubscription removes one: later publishes start nothing for
	// it; executions it started stay. ErrNotFound if there is none.
	DeleteSubscription(ctx context.Context, p *DeleteSubscriptionParams) error

	// Signal sends a signal to an execution (I11). With an IdempotencyKey
	// already used for this execution it answers the first call's answer
	// and changes nothing, whatever the execution's status. Otherwise:
	// ErrNotActive if the execution is terminal; if it is suspended
	// waiting for Name, the wait's step is recorded with Data and the
	// execution is queued again (a resume; Delivered); else the signal is
	// buffered for a later wait of that name, or refused with
	// ErrSignalBufferFull, nothing written, when the execution buffers
	// p.BufferBound() signals already (counted and inserted in one atomic
	// step). Signals of one name are consumed oldest first, each by one
	// wait, which frees its place. A new signal's data counts in the
	// tenant's storage budget: ErrStorageExceeded past it, nothing written. ErrNotFound for a missing execution or
	// another tenant's.
	Signal(ctx context.Context, p *SignalParams) (*SignalResult, error)

	// Wake ends the suspensions whose WakeAt is not after Now: the step is
	// recorded (null after a sleep, TimedOut after a wait, the FanInStep
	// with TimedOut after a fan-in wait) and the
	// execution is queued again at Now (a resume). Each suspension ends
	// once, by Wake or by Signal, never both. Every server runs it beside
	// Promote. Each tenant's part is one atomic step; the whole need not
	// be one across tenants (the Redis tenant router wakes each tenant in
	// a step of its own), so a Wake may pass by a suspension of one tenant
	// that fell due while it ran, which the next Wake ends.
	Wake(ctx context.Context, p *WakeParams) (*WakeResult, error)

	// Retry queues a failed execution again, keeping its journal: Attempt
	// starts again from 0 (MaxAttempts applies afresh), Error, Result and
	// FinishedAt are cleared, RunAt is Now. It takes a quota slot:
	// ErrQuotaExceeded at the tenant's quota, with nothing changed.
	// ErrNotFailed in any other status; ErrNotFound if missing. A child
	// spawned with ParentEndCancel whose parent has ended or has its
	// cancel requested is not queued (I13, children.go): it becomes
	// cancelled at Now, with its Error, Attempt and journal kept, no quota slot
	// taken, still ended in its spawn's count, and Retry answers it so.
	Retry(ctx context.Context, p *RetryParams) (*Execution, error)

	// Steps reads a page of an execution's journal in record order (see
	// StepsParams: a count and a bound of bytes, which the store applies
	// before it reads the results). ErrNotFound for a missing execution
	// or another tenant's; ErrInvalid for a bad page (StepsParams.Paging).
	Steps(ctx context.Context, p *StepsParams) (*StepsPage, error)

	// Runs reads an execution's attempt history, oldest run first: each
	// lease Claim gave, with its worker, when it was claimed and how it
	// ended (see Run). Claim records a run and Complete, Fail, Release,
	// Suspend and Rescue end it, each in its own atomic step; at most
	// MaxRunsKept are kept, the latest. ErrNotFound for a missing
	// execution or another tenant's.
	Runs(ctx context.Context, p *RunsParams) ([]*Run, error)

	// QueueStats counts the executions that are not terminal by tenant
	// and queue (see QueueStats), ordered by tenant then queue.
	QueueStats(ctx context.Context, p *QueueStatsParams) ([]*QueueStats, error)

	// ReportServer records a server's report in one atomic step: the
	// server's row (LastSeenAt = Now), each worker's LastSeenAt (never
	// moved back), and the activity deltas added to their minutes.
	ReportServer(ctx context.Context, p *ServerReport) error
	// Presence reads the servers and workers seen since Since.
	Presence(ctx context.Context, p *PresenceParams) (*Presence, error)
	// Activity reads the activity minutes at or after Since, oldest
	// first; minutes with nothing reported are left out.
	Activity(ctx context.Context, p *ActivityParams) ([]*ActivityMinute, error)

	// Get reads one execution. Tenant "" reads any tenant's.
	Get(ctx context.Context, p *GetParams) (*Execution, error)

	// Explain answers why an execution is not running (explain.go): every
	// gate that holds it back at Now, decided by ExplainFacts.Decide from
	// facts read in a handful of indexed reads however many executions
	// the store holds (a concurrency key's holders from its running
	// executions, the tenants ahead from the turn order Claim keeps, live
	// workers from presence). It reads only. ErrNotFound for a missing
	// execution or another tenant's.
	Explain(ctx context.Context, p *ExplainParams) (*Explanation, error)
	// ReadyKinds lists the tenants and kinds with an execution ready at Now
	// (queued, or scheduled and due; a disabled tenant's too), by tenant
	// then kind, at most MaxReadyKinds: one index probe per pair, never a
	// read of the executions themselves. The console's overview warns of
	// ready work of a kind no live worker claims.
	ReadyKinds(ctx context.Context, p *ReadyKindsParams) ([]*ReadyKind, error)

	// List reads executions newest first, filtered, one page at a time.
	List(ctx context.Context, p *ListParams) (*ListResult, error)

	// PutSchedule creates the tenant's schedule (Created) or replaces its
	// settings, atomically. A replace that keeps the timing (SameTiming) of
	// a schedule that was and stays enabled keeps its stored NextRunAt, so a
	// deploy re-applying unchanged schedules never moves or loses a tick;
	// otherwise NextRunAt becomes the one given. LastRunAt, LastExecutionID
	// and CreatedAt survive a replace. ErrNotFound for an unknown tenant;
	// ErrInvalid when ValidateSchedule refuses it; ErrScheduleLimit when it
	// would create one more schedule than MaxSchedules.
	PutSchedule(ctx context.Context, p *PutScheduleParams) (*PutScheduleResult, error)
	// GetSchedule reads one schedule; ErrNotFound if the tenant has none of
	// that name.
	GetSchedule(ctx context.Context, p *GetScheduleParams) (*Schedule, error)
	// ListSchedules reads schedules ordered by tenant then name, or, with
	// DueBy, the due ones earliest first, leaving out those of disabled
	// tenants (they do not tick).
	ListSchedules(ctx context.Context, p *ListSchedulesParams) ([]*Schedule, error)
	// SetScheduleEnabled pauses (Enabled false) or resumes a schedule in
	// one step, every other setting left as it is. Resuming a paused
	// schedule sets its NextRunAt to the one given (its first tick after
	// Now), but only while its timing is still the one NextRunAt was
	// computed from (SetScheduleEnabledParams.Cron, Every, Timezone; else
	// it changes nothing and answers it still paused); pausing a paused
	// one or resuming an enabled one changes nothing. UpdatedAt becomes Now when it changes. ErrNotFound if the
	// tenant has no schedule of that name.
	SetScheduleEnabled(ctx context.Context, p *SetScheduleEnabledParams) (*Schedule, error)
	// DeleteSchedule removes a schedule. Executions it fired stay as they
	// are. ErrNotFound if there is none.
	DeleteSchedule(ctx context.Context, p *DeleteScheduleParams) error
	// FireSchedule fires one tick of a schedule in one atomic step (I6):
	//
	//  1. A regular fire (not Trigger) checks that the schedule is enabled,
	//     its NextRunAt equals Expected and its tenant is not Disabled; if
	//     not, it returns an empty result and changes nothing (a disabled
	//     tenant's tick stays due: its catch-up policy applies once the
	//     tenant is enabled again). With Drop it then only sets NextRunAt
	//     to Next.
	//  2. If the tick's dedup key (FireScheduleParams.DedupKey: the regular
	//     tick's, a keyed trigger's, none for a trigger without a key) maps
	//     to an execution, that execution is the tick's (Deduplicated),
	//     whatever its content.
	//  3. Else, with overlap skip, if an execution of this schedule (of this
	//     tenant) is not terminal, the tick is recorded as a skipped
	//     execution (NewSkippedExecution) under the tick's dedup key.
	//  4. Else the tick is admitted as Admit would admit TickSubmission(s,
	//     p.DedupKey()): under the tenant's quota, storage budget and dedup
	//     TTL. ErrQuotaExceeded or ErrStorageExceeded leaves everything
	//     unchanged (the tick stays due).
	//  5. LastRunAt and LastExecutionID become the tick's, unless Tick is
	//     before the stored LastRunAt (a late fire never moves them back);
	//     a regular fire sets NextRunAt to Next (Advanced).
	//
	// ErrNotFound if the schedule does not exist.
	FireSchedule(ctx context.Context, p *FireScheduleParams) (*FireScheduleResult, error)

	// PutRateLimit creates or replaces the tenant's limit for a rate key; a
	// replace keeps the bucket's TAT. ErrNotFound for an unknown tenant;
	// ErrInvalid when RateLimit.Validate refuses it.
	PutRateLimit(ctx context.Context, p *PutRateLimitParams) (*RateLimit, error)
	// GetRateLimit reads one limit; ErrNotFound if none.
	GetRateLimit(ctx context.Context, p *GetRateLimitParams) (*RateLimit, error)
	// ListRateLimits reads limits ordered by tenant then key.
	ListRateLimits(ctx context.Context, p *ListRateLimitsParams) ([]*RateLimit, error)
	// ConcurrencyKeys reads the concurrency keys with a running
	// execution, ordered by tenant then key.
	ConcurrencyKeys(ctx context.Context, p *ConcurrencyKeysParams) ([]*ConcurrencyKeyUse, error)
	// DeleteRateLimit removes a limit: executions with its key then start
	// freely. ErrNotFound if none.
	DeleteRateLimit(ctx context.Context, p *DeleteRateLimitParams) error

	CreateTenant(ctx context.Context, p *CreateTenantParams) (*Tenant, error)
	GetTenant(ctx context.Context, p *GetTenantParams) (*Tenant, error)
	// ListTenants reads tenants in name order, one page at a time: those
	// named after After ("" = from the first), at most Limit.
	ListTenants(ctx context.Context, p *ListTenantsParams) ([]*Tenant, error)
	// UpdateTenant changes the given settings; ErrNotFound for an unknown
	// tenant.
	UpdateTenant(ctx context.Context, p *UpdateTenantParams) (*Tenant, error)
	// DeleteTenant removes a tenant and everything it owns in one atomic
	// step: its keys, schedules, rate limits, events, subscriptions,
	// executions (with their quota
	// slots, concurrency-key counts and queue entries), dedup keys, and its
	// workers and activity minutes.
	// ErrNotTerminal while an execution of the tenant is in flight
	// (scheduled, queued, running or suspended), unless Force: then those go too, and
	// a worker holding a lease on one gets ErrLeaseLost from then on.
	// ErrNotFound for an unknown tenant.
	DeleteTenant(ctx context.Context, p *DeleteTenantParams) error

	// AddAPIKey stores another key hash for a tenant, under KeyID.
	AddAPIKey(ctx context.Context, p *AddAPIKeyParams) error
	// LookupAPIKey resolves a key hash; ErrNotFound if unknown. Every
	// request reads it: it is one read, with the tenant's Disabled flag.
	LookupAPIKey(ctx context.Context, p *LookupAPIKeyParams) (*APIKey, error)
	// ListAPIKeys lists a tenant's keys, oldest first, without their
	// hashes. ErrNotFound for an unknown tenant.
	ListAPIKeys(ctx context.Context, p *ListAPIKeysParams) ([]*APIKeyInfo, error)
	// DeleteAPIKey removes one of a tenant's keys: from the moment it
	// returns, LookupAPIKey of its hash answers ErrNotFound in every
	// process. ErrNotFound if the tenant has no key KeyID.
	DeleteAPIKey(ctx context.Context, p *DeleteAPIKeyParams) error
	// TouchAPIKey records that a key was used at Now: its LastUsedAt
	// becomes Now, but only if it is unset or at least Every older, so a
	// burst of touches writes once. A key that is gone is no error.
	TouchAPIKey(ctx context.Context, p *TouchAPIKeyParams) error
	// EnsureAdminKey stores KeyHash as the admin key if no admin key exists
	// yet, atomically. Created reports whether this call stored it.
	EnsureAdminKey(ctx context.Context, p *EnsureAdminKeyParams) (*EnsureAdminKeyResult, error)

	// CreateSession stores a console session: the hash of its secret id,
	// the hash of the key it was opened with and when it expires.
	CreateSession(ctx context.Context, p *CreateSessionParams) error
	// GetSession reads a session; ErrNotFound if there is none or it
	// expired by Now. Prune removes expired sessions.
	GetSession(ctx context.Context, p *GetSessionParams) (*Session, error)
	// DeleteSession ends a session at once in every process; a missing one
	// is no error.
	DeleteSession(ctx context.Context, p *DeleteSessionParams) error

	// Ping checks that the backend answers.
	Ping(ctx context.Context) error
	// Close releases the backend's resources.
	Close() error
}

// Notifier is an optional capability: a backend that can tell when
// executions changed (a submit, a finish) lets workers and waiters wake at
// once instead of polling. Changed returns a channel that is closed at the
// next change after the call. Callers still poll as a fallback.
type Notifier interface {
	Changed() <-chan struct{}
}

// ClaimRider is an optional capability of a backend whose submissions can
// carry a claim. A worker that found nothing to claim parks one with
// RideClaim while it waits for a wake-up; the next submission through the
// same Store that commits with others in one transaction (a group commit)
// runs the claim in that transaction, after the submission, so work
// submitted in this process is leased in the commit that creates it rather
// than in a commit of its own. The claim is a Claim of p in every respect
// but its time, which is now() when it runs; the call is in progress, for
// the contract, from RideClaim until Stop returns. RideClaim returns nil
// when the backend cannot carry claims (a wrapper of a store without the
// capability): the caller then only waits.
type ClaimRider interface {
	RideClaim(p *ClaimParams, now func() time.Time) Ride
}

// Ride is a claim parked by ClaimRider.RideClaim.
type Ride interface {
	// Ran is closed once the claim has run, or will no longer run.
	Ran() <-chan struct{}
	// Stop withdraws the claim if it has not run, waits for it if it is
	// running, and returns what it leased: nil (and no error) when it
	// never ran, leased nothing or left the decision to an ordinary Claim
	// (a candidate with a limit), in which case the caller claims as
	// usual. The leases are the caller's as a Claim's are. Call it once.
	Stop(ctx context.Context) (*ClaimResult, error)
}

// DurabilityChecker is an optional capability of a backend whose durability
// depends on how its server is configured (Redis persistence). `latch serve`
// logs the warning at start-up, so an operator learns before a crash, not
// after it, that acknowledged executions can be lost.
type DurabilityChecker interface {
	// CheckDurability returns "" when every acknowledged change survives a
	// crash of the server process, else a sentence saying what a restart
	// or crash can lose.
	CheckDurability(ctx context.Context) (warning string, err error)
}

// Defaults applied by Admit to zero fields.
const (
	DefaultQueue            = "default"
	DefaultMaxAttempts      = 3
	DefaultTimeoutSeconds   = 300
	DefaultConcurrencyLimit = 1
)

// Submission is one execution to admit. Its ConcurrencyKey, like its
// DedupKey, is scoped to the tenant it is admitted for (see Execution).
type Submission struct {
	// ID is the new execution's id; empty lets the backend generate a
	// time-ordered UUIDv7.
	ID       string
	Kind     string
	Queue    string // "" = DefaultQueue
	Priority int
	// Payload is canonical JSON (see CanonicalJSON); dedup compares it
	// byte for byte. nil means {}.
	Payload  json.RawMessage
	DedupKey string
	// RunAt: zero or not after Now means queued now; later means scheduled.
	RunAt            time.Time
	MaxAttempts      int // 0 = DefaultMaxAttempts
	TimeoutSeconds   int // 0 = DefaultTimeoutSeconds
	ConcurrencyKey   string
	ConcurrencyLimit int // 0 = DefaultConcurrencyLimit when ConcurrencyKey is set
	RateKey          string
	Schedule         string
	// TraceParent is the W3C traceparent of the submitting request ("" =
	// none), kept with the execution and handed to each of its leases.
	TraceParent string
}

// AdmitParams are the arguments of Store.Admit.
type AdmitParams struct {
	Tenant string
	Items  []Submission
	Now    time.Time
}

// AdmitResult holds one Admitted per item, in order.
type AdmitResult struct {
	Items []Admitted
}

// Admitted is the outcome of one Submission. Exactly one of Execution and
// Err is set. Deduplicated is true when the dedup key mapped to an existing
// execution, which is returned as it is now, with this hit counted in its
// DedupHits and LastDedupHitAt (Now). Err wraps ErrQuotaExceeded,
// ErrDedupKeyReused or ErrInvalid.
type Admitted struct {
	Execution    *Execution
	Deduplicated bool
	Err          error
}

// ClaimParams are the arguments of Store.Claim.
type ClaimParams struct {
	WorkerID      string
	Tenant        string   // "" = every tenant
	Queues        []string // empty = every queue
	Kinds         []string // empty = every kind
	Max           int      // at least 1
	LeaseDuration time.Duration
	Now           time.Time

	// ExcludeTenants are tenants the claim must not lease to (a worker
	// whose share of slots they have used up: engine.WorkerConfig.
	// TenantSlots). An excluded tenant is passed in the turn walk as if it
	// had no work: none of its executions is read, leased or changed, and
	// its turn stays where it is. At most MaxExcludeTenants, else
	// ErrInvalid (ValidateExclude).
	ExcludeTenants []string
}

// ClaimResult lists the leases handed out, possibly none. RetryAt, when
// set, is the earliest RunAt this claim gave an execution it deferred for
// its rate limit: a worker with nothing to do claims again then rather than
// at its next poll.
type ClaimResult struct {
	Leases  []Lease
	RetryAt time.Time
	// Deferred counts the executions this claim deferred for their rate
	// limit (each made scheduled at its bucket's next free start).
	Deferred int
}

// HeartbeatParams are the arguments of Store.Heartbeat.
type HeartbeatParams struct {
	ExecutionID   string
	Tenant        string // "" = any tenant
	Token         string
	LeaseDuration time.Duration
	Now           time.Time
}

// HeartbeatResult tells the worker its new deadline and whether to stop.
type HeartbeatResult struct {
	ExpiresAt       time.Time
	CancelRequested bool
}

// CompleteParams are the arguments of Store.Complete.
type CompleteParams struct {
	ExecutionID string
	Tenant      string
	Token       string
	Result      json.RawMessage // nil = null
	Now         time.Time
}

// FailParams are the arguments of Store.Fail.
type FailParams struct {
	ExecutionID string
	Tenant      string
	Token       string
	Error       string
	Retry       bool
	RetryDelay  time.Duration
	Now         time.Time
}

// ReleaseParams are the arguments of Store.Release.
type ReleaseParams struct {
	ExecutionID string
	Tenant      string
	Token       string
	// Unstarted says the attempt's handler never ran (the lease came back
	// from a claim made as its worker stopped): its start is given back,
	// so Attempt is what it was before the claim (and a resume stays a
	// resume).
	Unstarted bool
	Now       time.Time
}

// CancelParams are the arguments of Store.Cancel.
type CancelParams struct {
	Tenant string // "" = any tenant
	ID     string
	Now    time.Time
}

// DeleteParams are the arguments of Store.Delete.
type DeleteParams struct {
	Tenant string // "" = any tenant
	ID     string
	Force  bool
	Now    time.Time
}

// RescueParams are the arguments of Store.Rescue.
type RescueParams struct {
	Now   time.Time
	Limit int // at most this many per call; 0 = 1000
}

// RescueResult counts what Rescue did with expired leases.
type RescueResult struct {
	Requeued, Failed, Cancelled int
}

// PromoteParams are the arguments of Store.Promote.
type PromoteParams struct {
	Now   time.Time
	Limit int // 0 = 1000
}

// PromoteResult counts promoted executions.
type PromoteResult struct {
	Promoted int
}

// PruneParams are the arguments of Store.Prune.
type PruneParams struct {
	Now   time.Time
	Limit int // at most this many executions per call; 0 = 1000
}

// PruneResult counts what Prune removed.
type PruneResult struct {
	Executions int
	DedupKeys  int
}

// GetParams are the arguments of Store.Get.
type GetParams struct {
	Tenant string // "" = any tenant
	ID     string
}

// ListParams filter and page Store.List. Empty filters match everything.
type ListParams struct {
	Tenant   string // "" = every tenant
	Status   Status
	Kind     string
	Queue    string
	DedupKey string
	Schedule string
	// ParentID lists the children of one execution, in spawn order (not
	// newest first); with it, After is a child's id from a previous page.
	ParentID string
	// IDPrefix lists the executions whose id starts with it: at least
	// MinIDPrefix characters of an id's canonical form (lower-case hex,
	// dashes in their places), else ErrInvalid; not with ParentID. Every
	// backend reads it as a range of its id index (IDPrefixRange), so it
	// examines only ids in that range.
	IDPrefix string
	Limit    int    // 1..500; 0 = 50
	After    string // an execution id from a previous page's Next; "" = first page
	// MaxBytes bounds a page by the bytes of its items' payloads and
	// results: the page ends after the item that reaches it (so a page it
	// cuts holds at least that item) and Next is set. 0 = no bound.
	MaxBytes int
	// Scan bounds the work of one call (0 = DefaultListScan). A List whose
	// filters the backend answers by examining executions one by one
	// examines at most Scan of them, newest first from After. When it
	// stops there before the page is full, it returns the matches found
	// (possibly none) and sets Next to the id of the last execution
	// examined, so that paging on continues right after it. Paging through
	// Next still visits every match exactly once, newest first, and a page
	// never holds more than Limit. A filter the backend serves from an
	// index that holds only matches may ignore Scan (see ListIndexer): one
	// tenant's dedup key, or schedule, with no other filter, answers in one
	// call in SQLite and PostgreSQL.
	Scan int
}

// ListIndexer is implemented by a Store whose List serves some filters
// from an index that holds only matches (or is bounded otherwise, like a
// tenant's executions in flight), and so may ignore ListParams.Scan.
type ListIndexer interface {
	// ListIndexed reports whether List serves p's filters so.
	ListIndexed(p *ListParams) bool
}

// ListResult is one page, newest first. Next is the After of the next page,
// "" when this is the last. A page may hold fewer than Limit items, even
// none, while Next is set (MaxBytes, Scan): only an empty Next ends the
// paging.
type ListResult struct {
	Items []*Execution
	Next  string
}

// CreateTenantParams are the arguments of Store.CreateTenant. Zero settings
// take the package defaults.
type CreateTenantParams struct {
	Name        string
	MaxInflight int
	DedupTTL    time.Duration
	Retention   time.Duration
	// MaxStoredBytes is the storage budget (0 = DefaultMaxStoredBytes).
	MaxStoredBytes int64
	// EventRetention keeps its events (0 = DefaultEventRetention).
	EventRetention time.Duration
	KeyHash        string // the first API key, hashed; "" creates the tenant without a key
	KeyID          string // the first key's public id (with KeyHash)
	Now            time.Time
}

// GetTenantParams are the arguments of Store.GetTenant.
type GetTenantParams struct {
	Name string
}

// ListTenantsParams page Store.ListTenants.
type ListTenantsParams struct {
	After string // a tenant name; "" = the first page
	Limit int    // 1..MaxTenantsPage; 0 = DefaultTenantsPage
}

// Page sizes of ListTenants.
const (
	DefaultTenantsPage = 100
	MaxTenantsPage     = 1000
)

// PageLimit is p.Limit with its default and bound applied.
func (p *ListTenantsParams) PageLimit() int {
	switch {
	case p.Limit <= 0:
		return DefaultTenantsPage
	case p.Limit > MaxTenantsPage:
		return MaxTenantsPage
	}
	return p.Limit
}

// UpdateTenantParams change the non-nil settings.
type UpdateTenantParams struct {
	Name        string
	MaxInflight *int
	DedupTTL    *time.Duration
	Retention   *time.Duration
	Disabled    *bool
	// MaxStoredBytes below the tenant's StoredBytes refuses what adds
	// bytes until enough are released; nothing is removed.
	MaxStoredBytes *int64
	// EventRetention applies to events published from then on; an event
	// already kept keeps its ExpiresAt.
	EventRetention *time.Duration
}

// DeleteTenantParams are the arguments of Store.DeleteTenant.
type DeleteTenantParams struct {
	Name  string
	Force bool
	Now   time.Time
}

// AddAPIKeyParams are the arguments of Store.AddAPIKey.
type AddAPIKeyParams struct {
	Tenant  string
	KeyHash string
	KeyID   string // public, not derived from the key: safe to show
	Now     time.Time
}

// LookupAPIKeyParams are the arguments of Store.LookupAPIKey.
type LookupAPIKeyParams struct {
	KeyHash string
}

// APIKey is what a key hash resolves to: the admin, or one tenant.
// TenantDisabled is the tenant's Disabled flag, read with the key.
type APIKey struct {
	Admin          bool
	Tenant         string
	KeyID          string
	TenantDisabled bool
	LastUsedAt     time.Time // zero if never recorded
}

// ListAPIKeysParams are the arguments of Store.ListAPIKeys.
type ListAPIKeysParams struct {
	Tenant string
}

// APIKeyInfo is one key of a tenant as listed: never its hash.
type APIKeyInfo struct {
	KeyID      string
	CreatedAt  time.Time
	LastUsedAt time.Time // zero if never recorded
}

// DeleteAPIKeyParams are the arguments of Store.DeleteAPIKey.
type DeleteAPIKeyParams struct {
	Tenant string
	KeyID  string
}

// TouchAPIKeyParams are the arguments of Store.TouchAPIKey.
type TouchAPIKeyParams struct {
	KeyHash string
	Every   time.Duration
	Now     time.Time
}

// CreateSessionParams are the arguments of Store.CreateSession. IDHash is
// a hash of the session's secret id, so the store (or a backup of it)
// holds nothing a cookie can be made of.
type CreateSessionParams struct {
	IDHash    string
	KeyHash   string
	ExpiresAt time.Time
	Now       time.Time
}

// GetSessionParams are the arguments of Store.GetSession.
type GetSessionParams struct {
	IDHash string
	Now    time.Time
}

// Session is a stored console session.
type Session struct {
	KeyHash   string
	ExpiresAt time.Time
}

// DeleteSessionParams are the arguments of Store.DeleteSession.
type DeleteSessionParams struct {
	IDHash string
}

// EnsureAdminKeyParams are the arguments of Store.EnsureAdminKey.
type EnsureAdminKeyParams struct {
	KeyHash string
	Now     time.Time
}

// EnsureAdminKeyResult reports whether the key was stored by this call.
type EnsureAdminKeyResult struct {
	Created bool
}
