package latch_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/latch-run/latch"
	"github.com/latch-run/latch/store"
)

// An event starts a flow through a subscription; the flow waits for a
// second event by its correlation key; an event of another key does not
// resume it, the one of its key does, and a repeated publish (same
// idempotency key) answers the first answer and starts nothing more.
func TestEventStartsAndResumesAFlow(t *testing.T) {
	t.Parallel()
	c := open(t)
	ctx := t.Context()
	startWorker(t, c, func(w *latch.Worker) {
		w.Handle("order", func(ctx context.Context, job *latch.Job) (any, error) {
			placed, err := latch.DecodeEvent(job.Payload)
			if err != nil {
				return nil, latch.Permanent(err)
			}
			paid, err := job.WaitEvent(ctx, "paid", "payment.received", latch.WaitEventOptions{Key: placed.Key})
			if err != nil {
				return nil, err
			}
			var amount int
			if err := paid.Decode(&amount); err != nil {
				return nil, latch.Permanent(err)
			}
			return fmt.Sprintf("%s paid %d (event %s)", placed.Key, amount, paid.ID), nil
		})
	})
	sub, created, err := c.PutSubscription(ctx, "acme", latch.Subscription{Name: "on-order", Event: "order.placed", Kind: "order"})
	if err != nil || !created || sub.Tenant != "acme" || sub.Disabled {
		t.Fatalf("put: %+v %v %v", sub, created, err)
	}
	pub, err := c.Publish(ctx, "acme", "order.placed", map[string]int{"items": 3}, latch.PublishOptions{Key: "o-1", IdempotencyKey: "place-o-1"})
	if err != nil || len(pub.Started) != 1 || pub.Started[0].Err != nil || pub.Started[0].Subscription != "on-order" || pub.Replayed {
		t.Fatalf("publish: %+v %v", pub, err)
	}
	id := pub.Started[0].ExecutionID
	x := waitStatus(t, c, id, latch.StatusSuspended)
	if x.WaitingFor != store.EventWaitFor("payment.received") {
		t.Fatalf("waiting for %q", x.WaitingFor)
	}
	again, err := c.Publish(ctx, "acme", "order.placed", map[string]int{"items": 3}, latch.PublishOptions{Key: "o-1", IdempotencyKey: "place-o-1"})
	if err != nil || !again.Replayed || again.EventID != pub.EventID || again.Started[0].ExecutionID != id {
		t.Fatalf("repeat: %+v %v", again, err)
	}
	if other, err := c.Publish(ctx, "acme", "payment.received", 5, latch.PublishOptions{Key: "o-2"}); err != nil || other.Resumed != 0 {
		t.Fatalf("another key's payment: %+v %v", other, err)
	}
	paid, err := c.Publish(ctx, "acme", "payment.received", 12, latch.PublishOptions{Key: "o-1"})
	if err != nil || paid.Resumed != 1 {
		t.Fatalf("payment: %+v %v", paid, err)
	}
	done := wait(t, c, id)
	var out string
	if err := done.DecodeResult(&out); err != nil || out != "o-1 paid 12 (event "+paid.EventID+")" {
		t.Fatalf("flow %s %s: %q %v", done.Status, done.Error, out, err)
	}
	page, err := c.List(ctx, "acme", latch.ListOptions{})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("%d executions (%v): the repeated publish started another", len(page.Items), err)
	}
}

