// Package engine runs latch's background loops on top of any store.Store:
// the worker pool (claim, heartbeat, run a handler, record the outcome), the
// rescuer (recover expired leases, promote due scheduled executions) and the
// pruner (apply retention). It holds no locks over the store and no business
// state of its own: every transition below is one atomic store operation, and
// the store's lease token fences every write a worker makes.
//
// # Lifecycle
//
// Every loop is a Service: Start returns once the loop runs, Stop is
// idempotent. Stop has two levels. Soft: take no new work and let running
// work finish. Hard, when the context given to Stop is done: cancel what is
// still running. A Worker's handlers see the hard level as their context
// being cancelled with cause ErrShutdown; the worker then gives their leases
// back with store.Release so another worker takes them at once. Group starts
// and stops several services as one.
//
// # Executions, leases and fencing
//
//	    Admit                       Admit
//	(run_at later)                  (now)
//	      │                           │
//	      ▼         run_at due        ▼
//	  scheduled ───────────────────▶ queued ◀───────────────────┐
//	   │     ▲    (Promote or Claim)  │                         │ Release: runs again
//	   │     │                        │ Claim: attempt+1,       │ Rescue: lease expired,
//	   │     │                        │ new lease token         │         attempts left
//	   │     │                        ▼                         │
//	   │     └──── Fail(retry) ───── running ───────────────────┘
//	   │        attempts left,        │ │ │
//	   │        wait RetryDelay       │ │ └─ Complete ─────────────────────────▶ succeeded
//	   │                              │ └─── Fail without retry or attempts
//	   │                              │      spent; Rescue, attempts spent ─────▶ failed
//	   │                              └───── Fail, Release or Rescue after
//	   │                                     a cancel was requested ────────────▶ cancelled
//	   └─ Cancel (scheduled or queued: at once) ────────────────────────────────▶ cancelled
//
// Cancel on a running execution only records CancelRequested; the worker
// learns it from its next heartbeat, cancels the handler and ends the attempt.
//
// A Claim hands the worker a lease: a token valid for that attempt only, and
// an expiry. While the handler runs the worker heartbeats every
// HeartbeatInterval, extending the expiry and learning whether a cancel was
// requested. Heartbeat, Complete, Fail and Release change state only with the
// current token (invariant I5); any other token gets store.ErrLeaseLost and
// changes nothing. A token stops being current when the attempt ends (by this
// worker or by Rescue after the lease expired), when the execution is force
// deleted, or when it is released. A worker that gets ErrLeaseLost cancels the
// handler with cause ErrLeaseLost and writes nothing more for that attempt:
// someone else now owns the execution.
//
// # A tenant's share of the slots
//
// A worker holds each tenant to its share of its slots
// (WorkerConfig.TenantSlots): below it a tenant takes any free slot; at it
// the tenant may borrow free slots but never the last. The rule is applied
// before the claim, not after: while only the last slot is free, the
// tenants at their share are named in the claim's
// store.ClaimParams.ExcludeTenants, and the store passes them in its turn
// walk, so their waiting work is not leased, its order, runs, run_at and
// rate tokens untouched. A lease the share refuses after all (one claim
// brought more of a tenant than it may start) is released unstarted.
//
// # What the worker writes after a handler returns
//
// The first row that applies decides:
//
//	lease lost (heartbeat said so)         nothing
//	cancel requested (cause ErrCancelled)  Fail, no retry (the store makes it cancelled)
//	hard shutdown (cause ErrShutdown)      Complete if the handler returned nil, else Release
//	nil error                              Complete with the result
//	timeout (cause ErrTimeout)             Fail with retry and backoff
//	Permanent(err)                         Fail, no retry
//	any other error, or a panic            Fail with retry after backoff.Delay(attempt),
//	                                       or the delay given with RetryAfter
//
// These writes use a context that is not cancelled with the handler's
// (context.WithoutCancel) and whose deadline is the lease's expiry (at least
// one second), so a shutdown never drops a result and a stale worker never
// writes past its lease. Whether attempts remain is the store's decision.
//
// # Hooks
//
// The loops know no metrics system: they report to plain functions in
// their configuration, which the binary wires to its collectors.
// WorkerConfig.OnClaim hears each claim's count of leases and
// WorkerConfig.OnRun each attempt's Run (its Outcome, by what was written,
// and its handler's run time); RescuerConfig.OnRescue hears each pass's
// rescues; SchedulerConfig.OnFire each tick fired or dropped.
//
// # Server reports
//
// A Reporter writes what its server did to the store every
// store.ReportEvery (store.ServerReport): that it is alive, the workers that
// claimed through it, the runs started and failed by tenant and minute. It
// counts from the store calls themselves (Reporter.Observe on a
// storewrap.Wrap'ped store), so in-process and HTTP workers count alike; a
// report the store refuses keeps its counts for the next. A worker the
// store was not told of yet is reported within ReporterConfig.Prompt (1 s)
// instead of at the next interval; every other claim only updates memory.
package engine
