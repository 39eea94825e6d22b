package api

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/latch-run/latch/store"
)

// Subscriptions (docs/api.md, "Events and subscriptions"): a tenant's
// standing order to start an execution of a kind for every event of a
// name it publishes.

// The page size of GET /api/subscriptions, by tenant then name: a
// tenant's every subscription (store.MaxSubscriptions) by default.
const (
	defaultListedSubscriptions = 100
	maxListedSubscriptions     = 500
)

// subscriptionOwner completes the problem of an admin that did not name
// the tenant of a subscription.
const subscriptionOwner = "that owns the subscription"

// subscriptionName names one subscription by its path value.
type subscriptionName struct {
	name string
}

// bind: a name no subscription can have is answered like a missing one.
func (r *subscriptionName) bind(hr *http.Request) error {
	if _, err := query(hr); err != nil {
		return err
	}
	r.name = hr.PathValue("name")
	if store.CheckIdent("name", r.name, store.MaxSubscriptionNameLen) != nil {
		return problem(CodeNotFound, "subscription %q not found", r.name)
	}
	return nil
}

// putSubscriptionRequest is the body of PUT /api/subscriptions/{name}.
// Optional fields are pointers: absent and null take the default. A GET
// answer may be sent back as it is: "name" must equal the path's, and the
// read-only fields (tenant, created_at, updated_at) are checked for type
// and ignored.
type putSubscriptionRequest struct {
	path string // the name in the path

	Name             *string `json:"name"`
	Event            *string `json:"event"`
	Kind             *string `json:"kind"`
	Queue            *string `json:"queue"`
	Priority         *int64  `json:"priority"`
	MaxAttempts      *int64  `json:"max_attempts"`
	TimeoutSeconds   *int64  `json:"timeout_seconds"`
	ConcurrencyKey   *string `json:"concurrency_key"`
	ConcurrencyLimit *int64  `json:"concurrency_limit"`
	Enabled          *bool   `json:"enabled"`
	Tenant           *string `json:"tenant"`     // read-only: checked for type, then ignored
	CreatedAt        *string `json:"created_at"` // read-only: checked for type, then ignored
	UpdatedAt        *string `json:"updated_at"` // read-only: checked for type, then ignored
}

func (r *putSubscriptionRequest) bind(hr *http.Request) error {
	if _, err := query(hr); err != nil {
		return err
	}
	r.path = hr.PathValue("name")
	return nil
}

func (r *putSubscriptionRequest) validate() error {
	if err := fieldProblem(store.CheckIdent("name", r.path, store.MaxSubscriptionNameLen)); err != nil {
		return err
	}
	if r.Name != nil && *r.Name != r.path {
		return invalid("name", "must equal the name in the path; a subscription cannot be renamed")
	}
	if r.Event == nil {
		return invalid("event", "required")
	}
	if err := fieldProblem(renamed(store.CheckSignalName(*r.Event), "event")); err != nil {
		return err
	}
	if r.Kind == nil {
		return invalid("kind", "required")
	}
	if err := fieldProblem(store.CheckKind("kind", *r.Kind)); err != nil {
		return err
	}
	if r.Queue != nil {
		if err := fieldProblem(store.CheckQueue("queue", *r.Queue)); err != nil {
			return err
		}
	}
	if r.Priority != nil {
		if err := fieldProblem(store.CheckPriority("priority", *r.Priority)); err != nil {
			return err
		}
	}
	if r.MaxAttempts != nil {
		if err := fieldProblem(store.CheckMaxAttempts("max_attempts", *r.MaxAttempts)); err != nil {
			return err
		}
	}
	if r.TimeoutSeconds != nil {
		if err := fieldProblem(store.CheckTimeoutSeconds("timeout_seconds", *r.TimeoutSeconds)); err != nil {
			return err
		}
	}
	if r.ConcurrencyKey != nil {
		if err := fieldProblem(store.CheckKey("concurrency_key", *r.ConcurrencyKey)); err != nil {
			return err
		}
	}
	if r.ConcurrencyLimit != nil {
		if r.ConcurrencyKey == nil {
			return invalid("concurrency_limit", "needs concurrency_key")
		}
		return fieldProblem(store.CheckConcurrencyLimit("concurrency_limit", *r.ConcurrencyLimit))
	}
	return nil
}

// subscription is the request as the tenant's store.Subscription.
func (r *putSubscriptionRequest) subscription(tenant string) store.Subscription {
	sub := store.Subscription{
		Tenant:         tenant,
		Name:           r.path,
		Event:          *r.Event,
		Kind:           *r.Kind,
		Priority:       int(orDefault(r.Priority, 0)),
		MaxAttempts:    int(orDefault(r.MaxAttempts, 0)),
		TimeoutSeconds: int(orDefault(r.TimeoutSeconds, 0)),
		Enabled:        r.Enabled == nil || *r.Enabled,
	}
	if r.Queue != nil {
		sub.Queue = *r.Queue
	}
	if r.ConcurrencyKey != nil {
		sub.ConcurrencyKey = *r.ConcurrencyKey
		sub.ConcurrencyLimit = int(orDefault(r.ConcurrencyLimit, store.DefaultConcurrencyLimit))
	}
	return sub
}

