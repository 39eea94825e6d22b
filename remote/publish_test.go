package remote_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/latch-run/latch/api"
	"github.com/latch-run/latch/remote"
	"github.com/latch-run/latch/store"
)

// TestEventCalls: a flow waits for an event by key through Suspend, a
// subscription is put, read, listed and deleted, a Publish resumes the
// wait and starts the subscription's execution, and a repeat of its
// idempotency key answers the first answer. Bad input is ErrInvalidRequest.
func TestEventCalls(t *testing.T) {
	ctx := context.Background()
	s := newServer(t)
	ret := int64(3600)
	c := s.tenant(t, remote.TenantSpec{Name: "acme", EventRetentionSeconds: &ret})
	if tn := must(c.GetTenant(ctx, "acme"))(t); tn.EventRetentionSeconds != 3600 {
		t.Fatalf("tenant: %+v", tn)
	}

	sub, created, err := c.PutSubscription(ctx, "on-paid", remote.SubscriptionSpec{Event: "order.paid", Kind: "ship", Queue: "jobs"})
	if err != nil || !created || sub.Event != "order.paid" || sub.MaxAttempts != 3 || !sub.Enabled {
		t.Fatalf("put: %+v %v %v", sub, created, err)
	}
	off := false
	if _, created, err := c.PutSubscription(ctx, "off", remote.SubscriptionSpec{Event: "order.paid", Kind: "x", Enabled: &off}); err != nil || !created {
		t.Fatalf("put off: %v", err)
	}
	if got := must(c.GetSubscription(ctx, "on-paid"))(t); got.Queue != "jobs" || !got.CreatedAt.Equal(sub.CreatedAt) {
		t.Fatalf("get: %+v", got)
	}
	if l := must(c.SubscriptionsPage(ctx, remote.PageOptions{}))(t); len(l.Items) != 2 || l.Items[0].Name != "off" || l.NextCursor != nil {
		t.Fatalf("list: %+v", l.Items)
	}
	first := must(c.SubscriptionsPage(ctx, remote.PageOptions{Limit: 1}))(t)
	if len(first.Items) != 1 || first.Items[0].Name != "off" || first.NextCursor == nil {
		t.Fatalf("first page of 1: %+v", first)
	}
	var names []string
	for s, err := range c.Subscriptions(ctx, remote.PageOptions{Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, s.Name)
	}
	if len(names) != 2 || names[0] != "off" || names[1] != "on-paid" {
		t.Fatalf("subscriptions by pages of 1: %v", names)
	}
	_, err = c.SubscriptionsPage(ctx, remote.PageOptions{Cursor: "nope"})
	wantCode(t, err, remote.ErrInvalidRequest, http.StatusBadRequest)

	e := must(c.Submit(ctx, remote.SubmitRequest{Kind: "flow"}))(t)
	leases := must(c.Claim(ctx, remote.ClaimRequest{WorkerID: "w1", Kinds: []string{"flow"}, WaitSeconds: 2}))(t)
	if len(leases) != 1 {
		t.Fatalf("claimed %d", len(leases))
	}
	since := e.CreatedAt
	w := must(c.Suspend(ctx, e.ExecutionID, remote.SuspendRequest{LeaseToken: leases[0].LeaseToken, Step: "paid",
		Event: "order.paid", Key: "o-1", Since: &since, TimeoutSeconds: 600}))(t)
	if w.Status != remote.StatusSuspended || w.WaitingFor == nil || *w.WaitingFor != "event:order.paid" {
		t.Fatalf("suspend: %+v", w)
	}

	pub := must(c.Publish(ctx, "order.paid", map[string]int{"amount": 12}, remote.PublishOptions{Key: "o-1", IdempotencyKey: "p1"}))(t)
	if pub.EventID == "" || pub.Resumed != 1 || len(pub.Started) != 1 || pub.Started[0].Subscription != "on-paid" ||
		pub.Started[0].ExecutionID == "" || pub.Started[0].Error != "" {
		t.Fatalf("publish: %+v", pub)
	}
	started := must(c.Get(ctx, pub.Started[0].ExecutionID))(t)
	var payload struct {
		EventID string          `json:"event_id"`
		Key     string          `json:"key"`
		Data    json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(started.Payload, &payload); err != nil || payload.EventID != pub.EventID || payload.Key != "o-1" ||
		string(payload.Data) != `{"amount":12}` || started.Kind != "ship" {
		t.Fatalf("started: %+v %s", started, started.Payload)
	}
	if g := must(c.Get(ctx, e.ExecutionID))(t); g.Status != remote.StatusQueued {
		t.Fatalf("the wait did not resume: %+v", g)
	}
	again := must(c.Publish(ctx, "order.paid", map[string]int{"amount": 12}, remote.PublishOptions{Key: "o-1", IdempotencyKey: "p1"}))(t)
	if again.EventID != pub.EventID || again.Started[0].ExecutionID != pub.Started[0].ExecutionID {
		t.Fatalf("repeat: %+v", again)
	}

	if err := c.DeleteSubscription(ctx, "on-paid"); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetSubscription(ctx, "on-paid")
	wantCode(t, err, remote.ErrNotFound, http.StatusNotFound)
	_, err = c.Publish(ctx, "bad name", nil, remote.PublishOptions{})
	wantCode(t, err, remote.ErrInvalidRequest, http.StatusBadRequest)
	_, _, err = c.PutSubscription(ctx, "x", remote.SubscriptionSpec{Event: "e"})
	wantCode(t, err, remote.ErrInvalidRequest, http.StatusBadRequest)
}

// fewSubscriptions lowers the bound of a tenant's subscriptions to one.
type fewSubscriptions struct{ store.Store }

func (s fewSubscriptions) PutSubscription(ctx context.Context, p *store.PutSubscriptionParams) (*store.PutSubscriptionResult, error) {
	p.MaxSubscriptions = 1
	return s.Store.PutSubscription(ctx, p)
}

// TestTooManySubscriptions: past the bound, PutSubscription is
// ErrTooManySubscriptions (409); replacing the one there still works.
func TestTooManySubscriptions(t *testing.T) {
	ctx := context.Background()
	s := newServer(t, func(c *api.Config) { c.Store = fewSubscriptions{c.Store} })
	c := s.tenant(t, remote.TenantSpec{Name: "acme"})
	if _, created, err := c.PutSubscription(ctx, "one", remote.SubscriptionSpec{Event: "e", Kind: "k"}); err != nil || !created {
		t.Fatalf("first: %v", err)
	}
	_, _, err := c.PutSubscription(ctx, "two", remote.SubscriptionSpec{Event: "e", Kind: "k"})
	wantCode(t, err, remote.ErrTooManySubscriptions, http.StatusConflict)
	if _, created, err := c.PutSubscription(ctx, "one", remote.SubscriptionSpec{Event: "e2", Kind: "k"}); err != nil || created {
		t.Fatalf("replace: %v", err)
	}
}
