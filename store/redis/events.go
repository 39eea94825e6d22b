package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/store"
)

// Events and subscriptions (store/events.go) are kept in their tenant's
// namespace beside its executions (lib.lua's events section): an event's
// hash with its step already encoded (store.EventStep, and the same
// without its data), its place in the index of its name (and of its name
// and key) by published_at then publish order, its expiry in the tenant's
// expiry index and its idempotency key's kept answer; the waits for each
// event name, scored by their since; the events each execution consumed.
// A subscription is a hash with the template of the execution it starts
// (as a schedule keeps its tick's), named in its tenant's index and its
// event's. Publish is one script (publish.lua); a wait for an event is
// suspend.lua's, its timeout wake.lua's; Prune and DeleteTenant delete
// events with their indexes and give their bytes back.

// Publish implements store.Store with one script (publish.lua): the
// idempotency key's lookup, the storage check (the event with the copy
// each wait it ends records), the event, the waits it ends and the
// subscriptions' starts are one step. The script is told the ids of the
// executions it may start; when the tenant has more enabled
// subscriptions on the name than ids (one was added since they were
// counted), it changes nothing and the call runs again with enough.
func (s *Store) Publish(ctx context.Context, p *store.PublishParams) (*store.PublishResult, error) {
	if p.Tenant == "" {
		return nil, fmt.Errorf("%w: an event needs its tenant", store.ErrInvalid)
	}
	// The data's size is the callers' to bound (their configured payload
	// limit); its budget is the tenant's storage.
	if err := p.Check(math.MaxInt); err != nil {
		return nil, err
	}
	if len(p.Data) > 0 && !json.Valid(p.Data) {
		return nil, &store.FieldError{Field: "data", Rule: "must be JSON"}
	}
	nowUS := us(now(p.Now))
	e := &store.Event{ID: uuid.Must(uuid.NewV7()).String(), Tenant: p.Tenant, Name: p.Name, Key: p.Key,
		Data: p.Data, PublishedAt: fromUS(nowUS)}
	step := store.EventStep(e)
	lean := store.EventStepWithin("", e, 0)
	c, ck := scoped(p.Tenant, p.Name), eventKeyScope(p.Tenant, p.Name, p.Key)
	keys := []string{s.k.tenant(p.Tenant), s.k.eventIdem(p.Tenant), s.k.event(e.ID), s.k.eventsByName(c),
		s.k.eventsByKey(ck), s.k.eventExp(p.Tenant), s.k.eventWaits(c), s.k.eventWaitsKey(ck), s.k.subsByEvent(c)}
	n, err := s.rdb.ZCard(ctx, s.k.subsByEvent(c)).Result()
	if err != nil {
		return nil, fmt.Errorf("redis: publish: %w", interpretError(err))
	}
	for range 3 {
		args := []any{s.k.ns, p.Tenant, e.ID, p.Name, p.Key, p.IdempotencyKey, itoa(nowUS), timeLex(nowUS),
			string(step), string(lean), itoa(store.EventSize(p.Name, p.Key, p.Data)),
			itoa(durUS(store.DefaultEventRetention)), p.TraceParent, n}
		for range n {
			args = append(args, uuid.Must(uuid.NewV7()).String())
		}
		arr, err := s.run(ctx, "publish", scriptPublish, keys, args...)
		if err != nil {
			return nil, err
		}
		switch asString(at(arr, 0)) {
		case "MOREIDS":
			n = asInt(at(arr, 1))
			continue
		case "REPLAY":
			return store.UnmarshalPublishAnswer([]byte(asString(at(arr, 1))))
		case "OK":
		default:
			return nil, status(arr, fmt.Sprintf("tenant %q", p.Tenant))
		}
		s.note.ack(asInt(at(arr, 1)))
		res, err := store.UnmarshalPublishAnswer([]byte(asString(at(arr, 2))))
		if err != nil {
			return nil, err
		}
		res.Replayed = false
		if ids := arr[min(4, len(arr)):]; len(ids) > 0 {
			changed := make([]string, len(ids))
			for i, v := range ids {
				changed[i] = asString(v)
			}
			s.feed.Publish(changed...)
		}
		return res, nil
	}
	return nil, fmt.Errorf("redis: publish: the subscriptions of %q keep changing", p.Name)
}