// An event published before the wait begins (after the execution was
// submitted) is found; a wait that finds none times out with
// ErrWaitTimedOut, told apart from an event.
func TestWaitEventBeforeAndTimeout(t *testing.T) {
	t.Parallel()
	c := open(t)
	ctx := t.Context()
	release := make(chan struct{})
	startWorker(t, c, func(w *latch.Worker) {
		w.Handle("flow", func(ctx context.Context, job *latch.Job) (any, error) {
			<-release
			first, err := job.WaitEvent(ctx, "first", "ready", latch.WaitEventOptions{})
			if err != nil {
				return nil, err
			}
			_, err = job.WaitEvent(ctx, "second", "ready", latch.WaitEventOptions{Timeout: 100 * time.Millisecond})
			if errors.Is(err, latch.ErrWaitTimedOut) {
				return "first " + first.Key + ", then timed out", nil
			}
			if err != nil {
				return nil, err
			}
			return "the same event twice", nil
		})
	})
	x, _, err := c.Submit(ctx, "acme", latch.SubmitRequest{Kind: "flow"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Publish(ctx, "acme", "ready", nil, latch.PublishOptions{Key: "k"}); err != nil {
		t.Fatal(err)
	}
	close(release)
	done := wait(t, c, x.ID)
	var out string
	if err := done.DecodeResult(&out); err != nil || out != "first k, then timed out" {
		t.Fatalf("flow %s %s: %q %v", done.Status, done.Error, out, err)
	}
}

// Subscriptions through the Go API: created then replaced, read, listed,
// the bound, bad input refused with nothing written, deleted; the tenant's
// event retention.
func TestSubscriptionsAndRetention(t *testing.T) {
	t.Parallel()
	c := open(t)
	ctx := t.Context()
	sub := latch.Subscription{Name: "s-000", Event: "e", Kind: "k", Queue: "q", Timeout: time.Minute, ConcurrencyKey: "c"}
	first, created, err := c.PutSubscription(ctx, "acme", sub)
	if err != nil || !created || first.ConcurrencyLimit != 1 || first.Timeout != time.Minute {
		t.Fatalf("put: %+v %v %v", first, created, err)
	}
	sub.Disabled = true
	again, created, err := c.PutSubscription(ctx, "acme", sub)
	if err != nil || created || !again.Disabled || !again.CreatedAt.Equal(first.CreatedAt) {
		t.Fatalf("replace: %+v %v %v", again, created, err)
	}
	for _, bad := range []latch.Subscription{
		{Name: "has space", Event: "e", Kind: "k"},
		{Name: "x", Event: "a/b", Kind: "k"},
		{Name: "x", Event: "e"},
		{Name: "x", Event: "e", Kind: "k", Timeout: 1500 * time.Millisecond},
		{Name: "x", Event: "e", Kind: "k", ConcurrencyLimit: 2},
	} {
		if _, _, err := c.PutSubscription(ctx, "acme", bad); !errors.Is(err, latch.ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", bad, err)
		}
	}
	for i := 1; i < store.MaxSubscriptions; i++ {
		if _, _, err := c.PutSubscription(ctx, "acme", latch.Subscription{Name: fmt.Sprintf("s-%03d", i), Event: "e", Kind: "k"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := c.PutSubscription(ctx, "acme", latch.Subscription{Name: "one-more", Event: "e", Kind: "k"}); !errors.Is(err, latch.ErrTooManySubscriptions) {
		t.Fatalf("past the bound: %v", err)
	}
	list, err := c.Subscriptions(ctx, "acme")
	if err != nil || len(list) != store.MaxSubscriptions || list[0].Name != "s-000" || !list[0].Disabled {
		t.Fatalf("list: %d %v", len(list), err)
	}
	if err := c.DeleteSubscription(ctx, "acme", "s-000"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Subscription(ctx, "acme", "s-000"); !errors.Is(err, latch.ErrNotFound) {
		t.Fatalf("deleted: %v", err)
	}
	if s, err := c.Subscription(ctx, "acme", "s-001"); err != nil || s.Event != "e" {
		t.Fatalf("get: %+v %v", s, err)
	}

	tn, err := c.CreateTenant(ctx, "short", latch.TenantOptions{EventRetention: time.Hour})
	if err != nil || tn.EventRetention != time.Hour {
		t.Fatalf("create: %+v %v", tn, err)
	}
	d := 2 * time.Minute
	if tn, err = c.UpdateTenant(ctx, "short", latch.TenantUpdate{EventRetention: &d}); err != nil || tn.EventRetention != d {
		t.Fatalf("update: %+v %v", tn, err)
	}
	if tn, err = c.GetTenant(ctx, "acme"); err != nil || tn.EventRetention != store.DefaultEventRetention {
		t.Fatalf("default: %+v %v", tn, err)
	}
	if _, err := c.Publish(ctx, "acme", "bad name", nil, latch.PublishOptions{}); !errors.Is(err, latch.ErrInvalid) {
		t.Fatalf("bad publish: %v", err)
	}
	if _, err := c.Publish(ctx, "nobody", "e", nil, latch.PublishOptions{}); !errors.Is(err, latch.ErrNotFound) {
		t.Fatalf("unknown tenant: %v", err)
	}
}