// subscriptionView is the subscription JSON of PUT and GET
// /api/subscriptions/{name}. Settings left to their defaults are answered
// with their effective value (queue "default", max_attempts 3, ...), so an
// answer PUT back changes nothing; concurrency_key and concurrency_limit
// are null without a key.
type subscriptionView struct {
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

func toSubscription(s *store.Subscription) *subscriptionView {
	v := &subscriptionView{
		Name:           s.Name,
		Tenant:         s.Tenant,
		Event:          s.Event,
		Kind:           s.Kind,
		Queue:          cmp.Or(s.Queue, store.DefaultQueue),
		Priority:       s.Priority,
		MaxAttempts:    cmp.Or(s.MaxAttempts, store.DefaultMaxAttempts),
		TimeoutSeconds: cmp.Or(s.TimeoutSeconds, store.DefaultTimeoutSeconds),
		ConcurrencyKey: optString(s.ConcurrencyKey),
		Enabled:        s.Enabled,
		CreatedAt:      s.CreatedAt.UTC(),
		UpdatedAt:      s.UpdatedAt.UTC(),
	}
	if s.ConcurrencyKey != "" {
		n := cmp.Or(s.ConcurrencyLimit, store.DefaultConcurrencyLimit)
		v.ConcurrencyLimit = &n
	}
	return v
}

// putSubscriptionResponse is a PUT's answer: 201 created, 200 replaced.
type putSubscriptionResponse struct {
	*subscriptionView
	status int
}

func (r *putSubscriptionResponse) statusCode() int { return r.status }

// putSubscription is PUT /api/subscriptions/{name}: create or replace,
// atomically; one more than store.MaxSubscriptions is refused with 409
// too_many_subscriptions (the store counts and inserts in one step).
func (s *Server) putSubscription(ctx context.Context, req *putSubscriptionRequest) (*putSubscriptionResponse, error) {
	owner, err := principalFrom(ctx).ownerOf(subscriptionOwner)
	if err != nil {
		return nil, err
	}
	p := store.PutSubscriptionParams{Subscription: req.subscription(owner), Now: s.cfg.Now()}
	if err := fieldProblem(p.Subscription.Check()); err != nil {
		return nil, err
	}
	res, err := s.cfg.Store.PutSubscription(ctx, &p)
	switch {
	case errors.Is(err, store.ErrTooManySubscriptions):
		return nil, problem(CodeTooManySubscriptions, "tenant %q is at its bound of %d subscriptions; delete one first (replacing one is allowed)",
			owner, p.SubscriptionBound())
	case err != nil:
		return nil, tenantErr(err, owner)
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	return &putSubscriptionResponse{toSubscription(res.Subscription), status}, nil
}

type subscriptionList struct {
	Items      []*subscriptionView `json:"items"`
	NextCursor *string             `json:"next_cursor"`
}

// subscriptionListRequest is GET /api/subscriptions with its page.
type subscriptionListRequest struct {
	limit int
	after store.SubscriptionRef
}

func (r *subscriptionListRequest) bind(hr *http.Request) (err error) {
	r.limit, r.after.Tenant, r.after.Name, err = bindNamePage(hr, defaultListedSubscriptions, maxListedSubscriptions)
	return err
}

// listSubscriptions is GET /api/subscriptions: a page of the caller's
// tenant's subscriptions, or for the admin without Latch-Tenant every
// tenant's, by tenant then name; next_cursor continues after its last.
func (s *Server) listSubscriptions(ctx context.Context, req *subscriptionListRequest) (*subscriptionList, error) {
	list, err := s.cfg.Store.ListSubscriptions(ctx, &store.ListSubscriptionsParams{
		Tenant: principalFrom(ctx).scope(), Limit: req.limit + 1, After: req.after,
	})
	if err != nil {
		return nil, err
	}
	page, next := namePage(list, req.limit, func(sub *store.Subscription) (string, string) { return sub.Tenant, sub.Name })
	out := &subscriptionList{Items: make([]*subscriptionView, len(page)), NextCursor: next}
	for i, sub := range page {
		out.Items[i] = toSubscription(sub)
	}
	return out, nil
}

// getSubscription is GET /api/subscriptions/{name}.
func (s *Server) getSubscription(ctx context.Context, req *subscriptionName) (*subscriptionView, error) {
	owner, err := principalFrom(ctx).ownerOf(subscriptionOwner)
	if err != nil {
		return nil, err
	}
	sub, err := s.cfg.Store.GetSubscription(ctx, &store.GetSubscriptionParams{Tenant: owner, Name: req.name})
	if err != nil {
		return nil, subscriptionErr(err, req.name)
	}
	return toSubscription(sub), nil
}

// deleteSubscription is DELETE /api/subscriptions/{name}: later publishes
// start nothing for it; the executions it started stay.
func (s *Server) deleteSubscription(ctx context.Context, req *subscriptionName) (*noContent, error) {
	owner, err := principalFrom(ctx).ownerOf(subscriptionOwner)
	if err != nil {
		return nil, err
	}
	if err := s.cfg.Store.DeleteSubscription(ctx, &store.DeleteSubscriptionParams{Tenant: owner, Name: req.name}); err != nil {
		return nil, subscriptionErr(err, req.name)
	}
	return &noContent{}, nil
}

// subscriptionErr gives a missing subscription a detail that names it.
func subscriptionErr(err error, name string) error {
	if errors.Is(err, store.ErrNotFound) {
		return problem(CodeNotFound, "subscription %q not found", name)
	}
	return err
}
