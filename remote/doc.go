// Package remote is a Go client of latch's HTTP API (docs/api.md): what a
// tenant's service, holding an API key rather than the store's credentials,
// uses to submit, read and change executions, to manage schedules, rate
// limits, tenants and keys, and to make the raw worker calls (claim,
// heartbeat, complete, fail, release, steps, suspend, spawn), on which
// latch.NewRemoteWorker runs the root package's handlers.
//
// Every method takes a context first and typed requests and answers; the
// lists (List, Steps, Schedules) and an execution's event stream (Events)
// are iterators. An error answer is a *Error, which errors.Is matches
// against the sentinel of its problem code (ErrNotFound, ErrQuotaExceeded,
// ErrLeaseLost, ...).
//
// Calls that are safe to repeat are retried by the client's RetryPolicy:
// on 503, on 429 with Retry-After, and when the connection failed. A submit
// is always safe: when the caller gives no dedup key nor idempotency key, the
// client sends an Idempotency-Key of its own and repeats it on every retry,
// so a submit whose answer was lost never makes a second execution.
//
// docs/sdk-go.md shows it at work.
package remote