// PutSubscription implements store.Store (put_subscription.lua). The
// execution a publish starts for it is built here (store.NewExecution of
// its StartSubmission) and kept with it as a template, so that the script
// applies the same defaults Admit applies.
func (s *Store) PutSubscription(ctx context.Context, p *store.PutSubscriptionParams) (*store.PutSubscriptionResult, error) {
	sub := p.Subscription
	if err := sub.Check(); err != nil {
		return nil, err
	}
	t := now(p.Now)
	x := store.NewExecution("", sub.Tenant, sub.StartSubmission(&store.Event{}, ""), t)
	climit := ""
	if x.ConcurrencyKey != "" {
		climit = strconv.Itoa(x.ConcurrencyLimit)
	}
	arr, err := s.run(ctx, "put subscription", scriptPutSubscription,
		[]string{s.k.tenant(sub.Tenant), s.k.subscription(scoped(sub.Tenant, sub.Name)), s.k.subscriptions(sub.Tenant)},
		s.k.ns, sub.Tenant, sub.Name, sub.Event, itoa(us(t)), p.SubscriptionBound(),
		"kind", sub.Kind, "queue", sub.Queue, "prio", sub.Priority, "maxatt", sub.MaxAttempts,
		"timeout", sub.TimeoutSeconds, "ckey", sub.ConcurrencyKey, "climit", sub.ConcurrencyLimit,
		"enabled", flag(sub.Enabled), "qp", prioLex(x.Priority), "x_queue", x.Queue, "x_maxatt", x.MaxAttempts,
		"x_timeout", x.TimeoutSeconds, "x_ckey", x.ConcurrencyKey, "x_climit", climit)
	if err != nil {
		return nil, err
	}
	if asString(at(arr, 0)) == "TOOMANY" {
		return nil, fmt.Errorf("tenant %q has %d subscriptions: %w", sub.Tenant, asInt(at(arr, 1)), store.ErrTooManySubscriptions)
	}
	if err := status(arr, fmt.Sprintf("tenant %q", sub.Tenant)); err != nil {
		return nil, err
	}
	return &store.PutSubscriptionResult{Subscription: parseSubscription(asMap(at(arr, 2))), Created: asInt(at(arr, 1)) == 1}, nil
}

// GetSubscription implements store.Store.
func (s *Store) GetSubscription(ctx context.Context, p *store.GetSubscriptionParams) (*store.Subscription, error) {
	m, err := s.rdb.HGetAll(ctx, s.k.subscription(scoped(p.Tenant, p.Name))).Result()
	if err != nil {
		return nil, fmt.Errorf("redis: get subscription: %w", interpretError(err))
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("subscription %q: %w", p.Name, store.ErrNotFound)
	}
	return parseSubscription(m), nil
}

