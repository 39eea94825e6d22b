package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/latch-run/latch/store"
)

// Code is the stable, machine-readable word of a problem document. Clients
// branch on it; the title and detail are for people.
type Code string

// The codes of docs/api.md ("Conventions"), among them forbidden (a tenant key calling an admin
// endpoint), unavailable (the store did not answer in time, /readyz, or
// the server's body budget is spent), too_many_requests (a tenant's event
// streams, long polls or stream tickets at their bound), invalid_ticket (a
// stream ticket unknown, expired, used or for another execution), schedule_limit (a tenant's
// schedules at their bound), schedule_too_frequent (a timing that ticks more often than
// Config.MinScheduleInterval), too_many_steps, journal_too_large and
// signal_buffer_full (an execution's journal or kept signals at their
// bound, store.MaxSteps, store.MaxJournalBytes and
// store.MaxBufferedSignals) and headers_too_large (MaxHeaderBytes).
const (
	CodeUnauthorized         Code = "unauthorized"
	CodeInvalidTicket        Code = "invalid_ticket"
	CodeForbidden            Code = "forbidden"
	CodeTenantDisabled       Code = "tenant_disabled"
	CodeNotFound             Code = "not_found"
	CodeInvalidRequest       Code = "invalid_request"
	CodePayloadTooLarge      Code = "payload_too_large"
	CodeUnsupportedMediaType Code = "unsupported_media_type"
	CodeQuotaExceeded        Code = "quota_exceeded"
	CodeTooManyRequests      Code = "too_many_requests"
	CodeScheduleLimit        Code = "schedule_limit"
	CodeScheduleTooFrequent  Code = "schedule_too_frequent"
	CodeDedupKeyReused       Code = "dedup_key_reused"
	CodeTenantExists         Code = "tenant_exists"
	CodeNotTerminal          Code = "not_terminal"
	CodeLeaseLost            Code = "lease_lost"
	CodeNotActive            Code = "not_active"
	CodeNotFailed            Code = "not_failed"
	CodeTooManySteps         Code = "too_many_steps"
	CodeJournalTooLarge      Code = "journal_too_large"
	CodeSignalBufferFull     Code = "signal_buffer_full"
	CodeStorageExceeded      Code = "storage_exceeded"
	CodeMethodNotAllowed     Code = "method_not_allowed"
	CodeInternal             Code = "internal"
	CodeUnavailable          Code = "unavailable"
	CodeHeadersTooLarge      Code = "headers_too_large"
	CodeTooManyChildren      Code = "too_many_children"
	// CodeTooManySubscriptions: a tenant's subscriptions at
	// store.MaxSubscriptions.
	CodeTooManySubscriptions Code = "too_many_subscriptions"
)

