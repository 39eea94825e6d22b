// Package storetest is the conformance suite every store backend runs.
//
// A backend's own test is a few lines:
//
//	func TestStore(t *testing.T) {
//		t.Run("sqlite", func(t *testing.T) {
//			storetest.Run(t, func(t *testing.T) store.Store {
//				s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "latch.db"))
//				if err != nil {
//					t.Fatal(err)
//				}
//				t.Cleanup(func() { s.Close() })
//				return s
//			})
//		})
//	}
//
// so that test names carry the backend: TestStore/sqlite/Admit/QueuedWithDefaults.
//
// Every test asks newStore for a fresh, empty store of its own and runs with
// t.Parallel. Time is a fake clock: every call passes an explicit Now (a base
// time years ahead of the wall clock plus an offset), so leases, backoff, dedup
// TTLs and retention are driven without a single sleep, and a backend that
// reads the wall clock instead of Now fails. The concurrency tests use real
// goroutines and are meant to run under the race detector.
//
// The suite checks the behaviour documented on store.Store and the invariants
// of docs/design.md that a store alone decides:
//
//	I1 dedup       Dedup/*, Admit/Batch*, AdmitRoutes/*, Concurrency/AdmitSameKey*,
//	               Concurrency/AdmitOverlappingBatches, Concurrency/ForceDeleteVsResubmit
//	I2 queue       Claim/*, ClaimFilters/*, ClaimBacklog/*, Concurrency/ClaimRaceHandsOutEachAttemptOnce,
//	               Concurrency/CancelVsClaim, Concurrency/MixedWorkload
//	I3 quota       CheckInflight at the end of nearly every test, Admit/Quota*, AdmitRoutes/Quota/*,
//	               Concurrency/QuotaRaceAtLimit, Concurrency/MixedWorkload
//	I4 concurrency ConcurrencyKey/*
//	I5 fencing     Fencing/*, Delete/ForceRemovesRunningAndFencesWorker,
//	               Concurrency/WorkerVsRescue, Concurrency/ForceDeleteVsWorker
//	I6 schedules   Schedule/* (Schedule/Concurrency/* races servers over one tick)
//	I7 rate        RateLimit/* (RateLimit/WindowBoundUnderConcurrentClaims checks
//	               every window of concurrent starts)
//	I8 durability  RunReopen, for backends whose database can be reopened
//	I9 liveness    Rescue/*, Concurrency/AdmitSameKeyAllSubmittersDie
//	I10 journal    Flow/* (Flow/RecordStep*, Flow/JournalTravelsWithEveryLease,
//	               Flow/RetryKeepsJournal), FlowRace/ConcurrentRecordsOfOneStepOneWins
//	I11 signals    FlowSignal/*, FlowRace/* (a signal against the wait's timeout, against
//	               the suspend itself, and many identical signals at once)
//	flow bounds    FlowBounds/* (store.MaxSteps, store.MaxBufferedSignals and the keys
//	               they bound, exactly and under concurrent records and signals)
//	journal bytes  Journal/* (store.MaxJournalBytes in every operation that records a
//	               step, under concurrent records; pages of Steps; the bounded journal
//	               a lease carries, store.ClaimJournalBytes)
//	storage        Storage/* (a tenant's storage budget, store/storage.go: what counts,
//	               refusals that write nothing, releases, and the count exact under
//	               32 concurrent writers of each kind at the bound); CheckStorage,
//	               called by CheckInflight, checks the counter after nearly every test
//	I12 fairness   Fairness/* (one claim alone; claims of many workers at once
//	               stay fair only as far as store.Store.Claim promises)
//	explain        Explain/* (each gate of store.Store.Explain held in turn and
//	               answered with its figures, as Claim then decides; a read that
//	               changes nothing)
//	I13 children   Children/* (spawn all or nothing and once per step, bounds, List by
//	               ParentID in spawn order; fan-in waits and every child's end waking
//	               them; a parent's end cascading to its family; Prune and
//	               DeleteTenant of families), Children/Race/* (one set of ids under 16
//	               racing spawns, a child's end against the suspend, 100 children
//	               ending at once, claims racing a parent's end)
//	I14 events     Events/* (Publish and its idempotency key, waits for an event matched
//	               by name, key and since, each event consumed once per execution and
//	               oldest first; timeouts, retention, the storage budget, subscriptions
//	               and their starts, DeleteTenant), Events/Race/* (a publish against the
//	               suspend, one idempotency key from 16 goroutines, 100 waiters and
//	               concurrent publishes)
//
// The optional store.Notifier capability is checked under Notifier/*; a
// backend without it skips those tests and says so.
//
// Conventions a backend may rely on: tenant names are "acme" and "globex",
// API key hashes start with "hash-", payloads are canonical JSON
// (store.CanonicalJSON), and every Now lies on a whole millisecond.
package storetest

import (
	"testing"

	"github.com/latch-run/latch/store"
)

// NewStore returns a fresh, empty store that no other test uses, and arranges
// (with t.Cleanup) for it to be closed when t ends.
type NewStore func(t *testing.T) store.Store

// Run runs the whole conformance suite against the stores newStore returns.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Helper()
	ns := NewStore(newStore)
	families := []struct {
		name string
		run  func(*testing.T, NewStore)
	}{
		{"Admit", testAdmit},
		{"AdmitRoutes", testAdmitRoutes},
		{"Dedup", testDedup},
		{"Claim", testClaim},
		{"ClaimFilters", testClaimFilters},
		{"ClaimBacklog", testClaimBacklog},
		{"ClaimExclude", testClaimExclude},
		{"Fairness", testFairness},
		{"ConcurrencyKey", testConcurrencyKey},
		{"Schedule", testSchedule},
		{"RateLimit", testRateLimit},
		{"Lease", testLease},
		{"Fencing", testFencing},
		{"Cancel", testCancel},
		{"Delete", testDelete},
		{"Rescue", testRescue},
		{"Promote", testPromote},
		{"Prune", testPrune},
		{"Get", testGet},
		{"List", testList},
		{"Tenant", testTenant},
		{"Errors", testErrors},
		{"Notifier", testNotifier},
		{"Concurrency", testConcurrency},
		{"Flow", testFlow},
		{"FlowSignal", testFlowSignal},
		{"FlowRace", testFlowRace},
		{"FlowBounds", testFlowBounds},
		{"Journal", testJournal},
		{"Runs", testRuns},
		{"Observe", testObserve},
		{"TenantList", testTenantList},
		{"SchedulePause", testSchedulePause},
		{"Storage", testStorage},
		{"Explain", testExplain},
		{"ReadyKinds", testReadyKinds},
		{"Children", testChildren},
		{"Events", testEvents},
	}
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			f.run(t, ns)
		})
	}
}
