package remote

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// The raw calls of a worker over HTTP (docs/api.md, "Workers" and
// "Flows"). The calls under a lease are fenced by its token: any other
// token, an expired lease or a deleted execution is ErrLeaseLost, and the
// worker should drop the attempt. Being fenced, they are retried like
// idempotent calls: a repeat of one that was done answers ErrLeaseLost (or,
// for a step, the first record) and changes nothing.

// ClaimRequest asks for work. Zero values are left out.
type ClaimRequest struct {
	WorkerID     string   `json:"worker_id"`
	Queues       []string `json:"queues,omitempty"`
	Kinds        []string `json:"kinds,omitempty"`
	Max          int      `json:"max,omitempty"`           // 1-100, default 1
	LeaseSeconds int      `json:"lease_seconds,omitempty"` // 1-3600, default 30
	WaitSeconds  int      `json:"wait_seconds,omitempty"`  // 0-30: a long poll
}

// Lease is one claimed attempt.
type Lease struct {
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
	// Steps is the journal's first steps by name; StepsComplete is false
	// when it holds more, which Client.Steps reads.
	Steps         map[string]json.RawMessage `json:"steps"`
	StepsComplete bool                       `json:"steps_complete"`
	TraceParent   string                     `json:"trace_parent,omitempty"`
}

type claimResponse struct {
	Leases []Lease `json:"leases"`
}

// Claim claims up to req.Max executions; none when there is nothing to do
// within req.WaitSeconds. It is sent once (but for a refusal with
// Retry-After or a failed connect): the leases of a lost answer would only
// expire.
func (c *Client) Claim(ctx context.Context, req ClaimRequest) ([]Lease, error) {
	var res claimResponse
	if _, err := c.Call(ctx, Request{Method: http.MethodPost, Path: "/api/workers/claim", Body: req}, &res); err != nil {
		return nil, err
	}
	return res.Leases, nil
}

// HeartbeatRequest extends a lease by LeaseSeconds (default 30).
type HeartbeatRequest struct {
	LeaseToken   string `json:"lease_token"`
	LeaseSeconds int    `json:"lease_seconds,omitempty"`
}

// HeartbeatResponse is a lease's new expiry, and whether a cancel was
// requested (the worker should stop).
type HeartbeatResponse struct {
	LeaseExpiresAt  time.Time `json:"lease_expires_at"`
	CancelRequested bool      `json:"cancel_requested"`
}

// Heartbeat extends the lease of execution id.
func (c *Client) Heartbeat(ctx context.Context, id string, req HeartbeatRequest) (*HeartbeatResponse, error) {
	var res HeartbeatResponse
	if _, err := c.Call(ctx, Request{Method: http.MethodPost, Path: "/api/executions/" + seg(id) + "/heartbeat", Body: req, Idempotent: true}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// CompleteRequest ends an attempt succeeded with Result (any JSON value;
// nil stores null).
type CompleteRequest struct {
	LeaseToken string `json:"lease_token"`
	Result     any    `json:"result,omitempty"`
}

// Complete completes the attempt of execution id.
func (c *Client) Complete(ctx context.Context, id string, req CompleteRequest) (*Execution, error) {
	return c.executionCall(ctx, http.MethodPost, "/api/executions/"+seg(id)+"/complete", req, true)
}

// FailRequest ends an attempt failed. It runs again unless Retry is false or
// attempts are spent, after RetryAfterSeconds or the server's backoff.
type FailRequest struct {
	LeaseToken        string `json:"lease_token"`
	Error             string `json:"error"`
	Retry             *bool  `json:"retry,omitempty"`
	RetryAfterSeconds *int64 `json:"retry_after_seconds,omitempty"`
}

// Fail fails the attempt of execution id.
func (c *Client) Fail(ctx context.Context, id string, req FailRequest) (*Execution, error) {
	return c.executionCall(ctx, http.MethodPost, "/api/executions/"+seg(id)+"/fail", req, true)
}

// StepRequest records a flow step: the first record of a name wins.
type StepRequest struct {
	LeaseToken string     `json:"lease_token"`
	Name       string     `json:"name"`
	Result     any        `json:"result,omitempty"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
}

// StepRecorded answers a step's record: the result of its first record, and
// whether this call recorded it.
type StepRecorded struct {
	Name     string          `json:"name"`
	Result   json.RawMessage `json:"result"`
	Recorded bool            `json:"recorded"`
}

// RecordStep records a step of execution id's flow.
func (c *Client) RecordStep(ctx context.Context, id string, req StepRequest) (*StepRecorded, error) {
	var res StepRecorded
	if _, err := c.Call(ctx, Request{Method: http.MethodPost, Path: "/api/executions/" + seg(id) + "/steps", Body: req, Idempotent: true}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// SuspendRequest ends an attempt as a flow's sleep (Until), wait for a
// signal (Signal), wait for children (Children: a spawn step of this
// execution; Count of them ended, 0 = all) or wait for an event (Event,
// Key, Since), a wait with an optional
// TimeoutSeconds, its outcome recorded under Step.
type SuspendRequest struct {
	LeaseToken string     `json:"lease_token"`
	Step       string     `json:"step"`
	Until      *time.Time `json:"until,omitempty"`
	Signal     string     `json:"signal,omitempty"`
	Children   string     `json:"children,omitempty"`
	Count      int        `json:"count,omitempty"`
	// Event waits for an event of this name (POST /api/events): with Key,
	// only one published with that correlation key; with Since, only one
	// published at or after it (default: the execution's created_at).
	Event          string     `json:"event,omitempty"`
	Key            string     `json:"key,omitempty"`
	Since          *time.Time `json:"since,omitempty"`
	TimeoutSeconds int        `json:"timeout_seconds,omitempty"`
}

// Suspend suspends execution id: it answers the execution suspended, or
// queued again at once (a due sleep, a signal already kept, a retained
// event that matches).
func (c *Client) Suspend(ctx context.Context, id string, req SuspendRequest) (*Execution, error) {
	return c.executionCall(ctx, http.MethodPost, "/api/executions/"+seg(id)+"/suspend", req, true)
}

// ReleaseRequest hands an attempt back unfinished. Unstarted says its
// handler never ran: the start is given back.
type ReleaseRequest struct {
	LeaseToken string `json:"lease_token"`
	Unstarted  bool   `json:"unstarted,omitempty"`
}

// Release hands the attempt of execution id back, as a worker that stops
// before its handler returned does: it answers the execution queued again
// (it runs again even if its attempts are spent), or cancelled when a
// cancel was requested.
func (c *Client) Release(ctx context.Context, id string, req ReleaseRequest) (*Execution, error) {
	return c.executionCall(ctx, http.MethodPost, "/api/executions/"+seg(id)+"/release", req, true)
}