// codeInfo is the fixed status and title of each code.
var codeInfo = map[Code]struct {
	status int
	title  string
}{
	CodeUnauthorized:         {http.StatusUnauthorized, "Unauthorized"},
	CodeInvalidTicket:        {http.StatusUnauthorized, "Invalid stream ticket"},
	CodeForbidden:            {http.StatusForbidden, "Forbidden"},
	CodeTenantDisabled:       {http.StatusForbidden, "Tenant disabled"},
	CodeNotFound:             {http.StatusNotFound, "Not found"},
	CodeInvalidRequest:       {http.StatusBadRequest, "Invalid request"},
	CodePayloadTooLarge:      {http.StatusRequestEntityTooLarge, "Payload too large"},
	CodeUnsupportedMediaType: {http.StatusUnsupportedMediaType, "Unsupported media type"},
	CodeQuotaExceeded:        {http.StatusTooManyRequests, "Quota exceeded"},
	CodeTooManyRequests:      {http.StatusTooManyRequests, "Too many requests"},
	CodeScheduleLimit:        {http.StatusConflict, "Schedule limit reached"},
	CodeScheduleTooFrequent:  {http.StatusBadRequest, "Schedule too frequent"},
	CodeDedupKeyReused:       {http.StatusUnprocessableEntity, "Dedup key reused"},
	CodeTenantExists:         {http.StatusConflict, "Tenant exists"},
	CodeNotTerminal:          {http.StatusConflict, "Execution not terminal"},
	CodeLeaseLost:            {http.StatusConflict, "Lease lost"},
	CodeNotActive:            {http.StatusConflict, "Execution not active"},
	CodeNotFailed:            {http.StatusConflict, "Execution not failed"},
	// The flow bounds are 409, not 429: none frees with time, so a client
	// that waits and repeats (as 429 invites, and as the SDKs do on their
	// own) gains nothing. A journal never shrinks; kept signals go only
	// when the flow's waits consume them.
	CodeTooManySteps:     {http.StatusConflict, "Too many steps"},
	CodeJournalTooLarge:  {http.StatusConflict, "Journal too large"},
	CodeSignalBufferFull: {http.StatusConflict, "Signal buffer full"},
	// A spawn's bounds (store.MaxSpawnItems, store.MaxChildren,
	// store.MaxSpawnDepth) never free with time either.
	CodeTooManyChildren: {http.StatusConflict, "Too many children"},
	// A tenant's subscriptions free only when one is deleted.
	CodeTooManySubscriptions: {http.StatusConflict, "Too many subscriptions"},
	// 409 too: stored bytes free when executions are deleted or pruned
	// (days, at the default retention) or the budget is raised, not after
	// a Retry-After.
	CodeStorageExceeded:  {http.StatusConflict, "Storage budget exceeded"},
	CodeMethodNotAllowed: {http.StatusMethodNotAllowed, "Method not allowed"},
	CodeInternal:         {http.StatusInternalServerError, "Internal error"},
	CodeUnavailable:      {http.StatusServiceUnavailable, "Service unavailable"},
	CodeHeadersTooLarge:  {http.StatusRequestHeaderFieldsTooLarge, "Request header fields too large"},
}

// problemTypeBase prefixes every problem type URI.
const problemTypeBase = "https://latch.run/problems/"

// quotaRetryAfter is the Retry-After, in seconds, of a quota_exceeded
// answer: quota frees as work finishes, which the server cannot predict.
const quotaRetryAfter = 5

// Problem is an RFC 9457 problem document. It is also the error type
// handlers return to answer with a specific code.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Code   Code   `json:"code"`
	// RetryAfterSeconds is set only on the problem of a batch item answered
	// 429: a slot has no Retry-After header of its own.
	RetryAfterSeconds int `json:"retry_after_seconds,omitempty"`

	retryAfter int         // seconds; >0 sets Retry-After
	allow      string      // Allow header of a 405
	cause      error       // logged for internal problems, never sent
	header     http.Header // extra headers (WWW-Authenticate)
}

func (p *Problem) Error() string { return string(p.Code) + ": " + p.Detail }

// problem builds a Problem with the fixed status and title of code.
func problem(code Code, format string, args ...any) *Problem {
	info, ok := codeInfo[code]
	if !ok {
		panic("api: unknown problem code " + string(code))
	}
	return &Problem{
		Type:   problemTypeBase + string(code),
		Title:  info.title,
		Status: info.status,
		Detail: fmt.Sprintf(format, args...),
		Code:   code,
	}
}

// invalid is a 400 invalid_request whose detail starts with the field.
// The field may come from the client (an unknown key), so it is made valid
// UTF-8.
func invalid(field, format string, args ...any) *Problem {
	return problem(CodeInvalidRequest, "%s: %s", strings.ToValidUTF8(field, "\uFFFD"), fmt.Sprintf(format, args...))
}

