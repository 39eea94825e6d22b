package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/latch-run/latch"
)

// Order is the payload of an "order" execution.
type Order struct {
	ID     string `json:"id"`
	Amount int    `json:"amount"` // cents
	// Shop is the base URL of the services the flow calls: the payment
	// service (POST /charge), the stock service (POST /reserve) and the
	// customer's webhook (POST /webhook).
	Shop string `json:"shop"`
	// DeliveryAt opens the delivery window: the webhook is sent then.
	DeliveryAt time.Time `json:"delivery_at"`
}

// Approval is the data of the "approve" signal.
type Approval struct {
	By string `json:"by"`
}

// approvalTimeout is how long an order waits for a human.
const approvalTimeout = 24 * time.Hour

// handleOrder runs one order as a flow of five steps. Each call below
// returns at once with the recorded outcome when an earlier run of this
// execution got past it, so whichever run (after a crash, a retry or a
// resume) reaches a step, the steps before it are not done again.
//
// Every outside call carries the idempotency key execution id + step name:
// a process killed after the service acted but before the step was
// recorded calls it again on the next run, and the service must see the
// same key to act once (docs/flows.md: recorded once, not run once).
func handleOrder(ctx context.Context, job *latch.Job) (any, error) {
	var o Order
	if err := job.Decode(&o); err != nil {
		return nil, latch.Permanent(err)
	}
	svc := shop{base: o.Shop, execution: job.ID}

	if _, err := job.Step(ctx, "reserve stock", func(ctx context.Context) (any, error) {
		return svc.call(ctx, "reserve stock", "/reserve", o)
	}); err != nil {
		return nil, err
	}
	charge, err := job.Step(ctx, "charge card", func(ctx context.Context) (any, error) {
		return svc.call(ctx, "charge card", "/charge", o)
	})
	if err != nil {
		return nil, err
	}

	data, err := job.WaitSignal(ctx, "approval", "approve", approvalTimeout)
	switch {
	case errors.Is(err, latch.ErrWaitTimedOut):
		if _, err := job.Step(ctx, "refund", func(ctx context.Context) (any, error) {
			return svc.call(ctx, "refund", "/refund", o)
		}); err != nil {
			return nil, err
		}
		return map[string]any{"order": o.ID, "outcome": "not approved in time: refunded"}, nil
	case err != nil:
		return nil, err // latch.ErrSuspended included: return it as it is
	}
	var approval Approval
	if err := json.Unmarshal(data, &approval); err != nil {
		return nil, latch.Permanent(fmt.Errorf("approval data: %w", err))
	}

	// time.Until is only read by the run that first gets here; a resumed
	// run finds the sleep recorded and goes on.
	if err := job.Sleep(ctx, "delivery window", time.Until(o.DeliveryAt)); err != nil {
		return nil, err
	}
	if _, err := job.Step(ctx, "send webhook", func(ctx context.Context) (any, error) {
		return svc.call(ctx, "send webhook", "/webhook", map[string]any{"order": o.ID, "charge": charge})
	}); err != nil {
		return nil, err
	}
	return map[string]any{"order": o.ID, "outcome": "delivered", "approved_by": approval.By, "charge": charge}, nil
}
