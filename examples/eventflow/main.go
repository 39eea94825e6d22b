// Command eventflow is latch's example of events: a shop publishes
// "order.placed", and a subscription starts a fulfilment flow for it; the
// fulfilment ships the order and publishes "order.shipped" with the
// order's id as correlation key, which resumes the support ticket flow
// waiting for that order's shipment, and no other (docs/flows.md,
// "Events").
//
//	go run ./examples/eventflow demo                 # everything in one process
//	go run ./examples/eventflow demo -store URL      # on another store
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/latch-run/latch"
)

// tenant is the tenant the example's events and flows belong to.
const tenant = "shop"

// Order is what "order.placed" carries.
type Order struct {
	ID    string `json:"id"`
	Items int    `json:"items"`
}

// Shipment is what "order.shipped" carries, and the fulfilment's result.
type Shipment struct {
	Order    string `json:"order"`
	Tracking string `json:"tracking"`
}

// Ticket is a support ticket's payload: a customer asking where an order is.
type Ticket struct {
	Order    string `json:"order"`
	Customer string `json:"customer"`
}

func main() {
	if len(os.Args) < 2 || os.Args[1] != "demo" {
		fmt.Fprintln(os.Stderr, "usage: eventflow demo [-store URL]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := demo(ctx, os.Args[2:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "eventflow:", err)
		os.Exit(1)
	}
}

// setup makes sure the tenant and the subscription exist: every
// "order.placed" starts a "fulfil" execution whose payload is the event.
// Putting the subscription again (every deploy) changes nothing.
func setup(ctx context.Context, c *latch.Client) error {
	if _, err := c.EnsureTenant(ctx, tenant, latch.TenantOptions{}); err != nil {
		return err
	}
	_, _, err := c.PutSubscription(ctx, tenant, latch.Subscription{Name: "fulfil-placed-orders", Event: "order.placed", Kind: "fulfil"})
	return err
}

// newWorker returns a worker that runs fulfilments and tickets.
func newWorker(c *latch.Client, opts latch.WorkerOptions) *latch.Worker {
	w := c.NewWorker(opts)
	w.Handle("fulfil", func(ctx context.Context, job *latch.Job) (any, error) { return fulfil(ctx, c, job) })
	w.Handle("ticket", ticket)
	return w
}

// fulfil is the flow a placed order starts: its payload is the event.
// It ships the order (a step) and announces the shipment (a step that
// publishes): the publish's idempotency key makes a repeat of the step,
// after a crash between the publish and its record, the same publish.
func fulfil(ctx context.Context, c *latch.Client, job *latch.Job) (any, error) {
	placed, err := latch.DecodeEvent(job.Payload)
	if err != nil {
		return nil, latch.Permanent(err)
	}
	var o Order
	if err := placed.Decode(&o); err != nil {
		return nil, latch.Permanent(err)
	}
	s, err := latch.StepValue(ctx, job, "ship", func(ctx context.Context) (Shipment, error) {
		return Shipment{Order: o.ID, Tracking: "TRK-" + o.ID}, nil
	})
	if err != nil {
		return nil, err
	}
	_, err = job.Step(ctx, "announce", func(ctx context.Context) (any, error) {
		res, err := c.Publish(ctx, tenant, "order.shipped", s, latch.PublishOptions{Key: o.ID, IdempotencyKey: "shipped:" + o.ID})
		if err != nil {
			return nil, err
		}
		return res.EventID, nil
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// ticket is a customer's question about an order: it waits, holding no
// worker, for that order's shipment — the event of its correlation key —
// for up to a day, then answers.
func ticket(ctx context.Context, job *latch.Job) (any, error) {
	var t Ticket
	if err := job.Decode(&t); err != nil {
		return nil, latch.Permanent(err)
	}
	shipped, err := job.WaitEvent(ctx, "shipped", "order.shipped", latch.WaitEventOptions{Key: t.Order, Timeout: 24 * time.Hour})
	switch {
	case errors.Is(err, latch.ErrWaitTimedOut):
		return fmt.Sprintf("%s: order %s has not shipped in a day; escalated", t.Customer, t.Order), nil
	case err != nil:
		return nil, err // latch.ErrSuspended too: return it as it is
	}
	var s Shipment
	if err := shipped.Decode(&s); err != nil {
		return nil, latch.Permanent(err)
	}
	return fmt.Sprintf("%s: order %s shipped, tracking %s", t.Customer, s.Order, s.Tracking), nil
}
