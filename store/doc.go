// Package store is the contract between latch's engine and API and the
// databases that hold its state.
//
// A Store speaks in business operations — Admit, Claim, Heartbeat, Complete,
// Fail, Cancel, Delete, Rescue, Prune, FireSchedule, the flow operations
// (RecordStep, Suspend, Signal, Wake, Retry), plus reads and the
// tenant, schedule and rate-limit records — and
// every operation that changes state is atomic: one SQL transaction or one
// Lua script. No caller ever checks in one call and acts in another; the
// check-then-act races latch exists to end (a dedup pre-claim written apart
// from the row it guards, a "nothing is running" check apart from the insert
// of the run) cannot happen because there is no window between check and act.
//
// Every backend must pass the conformance suite in package storetest with the
// race detector on. The invariants it checks are those of docs/design.md:
//
//	I1 dedup      a live (tenant, dedup_key) maps to exactly one execution.
//	I2 queue      each queued execution has one queue entry; an attempt starts once.
//	I3 quota      Tenant.Inflight == count of queued+scheduled+running+suspended, never above
//	              MaxInflight through admission, never leaked by any exit path.
//	I4 concurrency running executions of a tenant with one concurrency key never
//	              exceed its limit (decided inside Claim).
//	I5 fencing    Heartbeat, Complete and Fail change state only with the current
//	              lease token.
//	I6 schedules  one execution per (schedule, tick); with overlap skip or queue,
//	              never two of a schedule's executions running.
//	I7 rate       starts per (tenant, rate key) over any window W stay within
//	              Burst + Rate·W/Per (the bucket is taken inside Claim).
//	I8 durability an operation that returned nil is committed.
//	I9 liveness   an execution whose worker died is claimable again after its lease
//	              expires and Rescue runs.
//	I10 journal   a flow step is recorded at most once per execution (first record
//	              wins, fenced like Complete); every later lease carries every step
//	              recorded before it.
//	I11 signals   each signal is consumed by at most one wait, in arrival order per
//	              name; a wait ends exactly once (signal or timeout); a signal sent to
//	              a non-terminal execution is never lost; a suspended execution holds
//	              quota but no lease and no concurrency slot.
//	I12 fairness  across tenants with ready work, claims take turns: one tenant's
//	              backlog holds back another tenant's next start by one round of
//	              claims at most.
//	I13 children  a spawn admits its children once per (parent, step), all or
//	              none; a fan-in wait resumes its parent exactly once, and a child
//	              ending while its parent suspends never loses that wake-up; no
//	              child spawned with on_parent_end cancel is claimed after its
//	              parent's end answered (children.go).
//	I14 events    a publish records its event, resumes the waits it matches and
//	              starts its subscriptions in one step; each (event,
//	              subscription) starts one execution however often the publish
//	              is retried with its idempotency key; each execution consumes
//	              each event at most once; a wait never misses an event
//	              published at or after its since while it is kept; events never
//	              cross tenants (events.go).
//
// The package imports only the standard library so that backends, the engine
// and the API can all depend on it without cycles.
package store
