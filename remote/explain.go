package remote

import (
	"context"
	"net/http"
	"time"
)

// Explanation says why an execution waits: every gate that holds it back
// now (GET /api/executions/{id}/explain). Gates is empty when nothing
// holds it, and for a running or terminal execution.
type Explanation struct {
	rawJSON
	ExecutionID string `json:"execution_id"`
	Status      string `json:"status"`
	Gates       []Gate `json:"gates"`
}

// Gate is one reason an execution waits. Gate names it and Detail says it
// for a person; the other fields are the figures of that gate, zero for
// the others: concurrency_key (Key, Limit, Running, Holders), rate_limit
// (Key, NextTokenAt), run_at (RunAt), waiting (WaitingFor, nil for a
// sleep; WakeAt, nil for a wait without a timeout), fair_turn
// (TenantsAhead), tenant_disabled, no_worker (Queue, Kind).
type Gate struct {
	Gate         string     `json:"gate"`
	Detail       string     `json:"detail"`
	Key          string     `json:"key,omitempty"`
	Limit        int        `json:"limit,omitempty"`
	Running      int        `json:"running,omitempty"`
	Holders      []string   `json:"holders,omitempty"`
	NextTokenAt  *time.Time `json:"next_token_at,omitempty"`
	RunAt        *time.Time `json:"run_at,omitempty"`
	WaitingFor   *string    `json:"waiting_for,omitempty"`
	WakeAt       *time.Time `json:"wake_at,omitempty"`
	TenantsAhead int        `json:"tenants_ahead,omitempty"`
	Queue        string     `json:"queue,omitempty"`
	Kind         string     `json:"kind,omitempty"`
}

// Explain reads why execution id waits. It changes nothing.
func (c *Client) Explain(ctx context.Context, id string) (*Explanation, error) {
	var x Explanation
	if _, err := c.Call(ctx, Request{Method: http.MethodGet, Path: "/api/executions/" + seg(id) + "/explain", Idempotent: true}, &x); err != nil {
		return nil, err
	}
	return &x, nil
}
