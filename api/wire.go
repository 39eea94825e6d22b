package api

import (
	"encoding/json"
	"time"

	"github.com/latch-run/latch/store"
)

// This file holds the JSON shapes of API.md's answers and their conversion
// from store types. Optional values are pointers so that "none" is null and
// every field is always present.

// execution is the execution JSON of API.md.
type execution struct {
	ExecutionID      string          `json:"execution_id"`
	Tenant           string          `json:"tenant"`
	Kind             string          `json:"kind"`
	Queue            string          `json:"queue"`
	Priority         int             `json:"priority"`
	Status           store.Status    `json:"status"`
	DedupKey         *string         `json:"dedup_key"`
	ConcurrencyKey   *string         `json:"concurrency_key"`
	ConcurrencyLimit *int            `json:"concurrency_limit"`
	RateKey          *string         `json:"rate_key"`
	Payload          json.RawMessage `json:"payload"`
	Result           json.RawMessage `json:"result"` // nil marshals as null
	Error            *string         `json:"error"`
	Attempt          int             `json:"attempt"`
	MaxAttempts      int             `json:"max_attempts"`
	TimeoutSeconds   int             `json:"timeout_seconds"`
	Schedule         *string         `json:"schedule"`
	CreatedAt        time.Time       `json:"created_at"`
	RunAt            time.Time       `json:"run_at"`
	StartedAt        *time.Time      `json:"started_at"`
	FinishedAt       *time.Time      `json:"finished_at"`
	// CancelRequested: a cancel was asked for while the execution was
	// running; it ends cancelled when the worker stops or its lease ends.
	CancelRequested bool `json:"cancel_requested"`
	// Deduplicated appears only in the answer to a submit.
	Deduplicated *bool `json:"deduplicated,omitempty"`
}

func toExecution(e *store.Execution) *execution {
	out := &execution{
		ExecutionID:     e.ID,
		Tenant:          e.Tenant,
		Kind:            e.Kind,
		Queue:           e.Queue,
		Priority:        e.Priority,
		Status:          e.Status,
		DedupKey:        optString(e.DedupKey),
		ConcurrencyKey:  optString(e.ConcurrencyKey),
		RateKey:         optString(e.RateKey),
		Payload:         e.Payload,
		Result:          e.Result,
		Error:           optString(e.Error),
		Attempt:         e.Attempt,
		MaxAttempts:     e.MaxAttempts,
		TimeoutSeconds:  e.TimeoutSeconds,
		Schedule:        optString(e.Schedule),
		CreatedAt:       e.CreatedAt.UTC(),
		RunAt:           e.RunAt.UTC(),
		StartedAt:       optTime(e.StartedAt),
		FinishedAt:      optTime(e.FinishedAt),
		CancelRequested: e.CancelRequested,
	}
	if e.ConcurrencyKey != "" {
		limit := e.ConcurrencyLimit
		out.ConcurrencyLimit = &limit
	}
	if len(out.Payload) == 0 {
		out.Payload = json.RawMessage("{}")
	}
	return out
}

// submitted is an execution as a submit answers it.
func submitted(e *store.Execution, dedup bool) *execution {
	out := toExecution(e)
	out.Deduplicated = &dedup
	return out
}

// lease is one claimed attempt in a claim answer. API.md fixes the first
// six fields; tenant, queue, max_attempts and timeout_seconds are there so
// a worker need not read the execution to run it.
type lease struct {
	ExecutionID    string          `json:"execution_id"`
	LeaseToken     string          `json:"lease_token"`
	Kind           string          `json:"kind"`
	Payload        json.RawMessage `json:"payload"`
	Attempt        int             `json:"attempt"`
	LeaseExpiresAt time.Time       `json:"lease_expires_at"`
	Tenant         string          `json:"tenant"`
	Queue          string          `json:"queue"`
	MaxAttempts    int             `json:"max_attempts"`
	TimeoutSeconds int             `json:"timeout_seconds"`
}

func toLease(l *store.Lease) lease {
	out := lease{
		ExecutionID:    l.ExecutionID,
		LeaseToken:     l.Token,
		Kind:           l.Kind,
		Payload:        l.Payload,
		Attempt:        l.Attempt,
		LeaseExpiresAt: l.ExpiresAt.UTC(),
		Tenant:         l.Tenant,
		Queue:          l.Queue,
		MaxAttempts:    l.MaxAttempts,
		TimeoutSeconds: l.TimeoutSeconds,
	}
	if len(out.Payload) == 0 {
		out.Payload = json.RawMessage("{}")
	}
	return out
}

// tenant is the tenant JSON of GET and PATCH /api/tenants/{name}.
type tenant struct {
	Name             string `json:"name"`
	MaxInflight      int    `json:"max_inflight"`
	Inflight         int    `json:"inflight"`
	DedupTTLSeconds  int64  `json:"dedup_ttl_seconds"`
	RetentionSeconds int64  `json:"retention_seconds"`
}

func toTenant(t *store.Tenant) *tenant {
	return &tenant{
		Name:             t.Name,
		MaxInflight:      t.MaxInflight,
		Inflight:         t.Inflight,
		DedupTTLSeconds:  int64(t.DedupTTL / time.Second),
		RetentionSeconds: int64(t.Retention / time.Second),
	}
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func optTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
