package latch

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/latch-run/latch/internal/tracing"
	"github.com/latch-run/latch/store"
)

// Events (docs/flows.md, "Events"): a tenant publishes an event — a name,
// data, an optional correlation key — and in that one store operation
// every execution of the tenant waiting for it (Job.WaitEvent) resumes and
// every enabled subscription on its name starts one execution, whose
// payload is the event (DecodeEvent). An event is kept for the tenant's
// EventRetention, so a wait that begins after the publish still finds it.

// ErrTooManySubscriptions: PutSubscription that would give the tenant
// more than store.MaxSubscriptions subscriptions. Nothing was written.
// Retry: once one is deleted.
var ErrTooManySubscriptions = store.ErrTooManySubscriptions

// Event is one published event, as a wait for it recorded it
// (Job.WaitEvent) or as the payload of an execution a subscription started
// (DecodeEvent).
type Event struct {
	ID   string
	Name string
	Key  string // "" = none
	// Data is the event's data as JSON (null when none).
	Data        json.RawMessage
	PublishedAt time.Time
	// DataOmitted: the data did not fit in the waiting execution's journal
	// and was left out (Data is null).
	DataOmitted bool
}

// Decode unmarshals the event's data into v.
func (e *Event) Decode(v any) error {
	if e.DataOmitted {
		return fmt.Errorf("latch: event %s: its data did not fit in the journal and was left out", e.ID)
	}
	return json.Unmarshal(e.Data, v)
}

// eventRecord is an event as a step and a started execution's payload
// hold it (store.EventStep).
type eventRecord struct {
	EventID     string          `json:"event_id"`
	Name        string          `json:"name"`
	Key         *string         `json:"key"`
	Data        json.RawMessage `json:"data"`
	PublishedAt time.Time       `json:"published_at"`
	DataOmitted bool            `json:"data_omitted"`
}

// DecodeEvent reads the event in raw: the payload of an execution a
// subscription started (Job.Payload), or a wait's recorded step.
func DecodeEvent(raw json.RawMessage) (*Event, error) {
	var r eventRecord
	if err := json.Unmarshal(raw, &r); err != nil || r.EventID == "" {
		return nil, fmt.Errorf("latch: %w: not an event: %s", ErrInvalid, truncate(raw, 80))
	}
	e := &Event{ID: r.EventID, Name: r.Name, Data: r.Data, PublishedAt: r.PublishedAt, DataOmitted: r.DataOmitted}
	if r.Key != nil {
		e.Key = *r.Key
	}
	if len(e.Data) == 0 {
		e.Data = json.RawMessage("null")
	}
	return e, nil
}

func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}

// WaitEventOptions change WaitEvent.
type WaitEventOptions struct {
	// Key matches only events published with this correlation key; ""
	// matches any key, and none.
	Key string
	// Since matches only events published at or after it. Zero: the
	// execution's creation, so an event published after the execution
	// was submitted, and before its wait began, is not missed.
	Since time.Time
	// Timeout ends the wait after this long with ErrWaitTimedOut; 0 = none.
	Timeout time.Duration
}

// WaitEvent waits, as the flow step name, for an event called event and
// returns it. The oldest retained event of that name (and opts.Key) that
// this execution has not consumed before, published at or after
// opts.Since, is consumed: then the step is recorded and the execution
// runs again at once. Otherwise it is suspended, holding no worker, until
// such an event is published or opts.Timeout passes. Until the wait is
// over WaitEvent returns ErrSuspended: return it from the handler at once.
// When the timeout ended it, WaitEvent returns ErrWaitTimedOut (and no
// event). An event published after it left the tenant's EventRetention is
// not found.
func (j *Job) WaitEvent(ctx context.Context, name, event string, opts WaitEventOptions) (*Event, error) {
	if err := store.CheckSignalName(event); err != nil {
		return nil, Permanent(fmt.Errorf("latch: wait %q: event: %w", name, err))
	}
	if opts.Key != "" {
		if err := store.CheckText("key", opts.Key, store.MaxEventKeyLen); err != nil {
			return nil, Permanent(fmt.Errorf("latch: wait %q: %w", name, err))
		}
	}
	raw, err := j.flow().WaitEvent(ctx, name, event, opts.Key, opts.Since, opts.Timeout)
	if err != nil {
		return nil, err
	}
	e, err := DecodeEvent(raw)
	if err != nil {
		return nil, Permanent(fmt.Errorf("step %q: %w", name, err))
	}
	return e, nil
}

