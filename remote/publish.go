package remote

import (
	"context"
	"iter"
	"net/http"
	"time"
)

// Events and subscriptions (docs/api.md, "Events and subscriptions"). The
// change stream of one execution is Events (events.go), another thing.

type publishRequest struct {
	Name string `json:"name"`
	Data any    `json:"data,omitempty"`
	Key  string `json:"key,omitempty"`
}

// PublishOptions changes a publish.
type PublishOptions struct {
	// Key is the event's correlation key: a wait that names a key matches
	// only events published with it.
	Key string
	// IdempotencyKey (scoped to the tenant, kept while the event is
	// retained) makes a repeat answer the first answer and change nothing;
	// with it the client retries the publish, without it a publish is sent
	// once.
	IdempotencyKey string
}

// Published is a publish's answer: its event, how many waiting executions
// it resumed, and one EventStart per enabled subscription on the name, in
// subscription name order.
type Published struct {
	rawJSON
	EventID string       `json:"event_id"`
	Resumed int          `json:"resumed"`
	Started []EventStart `json:"started"`
}

// EventStart is one subscription's start: the execution it started, or the
// problem code ("quota_exceeded", "storage_exceeded") of the refusal that
// kept it from starting. A refused start does not fail the publish and is
// not tried again.
type EventStart struct {
	Subscription string `json:"subscription"`
	ExecutionID  string `json:"execution_id,omitempty"`
	Error        string `json:"error,omitempty"`
}

// Publish publishes the event name with data (any JSON value; nil sends
// null) for the client's tenant: in one operation it resumes the
// executions waiting for it and starts the subscriptions on its name. Past
// the tenant's storage budget it is ErrStorageExceeded, nothing published.
func (c *Client) Publish(ctx context.Context, name string, data any, opts PublishOptions) (*Published, error) {
	var hdr http.Header
	if opts.IdempotencyKey != "" {
		hdr = http.Header{"Idempotency-Key": {opts.IdempotencyKey}}
	}
	var r Published
	_, err := c.Call(ctx, Request{Method: http.MethodPost, Path: "/api/events", Header: hdr,
		Body: publishRequest{Name: name, Data: data, Key: opts.Key}, Idempotent: opts.IdempotencyKey != ""}, &r)
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// SubscriptionSpec is the body of PUT /api/subscriptions/{name}: start an
// execution of Kind for every event named Event. Zero settings take their
// defaults; Enabled nil is true.
type SubscriptionSpec struct {
	Name             string `json:"name,omitempty"` // must equal the name put, if given
	Event            string `json:"event"`
	Kind             string `json:"kind"`
	Queue            string `json:"queue,omitempty"`
	Priority         int    `json:"priority,omitempty"`
	MaxAttempts      int    `json:"max_attempts,omitempty"`
	TimeoutSeconds   int    `json:"timeout_seconds,omitempty"`
	ConcurrencyKey   string `json:"concurrency_key,omitempty"`
	ConcurrencyLimit int    `json:"concurrency_limit,omitempty"`
	Enabled          *bool  `json:"enabled,omitempty"`
}

// Subscription is a tenant's subscription, its defaults written out.
type Subscription struct {
	rawJSON
	Name             string    `json:"name"`
	Tenant           string    `json:"tenant"`
	Event            string    `json:"event"`
	Kind             string    `json:"kind"`
	Queue            string    `json:"queue"`
	Priority         int       `json:"priority"`
	MaxAttempts      int       `json:"max_attempts"`
	TimeoutSeconds   int       `json:"timeout_seconds"`
	ConcurrencyKey   *string   `json:"concurrency_key"`
	ConcurrencyLimit *int      `json:"concurrency_limit"`
	Enabled          bool      `json:"enabled"`
	CreatedAt        time.Time `json:"created_at"`
	UpdatedAt        time.Time `json:"updated_at"`
}

// SubscriptionPage is one page of the tenant's subscriptions by name (the
// admin's without a tenant: every tenant's, by tenant then name).
type SubscriptionPage struct {
	rawJSON
	Items      []Subscription `json:"items"`
	NextCursor *string        `json:"next_cursor"`
}

// PutSubscription creates or replaces the subscription name; created
// reports which. One more than the tenant's bound is
// ErrTooManySubscriptions, nothing written.
func (c *Client) PutSubscription(ctx context.Context, name string, spec SubscriptionSpec) (sub *Subscription, created bool, err error) {
	var s Subscription
	status, err := c.Call(ctx, Request{Method: http.MethodPut, Path: "/api/subscriptions/" + seg(name), Body: spec, Idempotent: true}, &s)
	if err != nil {
		return nil, false, err
	}
	return &s, status == http.StatusCreated, nil
}

// GetSubscription reads the subscription name.
func (c *Client) GetSubscription(ctx context.Context, name string) (*Subscription, error) {
	var s Subscription
	if _, err := c.Call(ctx, Request{Method: http.MethodGet, Path: "/api/subscriptions/" + seg(name), Idempotent: true}, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// SubscriptionsPage reads one page of subscriptions (limit 1-500, default
// 100: a tenant's every subscription).
func (c *Client) SubscriptionsPage(ctx context.Context, opts PageOptions) (*SubscriptionPage, error) {
	var p SubscriptionPage
	if _, err := c.Call(ctx, Request{Method: http.MethodGet, Path: "/api/subscriptions", Query: opts.query(), Idempotent: true}, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// Subscriptions yields every subscription, page after page; an error ends
// it.
func (c *Client) Subscriptions(ctx context.Context, opts PageOptions) iter.Seq2[*Subscription, error] {
	return pages(func(cursor string) ([]Subscription, *string, error) {
		opts.Cursor = cursor
		p, err := c.SubscriptionsPage(ctx, opts)
		if err != nil {
			return nil, nil, err
		}
		return p.Items, p.NextCursor, nil
	}, opts.Cursor)
}

// DeleteSubscription deletes the subscription name; the executions it
// started stay.
func (c *Client) DeleteSubscription(ctx context.Context, name string) error {
	_, err := c.Call(ctx, Request{Method: http.MethodDelete, Path: "/api/subscriptions/" + seg(name)}, nil)
	return err
}
