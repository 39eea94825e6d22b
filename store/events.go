package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Events (docs/flows.md, "Events"): a tenant publishes an event — a name,
// data, an optional correlation key — and in that one operation (Publish)
// every execution of the tenant suspended waiting for it resumes, and every
// enabled subscription on its name starts one execution. An event is kept
// for its tenant's EventRetention, so a wait that begins after the publish
// still finds it.
//
// The rules every backend keeps (I14):
//
//   - Publish records the event, resumes the waiting executions and starts
//     the subscriptions' executions in one atomic step. A repeat with the
//     same IdempotencyKey (scoped to the tenant, kept while the event is
//     retained) answers the first answer (PublishResult, Replayed set) and
//     changes nothing. So each (event, subscription) starts exactly one
//     execution however often, and on however many servers, the publish is
//     retried.
//   - A wait for an event (Suspend with SuspendParams.Event) matches an
//     event of that name, with its Key when the wait names one (a wait
//     without a key matches every key and none), published at or after the
//     wait's Since (zero = the execution's CreatedAt) and not consumed by
//     this execution before. Suspend first consumes the oldest retained
//     match (published_at, then publish order); only when there is none
//     does it suspend. Publish resumes every suspended wait its event
//     matches. A publish racing a suspend never loses the wake-up: the
//     backend orders the two (a lock on the tenant's event name, one
//     script), so either the suspend sees the event or the publish sees the
//     suspended wait.
//   - Each execution consumes each event at most once: the store keeps the
//     ids of the events an execution consumed (one per recorded step, so at
//     most MaxSteps) and deletes them with the execution.
//   - A wait ends once: by an event (the step is EventStep of it), or by
//     its timeout (Wake records TimedOut), never both.
//   - Events never cross tenants: a publish sees only its tenant's waits
//     and subscriptions, a wait only its tenant's events.
//   - An event counts EventSize in its tenant's storage budget from its
//     publish until Prune deletes it at ExpiresAt: ErrStorageExceeded
//     refuses a publish past the budget, nothing written.
//   - The step a wait records when an event ends it is a copy of the
//     event, one per wait: it counts its bytes (StoredSize of the step's
//     result) in its execution's StoredBytes and its tenant's, and goes
//     with the execution. A publish whose event and copies together pass
//     the budget is refused (ErrStorageExceeded, nothing written: no wait
//     resumed, no event kept); so is a wait whose copy of the retained
//     event it would consume passes it (nothing written, the lease kept,
//     the event left unconsumed). One publish can thus never make its
//     tenant keep more than its budget, however many waits it ends.

// EventWaitPrefix starts the WaitingFor of a wait for an event: the rest is
// the event's name.
const EventWaitPrefix = "event:"

// EventWaitFor is the WaitingFor of a wait for the event name.
func EventWaitFor(name string) string { return EventWaitPrefix + name }

// EventWaitName reports the event name a WaitingFor waits on, if it is a
// wait for an event.
func EventWaitName(waitingFor string) (string, bool) {
	return strings.CutPrefix(waitingFor, EventWaitPrefix)
}

// Bounds and defaults of events and subscriptions.
const (
	// DefaultEventRetention is a new tenant's EventRetention.
	DefaultEventRetention = 24 * time.Hour
	// MaxEventKeyLen bounds an event's correlation key (CheckText).
	MaxEventKeyLen = 256
	// MaxSubscriptions bounds one tenant's subscriptions:
	// ErrTooManySubscriptions past it.
	MaxSubscriptions = 100
	// MaxSubscriptionNameLen bounds a subscription's name (CheckIdent: it
	// travels in a URL path).
	MaxSubscriptionNameLen = 128
	// EventOverhead is what every event counts in its tenant's storage
	// budget beyond its name, key and data: an event of no data still
	// costs a row, so the budget bounds their number too (1 GiB holds
	// some 8 million).
	EventOverhead = 128
)

