package remote

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"time"
)

// ScheduleSpec is the body of PUT /api/schedules/{name} (docs/api.md,
// "Schedules"): Cron or Every, and Kind. Zero values are left out, taking
// their defaults.
type ScheduleSpec struct {
	Name           string  `json:"name,omitempty"` // must equal the name put, if given
	Cron           *string `json:"cron,omitempty"`
	Every          *string `json:"every,omitempty"` // a Go duration: "15m", "1h30m"
	Timezone       string  `json:"timezone,omitempty"`
	Kind           string  `json:"kind"`
	Payload        any     `json:"payload,omitempty"`
	Queue          string  `json:"queue,omitempty"`
	Priority       int     `json:"priority,omitempty"`
	MaxAttempts    int     `json:"max_attempts,omitempty"`
	TimeoutSeconds int     `json:"timeout_seconds,omitempty"`
	RateKey        *string `json:"rate_key,omitempty"`
	Overlap        string  `json:"overlap,omitempty"` // skip (default), queue or allow
	Catchup        string  `json:"catchup,omitempty"` // one (default) or none
	Enabled        *bool   `json:"enabled,omitempty"` // default true
}

// Schedule is a schedule as the server answers it, every default with its
// effective value.
type Schedule struct {
	rawJSON
	Name            string          `json:"name"`
	Tenant          string          `json:"tenant"`
	Cron            *string         `json:"cron"`
	Every           *string         `json:"every"`
	Timezone        string          `json:"timezone"`
	Kind            string          `json:"kind"`
	Payload         json.RawMessage `json:"payload"`
	Queue           string          `json:"queue"`
	Priority        int             `json:"priority"`
	MaxAttempts     int             `json:"max_attempts"`
	TimeoutSeconds  int             `json:"timeout_seconds"`
	RateKey         *string         `json:"rate_key"`
	Overlap         string          `json:"overlap"`
	Catchup         string          `json:"catchup"`
	Enabled         bool            `json:"enabled"`
	NextRunAt       *time.Time      `json:"next_run_at"` // nil while disabled
	LastRunAt       *time.Time      `json:"last_run_at"`
	LastExecutionID *string         `json:"last_execution_id"`
	Running         bool            `json:"running"`
	CreatedAt       time.Time       `json:"created_at"`
	UpdatedAt       time.Time       `json:"updated_at"`
}

// SchedulePage is one page of schedules, by tenant then name.
type SchedulePage struct {
	rawJSON
	Items      []Schedule `json:"items"`
	NextCursor *string    `json:"next_cursor"`
}

// PutSchedule creates or replaces the schedule name; created is true when
// it did not exist. A replace that keeps an enabled schedule's timing keeps
// its next tick, so putting the same spec again changes nothing.
func (c *Client) PutSchedule(ctx context.Context, name string, spec ScheduleSpec) (sched *Schedule, created bool, err error) {
	var s Schedule
	status, err := c.Call(ctx, Request{Method: http.MethodPut, Path: "/api/schedules/" + seg(name), Body: spec, Idempotent: true}, &s)
	if err != nil {
		return nil, false, err
	}
	return &s, status == http.StatusCreated, nil
}

// GetSchedule reads a schedule.
func (c *Client) GetSchedule(ctx context.Context, name string) (*Schedule, error) {
	return c.scheduleCall(ctx, http.MethodGet, "/api/schedules/"+seg(name))
}

// SchedulesPage reads one page of schedules (limit 1-1000, default 1000).
func (c *Client) SchedulesPage(ctx context.Context, opts PageOptions) (*SchedulePage, error) {
	var p SchedulePage
	if _, err := c.Call(ctx, Request{Method: http.MethodGet, Path: "/api/schedules", Query: opts.query(), Idempotent: true}, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// Schedules yields every schedule, page after page; an error ends it.
func (c *Client) Schedules(ctx context.Context, opts PageOptions) iter.Seq2[*Schedule, error] {
	return pages(func(cursor string) ([]Schedule, *string, error) {
		opts.Cursor = cursor
		p, err := c.SchedulesPage(ctx, opts)
		if err != nil {
			return nil, nil, err
		}
		return p.Items, p.NextCursor, nil
	}, opts.Cursor)
}

// DeleteSchedule deletes a schedule; the executions it fired stay.
func (c *Client) DeleteSchedule(ctx context.Context, name string) error {
	_, err := c.Call(ctx, Request{Method: http.MethodDelete, Path: "/api/schedules/" + seg(name)}, nil)
	return err
}

// TriggerOptions changes a trigger.
type TriggerOptions struct {
	// IdempotencyKey (scoped to the schedule) makes a repeat answer the
	// first trigger's execution. Without it the client sends one of its
	// own when it may retry, so a retry never fires twice.
	IdempotencyKey string
}

// TriggerSchedule fires an off-cycle tick now: the execution it submitted
// (Deduplicated true for a repeat of an idempotency key).
func (c *Client) TriggerSchedule(ctx context.Context, name string, opts TriggerOptions) (*Execution, error) {
	key := opts.IdempotencyKey
	if key == "" && c.retry.MaxRetries > 0 {
		key = NewKey()
	}
	var hdr http.Header
	if key != "" {
		hdr = http.Header{"Idempotency-Key": {key}}
	}
	var e Execution
	_, err := c.Call(ctx, Request{Method: http.MethodPost, Path: "/api/schedules/" + seg(name) + "/trigger", Header: hdr, Idempotent: key != ""}, &e)
	if err != nil {
		return nil, err
	}
	return &e, nil
}

// PauseSchedule disables a schedule in one atomic step; pausing a paused
// one changes nothing.
func (c *Client) PauseSchedule(ctx context.Context, name string) (*Schedule, error) {
	return c.scheduleCall(ctx, http.MethodPost, "/api/schedules/"+seg(name)+"/pause")
}

// ResumeSchedule enables a schedule, its next tick the first after now;
// resuming an enabled one changes nothing.
func (c *Client) ResumeSchedule(ctx context.Context, name string) (*Schedule, error) {
	return c.scheduleCall(ctx, http.MethodPost, "/api/schedules/"+seg(name)+"/resume")
}

func (c *Client) scheduleCall(ctx context.Context, method, path string) (*Schedule, error) {
	var s Schedule
	if _, err := c.Call(ctx, Request{Method: method, Path: path, Idempotent: true}, &s); err != nil {
		return nil, err
	}
	return &s, nil
}