// PublishOptions change Publish.
type PublishOptions struct {
	// Key is the event's correlation key (at most store.MaxEventKeyLen
	// characters): a wait with a Key matches only events published with
	// it. "" = none.
	Key string
	// IdempotencyKey makes the publish once-only within the tenant while
	// its event is kept (the tenant's EventRetention): a repeat answers
	// what the first publish answered (Published.Replayed) and changes
	// nothing.
	IdempotencyKey string
}

// Published is what a publish did.
type Published struct {
	EventID string
	// Resumed counts the executions waiting for the event it resumed.
	Resumed int
	// Started holds one EventStart per enabled subscription on the name,
	// in subscription name order.
	Started []EventStart
	// Replayed: the IdempotencyKey was used before; this is the first
	// publish's answer, and nothing was done.
	Replayed bool
}

// EventStart is one subscription's start: the execution it started, or
// the refusal that kept it from starting (Err: ErrQuotaExceeded or
// ErrStorageExceeded). A refused start does not fail the publish and is
// not tried again.
type EventStart struct {
	Subscription string
	ExecutionID  string
	Err          error
}

// Publish publishes the event name for tenant with data (marshalled to
// JSON; nil is null). In one store operation it records the event for the
// tenant's EventRetention, resumes every execution of the tenant waiting
// for it (Job.WaitEvent), and starts one execution per enabled
// subscription on the name, with the event as payload. Errors: ErrInvalid,
// ErrNotFound (no such tenant), ErrStorageExceeded (nothing published).
func (c *Client) Publish(ctx context.Context, tenant, name string, data any, opts PublishOptions) (*Published, error) {
	if err := validTenantName(tenant); err != nil {
		return nil, err
	}
	var raw json.RawMessage
	if data != nil {
		var err error
		if raw, err = marshalPayload(data); err != nil {
			return nil, fmt.Errorf("latch: publish %s: %w", name, err)
		}
	}
	p := store.PublishParams{Tenant: tenant, Name: name, Key: opts.Key, Data: raw, IdempotencyKey: opts.IdempotencyKey,
		TraceParent: tracing.Current(ctx), Now: time.Now()}
	if err := p.Check(store.DefaultMaxPayloadBytes); err != nil {
		return nil, fmt.Errorf("latch: publish %s: %w", name, err)
	}
	res, err := c.st.Publish(ctx, &p)
	if err != nil {
		return nil, fmt.Errorf("latch: publish %s: %w", name, err)
	}
	out := &Published{EventID: res.EventID, Resumed: res.Resumed, Replayed: res.Replayed, Started: make([]EventStart, len(res.Started))}
	for i, s := range res.Started {
		out.Started[i] = EventStart{Subscription: s.Subscription, ExecutionID: s.ExecutionID, Err: s.Err}
	}
	return out, nil
}

// Subscription starts an execution of Kind for every event called Event
// its tenant publishes while it is enabled; the execution's payload is the
// event (DecodeEvent). Zero settings take a submission's defaults.
type Subscription struct {
	Name  string // 1–128 of A-Z a-z 0-9 . _ : -
	Event string
	Kind  string
	// The started executions' settings, as SubmitRequest's.
	Queue            string
	Priority         int
	MaxAttempts      int
	Timeout          time.Duration // whole seconds
	ConcurrencyKey   string
	ConcurrencyLimit int
	// Disabled: it starts nothing until enabled again.
	Disabled bool

	// Read-only: set by the store.
	Tenant    string
	CreatedAt time.Time
	UpdatedAt time.Time
}