// problemFor maps any error a handler returns onto a Problem: Problems pass
// through, store sentinels get their codes, anything else is internal.
func problemFor(err error) *Problem {
	var p *Problem
	if errors.As(err, &p) {
		return p
	}
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return problem(CodePayloadTooLarge, "the request body exceeds %d bytes", mbe.Limit)
	case errors.Is(err, store.ErrNotFound):
		return problem(CodeNotFound, "not found")
	case errors.Is(err, store.ErrQuotaExceeded):
		p := problem(CodeQuotaExceeded, "admitting this execution would make the tenant's inflight exceed its max_inflight")
		p.retryAfter = quotaRetryAfter
		return p
	case errors.Is(err, store.ErrDedupKeyReused):
		return problem(CodeDedupKeyReused, "the dedup_key maps to an execution submitted with a different kind or payload")
	case errors.Is(err, store.ErrTenantExists):
		return problem(CodeTenantExists, "a tenant with this name exists")
	case errors.Is(err, store.ErrScheduleLimit):
		return problem(CodeScheduleLimit, "the tenant has as many schedules as it may; delete one first, or replace one")
	case errors.Is(err, store.ErrNotTerminal):
		return problem(CodeNotTerminal, "the execution is not terminal; cancel it first or delete with force=true")
	case errors.Is(err, store.ErrLeaseLost):
		return problem(CodeLeaseLost, "the lease token is not the execution's current lease; abandon this attempt")
	case errors.Is(err, store.ErrNotActive):
		return problem(CodeNotActive, "the execution has ended; no wait can consume a new signal")
	case errors.Is(err, store.ErrTooManySteps):
		return problem(CodeTooManySteps, "the execution's journal holds as many steps as it may; a new step name is refused, a recorded one still answers")
	case errors.Is(err, store.ErrJournalTooLarge):
		return problem(CodeJournalTooLarge, "the step would make the execution's journal larger than it may be; nothing was written, a recorded name still answers")
	case errors.Is(err, store.ErrSignalBufferFull):
		return problem(CodeSignalBufferFull, "the execution keeps as many signals as it may that no wait has consumed; nothing was written")
	case errors.Is(err, store.ErrStorageExceeded):
		return problem(CodeStorageExceeded, "the tenant's stored bytes would pass its storage budget (max_stored_bytes); nothing was written: delete executions, or ask for a larger budget")
	case errors.Is(err, store.ErrTooManyChildren):
		return problem(CodeTooManyChildren, "the spawn would pass a bound: %d children in one spawn, %d children of one execution, or a family %d deep; nothing was written",
			store.MaxSpawnItems, store.MaxChildren, store.MaxSpawnDepth)
	case errors.Is(err, store.ErrTooManySubscriptions):
		return problem(CodeTooManySubscriptions, "the tenant has %d subscriptions, as many as it may; delete one first (replacing one is allowed)",
			store.MaxSubscriptions)
	case errors.Is(err, store.ErrNotFailed):
		return problem(CodeNotFailed, "only a failed execution can be retried")
	case errors.Is(err, store.ErrInvalid):
		// The store's validation messages name the rule broken; they hold
		// no internals, so they are safe to echo.
		return problem(CodeInvalidRequest, "%s", err.Error())
	case errors.Is(err, store.ErrUnavailable):
		// A restart or failover of the store, or a lost connection: an
		// outage to retry, not a fault of this server.
		p := problem(CodeUnavailable, "the store does not answer; retry later (with the same dedup key, for a submit)")
		p.retryAfter = storeDownRetryAfter
		p.cause = err
		return p
	case errors.Is(err, context.DeadlineExceeded):
		p := problem(CodeUnavailable, "the request did not finish in time")
		p.retryAfter = 1
		p.cause = err
		return p
	}
	p = problem(CodeInternal, "internal error")
	p.cause = err
	return p
}

// writeProblem answers with p as application/problem+json.
func writeProblem(w http.ResponseWriter, p *Problem) {
	h := w.Header()
	for k, vs := range p.header {
		h[k] = vs
	}
	if p.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(p.retryAfter))
	}
	if p.allow != "" {
		h.Set("Allow", p.allow)
	}
	h.Set("Content-Type", "application/problem+json")
	h.Set("Cache-Control", "no-store")
	h.Del("Content-Length")
	w.WriteHeader(p.Status)
	body, _ := marshal(p) // a Problem always marshals
	_, _ = w.Write(body)
}