// ErrTooManySubscriptions refuses a PutSubscription that would give a
// tenant more than MaxSubscriptions. Nothing was written. Retry: yes,
// after one is deleted.
var ErrTooManySubscriptions = errors.New("too many subscriptions")

// Event is one published event.
type Event struct {
	ID     string // a UUIDv7, time-ordered like an execution's
	Tenant string
	Name   string
	Key    string // "" = none
	Data   json.RawMessage
	// PublishedAt is Publish's Now; ExpiresAt is PublishedAt plus the
	// tenant's EventRetention at that moment: Prune deletes the event
	// (and its idempotency key) once ExpiresAt is not after its Now.
	PublishedAt time.Time
	ExpiresAt   time.Time
}

// EventSize is what an event counts in its tenant's storage budget.
func EventSize(name, key string, data json.RawMessage) int64 {
	return int64(len(name)+len(key)+len(data)) + EventOverhead
}

// eventRecord is the JSON of an event as a wait's step and a started
// execution's payload: {"event_id", "name", "key", "data", "published_at"},
// key and data null when none.
type eventRecord struct {
	EventID     string          `json:"event_id"`
	Name        string          `json:"name"`
	Key         *string         `json:"key"`
	Data        json.RawMessage `json:"data"`
	PublishedAt time.Time       `json:"published_at"`
}

// EventStep encodes e as the step a wait for it records and the payload an
// execution its publish starts gets (canonical JSON; published_at in UTC).
func EventStep(e *Event) json.RawMessage {
	r := eventRecord{EventID: e.ID, Name: e.Name, Data: jsonOrNull(e.Data), PublishedAt: e.PublishedAt.UTC()}
	if e.Key != "" {
		r.Key = &e.Key
	}
	b, _ := json.Marshal(r)
	return b
}

// EventStepWithin is EventStep of e when the step (StepSize of name and
// it) fits in room bytes; else the event without its data: data null and
// "data_omitted": true. It is never refused: a wait's outcome always lands.
func EventStepWithin(name string, e *Event, room int) json.RawMessage {
	full := EventStep(e)
	if StepSize(name, full) <= room {
		return full
	}
	r := struct {
		eventRecord
		DataOmitted bool `json:"data_omitted"`
	}{eventRecord: eventRecord{EventID: e.ID, Name: e.Name, Data: json.RawMessage("null"), PublishedAt: e.PublishedAt.UTC()}, DataOmitted: true}
	if e.Key != "" {
		r.Key = &e.Key
	}
	b, _ := json.Marshal(r)
	return b
}

// PublishParams are the arguments of Store.Publish.
type PublishParams struct {
	Tenant string // required: events always belong to one tenant
	Name   string
	Key    string          // "" = none
	Data   json.RawMessage // canonical JSON; nil = null
	// IdempotencyKey, when set, makes the publish once-only within the
	// tenant while its event is retained.
	IdempotencyKey string
	// TraceParent is given to the executions the publish starts.
	TraceParent string
	Now         time.Time
}

// Check reports whether p is a valid publish: a name (CheckSignalName),
// a key within MaxEventKeyLen (CheckText), an idempotency key within
// MaxKeyLen, data within maxPayload. The store checks the same as a
// backstop (ErrInvalid).
func (p *PublishParams) Check(maxPayload int) error {
	return first(
		CheckSignalName(p.Name),
		given(p.Key != "", CheckText("key", p.Key, MaxEventKeyLen)),
		given(p.IdempotencyKey != "", CheckKey("idempotency_key", p.IdempotencyKey)),
		CheckPayloadSize("data", p.Data, maxPayload),
		CheckTraceParent("trace_parent", p.TraceParent),
	)
}

// PublishResult is what a publish did: its event, how many waiting
// executions it resumed, and one EventStart per enabled subscription on
// the name, in subscription name order. Replayed marks the answer of a
// repeat of an IdempotencyKey (the first publish's answer, nothing done).
type PublishResult struct {
	EventID  string
	Resumed  int
	Started  []EventStart
	Replayed bool
}

