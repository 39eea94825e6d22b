package remote

import (
	"context"
	"net/http"
	"time"
)

// RateLimitSpec is the body of PUT /api/rate-limits/{key}: Rate starts per
// PerSeconds, Burst at once (default 1).
type RateLimitSpec struct {
	Key        string `json:"key,omitempty"` // must equal the key put, if given
	Rate       int    `json:"rate"`
	PerSeconds int64  `json:"per_seconds"`
	Burst      int    `json:"burst,omitempty"`
}

// RateLimit is a tenant's limit on the starts of executions with its
// rate_key.
type RateLimit struct {
	rawJSON
	Key        string    `json:"key"`
	Rate       int       `json:"rate"`
	PerSeconds int64     `json:"per_seconds"`
	Burst      int       `json:"burst"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// PutRateLimit creates or replaces the limit of key (a replace keeps the
// bucket's state).
func (c *Client) PutRateLimit(ctx context.Context, key string, spec RateLimitSpec) (*RateLimit, error) {
	return c.rateLimitCall(ctx, http.MethodPut, key, spec, true)
}

// GetRateLimit reads the limit of key.
func (c *Client) GetRateLimit(ctx context.Context, key string) (*RateLimit, error) {
	return c.rateLimitCall(ctx, http.MethodGet, key, nil, true)
}

// DeleteRateLimit deletes the limit of key and answers it as it was.
func (c *Client) DeleteRateLimit(ctx context.Context, key string) (*RateLimit, error) {
	return c.rateLimitCall(ctx, http.MethodDelete, key, nil, false)
}

func (c *Client) rateLimitCall(ctx context.Context, method, key string, body any, idempotent bool) (*RateLimit, error) {
	var r RateLimit
	if _, err := c.Call(ctx, Request{Method: method, Path: "/api/rate-limits/" + seg(key), Body: body, Idempotent: idempotent}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