// ListSubscriptions implements store.Store: the tenants in name order
// (one, or every tenant of the namespace) from After, each one's names from
// its index until the page is full (namesByTenant), then one pipelined
// read of the records. One deleted meanwhile is left out.
func (s *Store) ListSubscriptions(ctx context.Context, p *store.ListSubscriptionsParams) ([]*store.Subscription, error) {
	scopes, err := s.namesByTenant(ctx, s.k.subscriptions, p.Tenant, p.After.Tenant, p.After.Name, p.ListLimit())
	if err != nil {
		return nil, fmt.Errorf("redis: list subscriptions: %w", err)
	}
	recs := make([]*goredis.MapStringStringCmd, len(scopes))
	if _, err := s.rdb.Pipelined(ctx, func(pipe goredis.Pipeliner) error {
		for i, sc := range scopes {
			recs[i] = pipe.HGetAll(ctx, s.k.subscription(sc))
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("redis: list subscriptions: %w", interpretError(err))
	}
	out := make([]*store.Subscription, 0, len(recs))
	for _, c := range recs {
		if m := c.Val(); len(m) > 0 {
			out = append(out, parseSubscription(m))
		}
	}
	return out, nil
}

// DeleteSubscription implements store.Store (delete_subscription.lua).
func (s *Store) DeleteSubscription(ctx context.Context, p *store.DeleteSubscriptionParams) error {
	arr, err := s.run(ctx, "delete subscription", scriptDelSubscription,
		[]string{s.k.subscription(scoped(p.Tenant, p.Name)), s.k.subscriptions(p.Tenant)}, s.k.ns, p.Tenant, p.Name)
	if err != nil {
		return err
	}
	return status(arr, fmt.Sprintf("subscription %q", p.Name))
}

// parseSubscription reads a subscription hash (put_subscription.lua).
func parseSubscription(m map[string]string) *store.Subscription {
	return &store.Subscription{
		Tenant:           m["tenant"],
		Name:             m["name"],
		Event:            m["event"],
		Kind:             m["kind"],
		Queue:            m["queue"],
		Priority:         int(hashInt(m, "prio")),
		MaxAttempts:      int(hashInt(m, "maxatt")),
		TimeoutSeconds:   int(hashInt(m, "timeout")),
		ConcurrencyKey:   m["ckey"],
		ConcurrencyLimit: int(hashInt(m, "climit")),
		Enabled:          m["enabled"] == "1",
		CreatedAt:        fromUS(hashInt(m, "created")),
		UpdatedAt:        fromUS(hashInt(m, "updated")),
	}
}

// eventRetention is a tenant hash's event retention: absent (a tenant
// created before events) is the default.
func eventRetention(m map[string]string) time.Duration {
	if _, ok := m["event_ret"]; !ok {
		return store.DefaultEventRetention
	}
	return fromDurUS(hashInt(m, "event_ret"))
}

// Publish implements store.Store on the tenant's namespace, then lowers
// the tenant's claim hint when the publish queued work: a wait it ended,
// an execution it started.
func (r *Router) Publish(ctx context.Context, p *store.PublishParams) (*store.PublishResult, error) {
	res, err := r.view(p.Tenant).Publish(ctx, p)
	r.unsure(err)
	if err != nil || res.Replayed {
		return res, err
	}
	work := res.Resumed > 0
	for _, st := range res.Started {
		work = work || (st.Err == nil && st.ExecutionID != "")
	}
	if work {
		r.lower(ctx, p.Tenant, 0, hintClaim)
	}
	return res, nil
}

// PutSubscription implements store.Store on the tenant's namespace.
func (r *Router) PutSubscription(ctx context.Context, p *store.PutSubscriptionParams) (*store.PutSubscriptionResult, error) {
	return r.view(p.Subscription.Tenant).PutSubscription(ctx, p)
}

// GetSubscription implements store.Store on the tenant's namespace.
func (r *Router) GetSubscription(ctx context.Context, p *store.GetSubscriptionParams) (*store.Subscription, error) {
	return r.view(p.Tenant).GetSubscription(ctx, p)
}

// ListSubscriptions implements store.Store: the tenant's namespace, or
// every tenant's in name order from After, one namespace after the other,
// each asked for what the limit leaves, until the page is full.
func (r *Router) ListSubscriptions(ctx context.Context, p *store.ListSubscriptionsParams) ([]*store.Subscription, error) {
	if p.Tenant != "" {
		return r.view(p.Tenant).ListSubscriptions(ctx, p)
	}
	names, err := r.tenants(ctx)
	if err != nil {
		return nil, err
	}
	limit := p.ListLimit()
	var out []*store.Subscription
	for _, t := range names {
		if len(out) >= limit {
			break
		}
		if t < p.After.Tenant {
			continue
		}
		tp := store.ListSubscriptionsParams{Tenant: t, Limit: limit - len(out)}
		if t == p.After.Tenant {
			tp.After = p.After
		}
		part, err := r.view(t).ListSubscriptions(ctx, &tp)
		if err != nil {
			return nil, err
		}
		out = append(out, part...)
	}
	return out, nil
}

// DeleteSubscription implements store.Store on the tenant's namespace.
func (r *Router) DeleteSubscription(ctx context.Context, p *store.DeleteSubscriptionParams) error {
	return r.view(p.Tenant).DeleteSubscription(ctx, p)
}
