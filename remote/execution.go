package remote

import (
	"bytes"
	"encoding/json"
	"time"
)

// Status is an execution's status.
type Status string

// The statuses of an execution; the last four are terminal.
const (
	StatusScheduled Status = "scheduled"
	StatusQueued    Status = "queued"
	StatusRunning   Status = "running"
	StatusSuspended Status = "suspended"
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
	StatusSkipped   Status = "skipped"
)

// Terminal reports whether an execution in status s has ended.
func (s Status) Terminal() bool {
	switch s {
	case StatusSucceeded, StatusFailed, StatusCancelled, StatusSkipped:
		return true
	}
	return false
}

// Execution is one requested run of a job kind (docs/api.md, "Executions").
// Optional values are nil when unset.
type Execution struct {
	rawJSON
	ExecutionID      string          `json:"execution_id"`
	Tenant           string          `json:"tenant"`
	Kind             string          `json:"kind"`
	Queue            string          `json:"queue"`
	Priority         int             `json:"priority"`
	Status           Status          `json:"status"`
	DedupKey         *string         `json:"dedup_key"`
	ConcurrencyKey   *string         `json:"concurrency_key"`
	ConcurrencyLimit *int            `json:"concurrency_limit"`
	RateKey          *string         `json:"rate_key"`
	Payload          json.RawMessage `json:"payload"`
	Result           json.RawMessage `json:"result"`
	Error            *string         `json:"error"`
	Attempt          int             `json:"attempt"`
	MaxAttempts      int             `json:"max_attempts"`
	TimeoutSeconds   int             `json:"timeout_seconds"`
	Schedule         *string         `json:"schedule"`
	CreatedAt        time.Time       `json:"created_at"`
	RunAt            time.Time       `json:"run_at"`
	StartedAt        *time.Time      `json:"started_at"`
	FinishedAt       *time.Time      `json:"finished_at"`
	CancelRequested  bool            `json:"cancel_requested"`
	WakeAt           *time.Time      `json:"wake_at"`
	WaitingFor       *string         `json:"waiting_for"`
	TraceParent      string          `json:"trace_parent,omitempty"`
	DedupHits        int             `json:"dedup_hits"`
	LastDedupHitAt   *time.Time      `json:"last_dedup_hit_at"`
	// ParentID and ParentStep name the execution that spawned this one
	// and the spawn's step (nil for an execution nobody spawned, and for
	// an abandoned child whose parent was deleted).
	ParentID   *string `json:"parent_id"`
	ParentStep *string `json:"parent_step"`
	// Deduplicated is set only in the answer to a submit or a trigger:
	// true when its dedup key answered an existing execution.
	Deduplicated *bool `json:"deduplicated,omitempty"`
}

// UnmarshalJSON decodes an execution and keeps its JSON (see JSON), also
// when it is an item of a page or a batch.
func (e *Execution) UnmarshalJSON(b []byte) error {
	type plain Execution
	if err := json.Unmarshal(b, (*plain)(e)); err != nil {
		return err
	}
	e.raw = bytes.Clone(b)
	return nil
}

// Problem is an RFC 9457 problem document as the API sends it: the error
// of a batch slot. Err turns it into an *Error.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Code   string `json:"code"`
	// RetryAfterSeconds is set on a batch slot refused with 429 when
	// waiting helps.
	RetryAfterSeconds int `json:"retry_after_seconds,omitempty"`
}

// Err is p as an *Error.
func (p *Problem) Err() *Error {
	if p == nil {
		return nil
	}
	return &Error{Status: p.Status, Code: p.Code, Type: p.Type, Title: p.Title, Detail: p.Detail,
		RetryAfter: time.Duration(p.RetryAfterSeconds) * time.Second, retryAfterSet: p.RetryAfterSeconds > 0}
}
