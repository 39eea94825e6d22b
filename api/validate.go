package api

import (
	"errors"
	"time"

	"github.com/latch-run/latch/store"
)

// Limits of identifiers and numbers: the store's bounds of a submission
// (docs/api.md fixes the lengths of name, kind and dedup_key), and this
// server's own choices.
const (
	maxKindLen      = store.MaxKindLen
	maxKeyFieldLen  = store.MaxKeyLen // dedup_key, concurrency_key, rate_key, worker_id
	maxScheduleName = 128
	maxDelay        = store.MaxDelaySeconds                        // delay_seconds, run_at horizon
	maxDuration     = int64(store.MaxTenantDuration / time.Second) // tenant TTL and retention
	maxInflight     = store.MaxInflightLimit
)

// fieldProblem turns the store's refusal of a field (store.FieldError)
// into this API's problem: 413 payload_too_large for a payload over its
// limit, else 400 invalid_request naming the field. nil stays nil.
func fieldProblem(err error) error {
	var fe *store.FieldError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &fe) && fe.TooLarge:
		return problem(CodePayloadTooLarge, "%s: %s", fe.Field, fe.Rule)
	case errors.As(err, &fe):
		return invalid(fe.Field, "%s", fe.Rule)
	}
	return err
}

// checkTenantName: store.ValidTenantName, 1–64 of [a-z0-9_-].
func checkTenantName(field, s string) error {
	if !store.ValidTenantName(s) {
		return invalid(field, "must be 1-%d characters of a-z, 0-9, _ and -", store.MaxTenantNameLen)
	}
	return nil
}

// checkScheduleName: 1–128 of [A-Za-z0-9._:-], like a queue.
func checkScheduleName(field, s string) error {
	return fieldProblem(store.CheckIdent(field, s, maxScheduleName))
}

// checkText: store.CheckText, the rule of every free-text identifier, for
// the fields the store has no named check of (time zones, cron specs).
func checkText(field, s string, max int) error { return fieldProblem(store.CheckText(field, s, max)) }

// checkRange: min <= v <= max.
func checkRange(field string, v, min, max int64) error {
	return fieldProblem(store.CheckRange(field, v, min, max))
}
