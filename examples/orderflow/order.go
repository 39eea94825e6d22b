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
	// Parcels are shipped in parallel, each by a child execution of its
	// own (kind "parcel") that calls the carrier (POST /ship).
	Parcels []string `json:"parcels"`
}

// Parcel is the payload of a "parcel" execution, a child of its order.
type Parcel struct {
	Order string `json:"order"`
	ID    string `json:"id"`
	Shop  string `json:"shop"`
}

// Approval is the data of the "approve" signal.
type Approval struct {
	By string `json:"by"`
}

// approvalTimeout is how long an order waits for a human.
const approvalTimeout = 24 * time.Hour

// handleOrder runs one order as a flow of seven steps. Each call below
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

	// Ship every parcel in parallel, one child execution each, and go on
	// once all have ended: the spawn is recorded as the step "ship" (a
	// later run gets the same children, none shipped twice) and the wait
	// as "ship/wait". A parcel that could not be shipped fails the order
	// for a person to look at.
	parcels := make([]Parcel, len(o.Parcels))
	for i, p := range o.Parcels {
		parcels[i] = Parcel{Order: o.ID, ID: p, Shop: o.Shop}
	}
	shipments, err := latch.Results[json.RawMessage](latch.Map(ctx, job, "ship", "parcel", parcels))
	if err != nil {
		return nil, err // latch.ErrSuspended until every parcel has shipped
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
	return map[string]any{"order": o.ID, "outcome": "delivered", "approved_by": approval.By, "charge": charge,
		"shipments": shipments}, nil
}

// handleParcel ships one parcel of an order: a child of the order's
// execution. Its idempotency key is its own execution id, so a parcel
// whose run is cut short and run again is shipped once.
func handleParcel(ctx context.Context, job *latch.Job) (any, error) {
	var p Parcel
	if err := job.Decode(&p); err != nil {
		return nil, latch.Permanent(err)
	}
	svc := shop{base: p.Shop, execution: job.ID}
	return svc.call(ctx, "ship", "/ship", p)
}
