package api

import (
	"cmp"
	"encoding/json"
	"strings"
	"time"

	"github.com/latch-run/latch/store"
)

// This file holds the JSON shapes of docs/api.md's answers and their conversion
// from store types. Optional values are pointers so that "none" is null and
// every field is always present.

// execution is the execution JSON of docs/api.md ("Executions").
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
	// WakeAt and WaitingFor describe a suspended flow: when it resumes by
	// itself, and the signal it waits for. null in every other status.
	WakeAt     *time.Time `json:"wake_at"`
	WaitingFor *string    `json:"waiting_for"`
	// ParentID and ParentStep name the execution that spawned this one and
	// the spawn step (docs/api.md, "Children"); null for an execution no
	// one spawned, and for an abandoned child whose parent was deleted.
	ParentID   *string `json:"parent_id"`
	ParentStep *string `json:"parent_step"`
	// TraceParent is the W3C traceparent the execution's runs continue
	// (docs/tracing.md); left out when it has none.
	TraceParent string `json:"trace_parent,omitempty"`
	// DedupHits counts the submits (and schedule fires) its dedup key
	// answered with this execution, the latest at LastDedupHitAt.
	DedupHits      int        `json:"dedup_hits"`
	LastDedupHitAt *time.Time `json:"last_dedup_hit_at"`
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
		WakeAt:          optTime(e.WakeAt),
		WaitingFor:      optString(e.WaitingFor),
		ParentID:        optString(e.ParentID),
		TraceParent:     e.TraceParent,
		DedupHits:       e.DedupHits,
		LastDedupHitAt:  optTime(e.LastDedupHitAt),
	}
	if e.ConcurrencyKey != "" {
		limit := e.ConcurrencyLimit
		out.ConcurrencyLimit = &limit
	}
	if e.ParentID != "" {
		out.ParentStep = optString(e.ParentStep)
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

// lease is one claimed attempt in a claim answer. docs/api.md fixes the first
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
	// Steps is the execution's journal, {} when empty: a flow skips the
	// steps recorded before this run. It holds the journal's first steps,
	// as far as the claim's bound (store.ClaimJournalBytes, shared by its
	// leases) reaches; StepsComplete is false when the journal holds more, which the worker reads with GET
	// /api/executions/{id}/steps when a step it runs is not in Steps.
	Steps         store.Journal `json:"steps"`
	StepsComplete bool          `json:"steps_complete"`
	// TraceParent is the execution's W3C traceparent: a worker makes its
	// run a child of it (docs/tracing.md). Left out when it has none.
	TraceParent string `json:"trace_parent,omitempty"`
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
		Steps:          l.Steps,
		StepsComplete:  !l.StepsPartial,
		TraceParent:    l.TraceParent,
	}
	if len(out.Payload) == 0 {
		out.Payload = json.RawMessage("{}")
	}
	if out.Steps == nil {
		out.Steps = store.Journal{}
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
	Disabled         bool   `json:"disabled"`
	MaxStoredBytes   int64  `json:"max_stored_bytes"`
	StoredBytes      int64  `json:"stored_bytes"`
	// EventRetentionSeconds keeps the tenant's events.
	EventRetentionSeconds int64 `json:"event_retention_seconds"`
}

func toTenant(t *store.Tenant) *tenant {
	return &tenant{
		Name:             t.Name,
		MaxInflight:      t.MaxInflight,
		Inflight:         t.Inflight,
		DedupTTLSeconds:  int64(t.DedupTTL / time.Second),
		RetentionSeconds: int64(t.Retention / time.Second),
		Disabled:         t.Disabled,
		MaxStoredBytes:   t.MaxStoredBytes,
		StoredBytes:      t.StoredBytes,

		// A store without events keeps none: the default is what it
		// would apply, and what a GET answer PATCHed back may send.
		EventRetentionSeconds: int64(cmp.Or(t.EventRetention, store.DefaultEventRetention) / time.Second),
	}
}

// scheduleView is the schedule JSON of GET and PUT /api/schedules/{name}.
// Settings left to their defaults are answered with their effective value
// (queue "default", max_attempts 3, ...), so an answer PUT back changes
// nothing.
type scheduleView struct {
	Name           string          `json:"name"`
	Tenant         string          `json:"tenant"`
	Cron           *string         `json:"cron"`
	Every          *string         `json:"every"` // compact: "15m", "1h30m"
	Timezone       string          `json:"timezone"`
	Kind           string          `json:"kind"`
	Payload        json.RawMessage `json:"payload"`
	Queue          string          `json:"queue"`
	Priority       int             `json:"priority"`
	MaxAttempts    int             `json:"max_attempts"`
	TimeoutSeconds int             `json:"timeout_seconds"`
	RateKey        *string         `json:"rate_key"`
	Overlap        store.Overlap   `json:"overlap"`
	Catchup        store.Catchup   `json:"catchup"`
	Enabled        bool            `json:"enabled"`
	// NextRunAt is null while the schedule is disabled.
	NextRunAt       *time.Time `json:"next_run_at"`
	LastRunAt       *time.Time `json:"last_run_at"`
	LastExecutionID *string    `json:"last_execution_id"`
	Running         bool       `json:"running"`
	CreatedAt       time.Time  `json:"created_at"`
	UpdatedAt       time.Time  `json:"updated_at"`
}

func toSchedule(sc *store.Schedule) *scheduleView {
	out := &scheduleView{
		Name:            sc.Name,
		Tenant:          sc.Tenant,
		Cron:            optString(sc.Cron),
		Timezone:        cmp.Or(sc.Timezone, defaultTimezone),
		Kind:            sc.Kind,
		Payload:         sc.Payload,
		Queue:           cmp.Or(sc.Queue, store.DefaultQueue),
		Priority:        sc.Priority,
		MaxAttempts:     cmp.Or(sc.MaxAttempts, store.DefaultMaxAttempts),
		TimeoutSeconds:  cmp.Or(sc.TimeoutSeconds, store.DefaultTimeoutSeconds),
		RateKey:         optString(sc.RateKey),
		Overlap:         sc.Overlap,
		Catchup:         sc.Catchup,
		Enabled:         sc.Enabled,
		LastRunAt:       optTime(sc.LastRunAt),
		LastExecutionID: optString(sc.LastExecutionID),
		Running:         sc.Running,
		CreatedAt:       sc.CreatedAt.UTC(),
		UpdatedAt:       sc.UpdatedAt.UTC(),
	}
	if sc.Every != 0 {
		every := formatEvery(sc.Every)
		out.Every = &every
	}
	if sc.Enabled && !sc.NextRunAt.IsZero() {
		next := sc.NextRunAt.UTC()
		out.NextRunAt = &next
	}
	if len(out.Payload) == 0 {
		out.Payload = json.RawMessage("{}")
	}
	return out
}

// formatEvery writes an interval as a compact Go duration, which
// schedule.ParseEvery reads back: "15m", "1h30m", "24h", "1s" — never
// time.Duration's "15m0s" or "1h0m0s".
func formatEvery(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// rateLimit is the rate limit JSON of /api/rate-limits/{key}.
type rateLimit struct {
	Key        string    `json:"key"`
	Rate       int       `json:"rate"`
	PerSeconds int64     `json:"per_seconds"`
	Burst      int       `json:"burst"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

func toRateLimit(r *store.RateLimit) *rateLimit {
	return &rateLimit{
		Key:        r.Key,
		Rate:       r.Rate,
		PerSeconds: int64(r.Per / time.Second),
		Burst:      r.Burst,
		CreatedAt:  r.CreatedAt.UTC(),
		UpdatedAt:  r.UpdatedAt.UTC(),
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