// EventStart is one subscription's start: the execution it started (or
// found under its dedup key, EventDedupKey), or the refusal that kept it
// from starting: ErrQuotaExceeded or ErrStorageExceeded. A refused start
// does not fail the publish, and is not tried again.
type EventStart struct {
	Subscription string
	ExecutionID  string
	Err          error
}

// EventDedupKey is the dedup key of the execution an event starts for a
// subscription.
func EventDedupKey(eventID, subscription string) string {
	return "event:" + eventID + ":" + subscription
}

// startRecord is an EventStart as a backend keeps it with the event's
// answer (MarshalPublishAnswer).
type startRecord struct {
	Subscription string `json:"subscription"`
	ExecutionID  string `json:"execution_id,omitempty"`
	Error        string `json:"error,omitempty"`
}

// publishAnswer is a PublishResult as a backend keeps it.
type publishAnswer struct {
	EventID string        `json:"event_id"`
	Resumed int           `json:"resumed"`
	Started []startRecord `json:"started"`
}

// startRefusals are the refusals an EventStart may carry, by the code
// MarshalPublishAnswer keeps.
var startRefusals = map[string]error{
	"quota_exceeded":   ErrQuotaExceeded,
	"storage_exceeded": ErrStorageExceeded,
}

// MarshalPublishAnswer encodes r for a backend to keep with its event, so
// that a repeat of the publish's IdempotencyKey answers it
// (UnmarshalPublishAnswer). A start's Err is kept by its code.
func MarshalPublishAnswer(r *PublishResult) json.RawMessage {
	a := publishAnswer{EventID: r.EventID, Resumed: r.Resumed, Started: make([]startRecord, len(r.Started))}
	for i, s := range r.Started {
		a.Started[i] = startRecord{Subscription: s.Subscription, ExecutionID: s.ExecutionID}
		for code, sentinel := range startRefusals {
			if errors.Is(s.Err, sentinel) {
				a.Started[i].Error = code
			}
		}
	}
	b, _ := json.Marshal(a)
	return b
}

// UnmarshalPublishAnswer decodes a kept answer, Replayed set.
func UnmarshalPublishAnswer(b []byte) (*PublishResult, error) {
	var a publishAnswer
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("store: publish answer: %w", err)
	}
	r := &PublishResult{EventID: a.EventID, Resumed: a.Resumed, Replayed: true, Started: make([]EventStart, len(a.Started))}
	for i, s := range a.Started {
		r.Started[i] = EventStart{Subscription: s.Subscription, ExecutionID: s.ExecutionID}
		if s.Error != "" {
			r.Started[i].Err = startRefusals[s.Error]
		}
	}
	return r, nil
}

// EventMatches reports whether an event of key published at publishedAt
// matches a wait for its name with waitKey ("" = any) and since.
func EventMatches(key string, publishedAt time.Time, waitKey string, since time.Time) bool {
	return (waitKey == "" || waitKey == key) && !publishedAt.Before(since)
}

