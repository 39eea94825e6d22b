package store

import "time"

// Attempt history (docs/api.md, "Attempts"): every run of an execution —
// each lease from a claim to its end — is recorded by the operations that
// start and end it, in the same atomic step: Claim adds the run, and
// Complete, Fail, Release, Suspend and Rescue end it with its outcome. It
// is never a second write, so the history can neither miss a run nor show
// one that did not happen. The history goes with its execution.

// RunOutcome is how one run ended.
type RunOutcome string

// The outcomes of a run. "" while it runs.
const (
	RunSucceeded RunOutcome = "succeeded" // Complete
	RunFailed    RunOutcome = "failed"    // Fail: Error says why; the execution may run again
	RunCancelled RunOutcome = "cancelled" // it ended the execution cancelled (a cancel request)
	RunReleased  RunOutcome = "released"  // Release: handed back, e.g. at a worker's shutdown
	RunSuspended RunOutcome = "suspended" // Suspend: a flow's sleep or wait
	RunExpired   RunOutcome = "expired"   // Rescue: its lease expired (the worker died or hung)
)

// Run is one recorded run of an execution.
type Run struct {
	// Attempt is the execution's Attempt during the run. Two runs may
	// share one: a run that resumes a flow continues its attempt, and a
	// lease released unstarted gives its start back.
	Attempt   int
	WorkerID  string
	ClaimedAt time.Time
	EndedAt   *time.Time // nil while it runs
	Outcome   RunOutcome // "" while it runs
	Error     string     // the failure's message (RunFailed), else ""
}

// RunsParams are the arguments of Store.Runs.
type RunsParams struct {
	Tenant string // "" = any tenant
	ID     string
}

// Ended reports whether r has ended.
func (r *Run) Ended() bool { return r.EndedAt != nil }

// MaxRunsKept bounds the history of one execution: past it, the oldest
// runs are dropped as new ones are claimed, so a flow resumed thousands of
// times keeps its latest runs only.
const MaxRunsKept = 100
