// Package soak is latch's soak test: sustained, steady, mixed load on one
// store for a configurable time, watched from outside the store, then
// checked against the invariants of docs/design.md. `latch prove` runs it from
// the command line; its tests run a short one on every backend.
//
// # The load
//
// Run creates a tenant of its own and submits Config.Rate executions per
// second, paced by the clock (not as fast as the store allows), from
// Config.Clients concurrent submitters. Every 100 submits follow one plan
// (plan.go):
//
//	10  resubmit an earlier submission's dedup key, kind and payload: the
//	    answer must be that execution, deduplicated (I1)
//	10  carry the rate key, in groups of 5, under a limit of twice their
//	    average rate with burst 2: every group is held back by the bucket (I7)
//	10  carry the concurrency key (limit 2), in groups of 5 (I4)
//	 5  are cancelled 0-300ms after they are acknowledged, while queued or
//	    running
//	 5  fail their first attempt and succeed on the retry
//	60  plain: succeed at once (half of them without a dedup key)
//
// Two schedules of the tenant tick meanwhile: every 1s with overlap skip
// and every 2s with overlap queue, each running a job of 0.3-1.6s, so the
// skip schedule often finds its previous run still going (I6).
//
// Two engine.Workers share Config.Workers slots, with an engine.Scheduler
// and an engine.Rescuer: what `latch serve` runs. Their handler is the
// witness: it records every start of every (execution, attempt) in a
// journal on disk, and counts what runs at once per concurrency key and per
// schedule. The journal is a file, not memory, so that the soak's own
// bookkeeping does not grow the heap whose growth it checks.
//
// Every Config.ReportEvery, Run writes a line: the submits per second, the
// p50/p99 of submit latency and of submit-to-start latency over the
// interval, the heap, the goroutines, the open file descriptors and the
// tenant's inflight count.
//
// # The end and the checks
//
// At the end Run stops submitting, stops the scheduler, waits (at most
// Config.DrainTimeout) until nothing of the tenant is scheduled, queued or
// running, stops the workers and the rescuer, and checks. Every breach is
// reported, not only the first; Result.Checks lists each check with its
// figures. The rules are in checks.go and growth.go, and docs/soak.md.
package soak