// Subscription starts an execution of Kind for every event named Event
// that its tenant publishes while it is Enabled.
type Subscription struct {
	Tenant string
	Name   string
	Event  string
	// The started execution's settings, as a submission's (zero =
	// default).
	Kind             string
	Queue            string
	Priority         int
	MaxAttempts      int
	TimeoutSeconds   int
	ConcurrencyKey   string
	ConcurrencyLimit int
	Enabled          bool
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// Check reports whether s is a valid subscription: a name (CheckIdent up
// to MaxSubscriptionNameLen), an event name (CheckSignalName), and the
// submission fields under their submission rules.
func (s *Subscription) Check() error {
	if err := CheckIdent("name", s.Name, MaxSubscriptionNameLen); err != nil {
		return err
	}
	if err := CheckSignalName(s.Event); err != nil {
		return &FieldError{Field: "event", Rule: err.Error()}
	}
	sub := Submission{Kind: s.Kind, Queue: s.Queue, Priority: s.Priority, MaxAttempts: s.MaxAttempts,
		TimeoutSeconds: s.TimeoutSeconds, ConcurrencyKey: s.ConcurrencyKey, ConcurrencyLimit: s.ConcurrencyLimit}
	return CheckSubmission(&sub, time.Time{}, DefaultMaxPayloadBytes)
}

// StartSubmission is the submission a publish of e admits for s: s's
// settings, the event (EventStep) as payload, EventDedupKey as dedup key.
// Its payload is not held to the payload limit again (the event's data
// was, at publish).
func (s *Subscription) StartSubmission(e *Event, traceParent string) *Submission {
	return &Submission{
		Kind: s.Kind, Queue: s.Queue, Priority: s.Priority, MaxAttempts: s.MaxAttempts,
		TimeoutSeconds: s.TimeoutSeconds, ConcurrencyKey: s.ConcurrencyKey,
		ConcurrencyLimit: s.ConcurrencyLimit, Payload: EventStep(e),
		DedupKey: EventDedupKey(e.ID, s.Name), TraceParent: traceParent,
	}
}

// PutSubscriptionParams are the arguments of Store.PutSubscription.
type PutSubscriptionParams struct {
	Subscription Subscription // Tenant and Name say which
	// MaxSubscriptions overrides the bound when above 0 (tests only).
	MaxSubscriptions int
	Now              time.Time
}

// SubscriptionBound is the bound of a tenant's subscriptions this call
// enforces.
func (p *PutSubscriptionParams) SubscriptionBound() int {
	return bound(p.MaxSubscriptions, MaxSubscriptions)
}

// PutSubscriptionResult is the subscription as stored; Created when the
// call made it (a replace keeps CreatedAt).
type PutSubscriptionResult struct {
	Subscription *Subscription
	Created      bool
}

// GetSubscriptionParams are the arguments of Store.GetSubscription.
type GetSubscriptionParams struct {
	Tenant string
	Name   string
}

// ListSubscriptionsParams are the arguments of Store.ListSubscriptions: a
// page in tenant then name order.
type ListSubscriptionsParams struct {
	Tenant string // "" = every tenant's
	// After lists only the subscriptions after it in tenant then name
	// order: the next page after a page that ended there (the page's last
	// need not exist any more). The zero value starts at the beginning.
	After SubscriptionRef
	// Limit bounds the page; 0 or less = DefaultSubscriptionListLimit,
	// which holds every subscription of a tenant at MaxSubscriptions.
	Limit int
}

// SubscriptionRef names a subscription: its tenant and its name.
type SubscriptionRef struct {
	Tenant string
	Name   string
}

// DefaultSubscriptionListLimit is how many subscriptions ListSubscriptions
// returns when its Limit is 0 or less: ten tenants' worth at their bound.
const DefaultSubscriptionListLimit = 10 * MaxSubscriptions

// ListLimit is the most subscriptions ListSubscriptions returns for p.
func (p *ListSubscriptionsParams) ListLimit() int {
	if p.Limit <= 0 {
		return DefaultSubscriptionListLimit
	}
	return p.Limit
}

// DeleteSubscriptionParams are the arguments of Store.DeleteSubscription.
type DeleteSubscriptionParams struct {
	Tenant string
	Name   string
}

// checkEventRetention checks a given event retention: 1s..MaxTenantDuration.
// (A zero CreateTenantParams.EventRetention takes the default before it
// is checked; an update always gives one.)
func checkEventRetention(v *time.Duration) error {
	if v != nil && (*v < time.Second || *v > MaxTenantDuration) {
		return fmt.Errorf("%w: event_retention %v not in 1s..%v", ErrInvalid, *v, MaxTenantDuration)
	}
	return nil
}