func fromStoreSubscription(s *store.Subscription) *Subscription {
	return &Subscription{
		Name: s.Name, Event: s.Event, Kind: s.Kind, Queue: s.Queue, Priority: s.Priority, MaxAttempts: s.MaxAttempts,
		Timeout: time.Duration(s.TimeoutSeconds) * time.Second, ConcurrencyKey: s.ConcurrencyKey,
		ConcurrencyLimit: s.ConcurrencyLimit, Disabled: !s.Enabled,
		Tenant: s.Tenant, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
	}
}

// PutSubscription creates or replaces tenant's subscription sub.Name
// (created reports which; a replace keeps CreatedAt) and returns it as
// stored. Errors: ErrInvalid, ErrNotFound (no such tenant),
// ErrTooManySubscriptions (nothing written).
func (c *Client) PutSubscription(ctx context.Context, tenant string, sub Subscription) (stored *Subscription, created bool, err error) {
	if err := validTenantName(tenant); err != nil {
		return nil, false, err
	}
	if sub.Timeout < 0 || sub.Timeout%time.Second != 0 {
		return nil, false, invalid("timeout", "must be whole seconds, not negative")
	}
	s := store.Subscription{
		Tenant: tenant, Name: sub.Name, Event: sub.Event, Kind: sub.Kind, Queue: sub.Queue, Priority: sub.Priority,
		MaxAttempts: sub.MaxAttempts, TimeoutSeconds: int(sub.Timeout / time.Second), ConcurrencyKey: sub.ConcurrencyKey,
		ConcurrencyLimit: sub.ConcurrencyLimit, Enabled: !sub.Disabled,
	}
	if s.ConcurrencyKey != "" && s.ConcurrencyLimit == 0 {
		s.ConcurrencyLimit = store.DefaultConcurrencyLimit
	}
	if err := s.Check(); err != nil {
		return nil, false, fmt.Errorf("latch: subscription %s: %w", sub.Name, err)
	}
	res, err := c.st.PutSubscription(ctx, &store.PutSubscriptionParams{Subscription: s, Now: time.Now()})
	if err != nil {
		return nil, false, fmt.Errorf("latch: put subscription %s: %w", sub.Name, err)
	}
	return fromStoreSubscription(res.Subscription), res.Created, nil
}

// Subscription reads tenant's subscription name. ErrNotFound if there is
// none.
func (c *Client) Subscription(ctx context.Context, tenant, name string) (*Subscription, error) {
	s, err := c.st.GetSubscription(ctx, &store.GetSubscriptionParams{Tenant: tenant, Name: name})
	if err != nil {
		return nil, fmt.Errorf("latch: subscription %s: %w", name, err)
	}
	return fromStoreSubscription(s), nil
}

// Subscriptions reads tenant's subscriptions by name ("" = every
// tenant's, by tenant then name), the store's pages one after the other.
func (c *Client) Subscriptions(ctx context.Context, tenant string) ([]*Subscription, error) {
	var out []*Subscription
	p := store.ListSubscriptionsParams{Tenant: tenant}
	for {
		list, err := c.st.ListSubscriptions(ctx, &p)
		if err != nil {
			return nil, fmt.Errorf("latch: subscriptions: %w", err)
		}
		for _, s := range list {
			out = append(out, fromStoreSubscription(s))
		}
		if len(list) < p.ListLimit() {
			return out, nil
		}
		last := list[len(list)-1]
		p.After = store.SubscriptionRef{Tenant: last.Tenant, Name: last.Name}
	}
}

// DeleteSubscription deletes tenant's subscription name: later publishes
// start nothing for it; the executions it started stay. ErrNotFound if
// there is none.
func (c *Client) DeleteSubscription(ctx context.Context, tenant, name string) error {
	if err := c.st.DeleteSubscription(ctx, &store.DeleteSubscriptionParams{Tenant: tenant, Name: name}); err != nil {
		return fmt.Errorf("latch: delete subscription %s: %w", name, err)
	}
	return nil
}
