package remote

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"
)

// SubmitRequest is the body of a submit (docs/api.md, "Submit"). Zero
// values are left out, so the server's defaults apply.
type SubmitRequest struct {
	Kind string `json:"kind"`
	// Payload is any value that marshals to JSON (a json.RawMessage is sent
	// as it is); nil sends none, which the server stores as {}.
	Payload  any    `json:"payload,omitempty"`
	DedupKey string `json:"dedup_key,omitempty"`
	Queue    string `json:"queue,omitempty"`
	Priority int    `json:"priority,omitempty"`
	// RunAt or DelaySeconds, not both: when it may start.
	RunAt            *time.Time `json:"run_at,omitempty"`
	DelaySeconds     int64      `json:"delay_seconds,omitempty"`
	MaxAttempts      int        `json:"max_attempts,omitempty"`
	TimeoutSeconds   int        `json:"timeout_seconds,omitempty"`
	ConcurrencyKey   string     `json:"concurrency_key,omitempty"`
	ConcurrencyLimit int        `json:"concurrency_limit,omitempty"`
	RateKey          string     `json:"rate_key,omitempty"`

	// IdempotencyKey is sent as the Idempotency-Key header, which the
	// server takes as the dedup key. With neither, the client makes one
	// of its own when it may retry, so that no retry submits twice.
	IdempotencyKey string `json:"-"`
}

// Submit admits an execution, or answers the one its dedup key maps to
// (Deduplicated true). It is retried per the client's RetryPolicy, always
// with the same key.
func (c *Client) Submit(ctx context.Context, req SubmitRequest) (*Execution, error) {
	hdr := http.Header{}
	switch {
	case req.IdempotencyKey != "":
		hdr.Set("Idempotency-Key", req.IdempotencyKey)
	case req.DedupKey == "" && c.retry.MaxRetries > 0:
		hdr.Set("Idempotency-Key", NewKey())
	}
	var e Execution
	_, err := c.Call(ctx, Request{Method: http.MethodPost, Path: "/api/executions", Header: hdr, Body: req, Idempotent: true}, &e)
	if err != nil {
		return nil, err
	}
	return &e, nil
}

// BatchItem is one slot of a batch's answer, in request order: Status 201
// (admitted) or 200 (deduplicated) with the Execution, or 400, 422 or 429
// with the Error.
type BatchItem struct {
	Status    int        `json:"status"`
	Execution *Execution `json:"execution"`
	Error     *Problem   `json:"error"`
}

// Err is the slot's refusal as an *Error (errors.Is matches its code), or
// nil when it was admitted.
func (b BatchItem) Err() error {
	if b.Error == nil {
		return nil
	}
	return b.Error.Err()
}

type batchRequest struct {
	Items []SubmitRequest `json:"items"`
}

type batchResponse struct {
	Items []BatchItem `json:"items"`
}

// SubmitBatch submits 1-1000 executions in one request, committed together
// (docs/api.md, "Submit many"); a refused item does not affect the others.
// An item's IdempotencyKey is sent as its dedup key; an item with neither
// gets a key of the client's own when it may retry.
func (c *Client) SubmitBatch(ctx context.Context, items []SubmitRequest) ([]BatchItem, error) {
	body := batchRequest{Items: make([]SubmitRequest, len(items))}
	for i, it := range items {
		switch {
		case it.DedupKey == "" && it.IdempotencyKey != "":
			it.DedupKey = it.IdempotencyKey
		case it.DedupKey == "" && c.retry.MaxRetries > 0:
			it.DedupKey = NewKey()
		}
		body.Items[i] = it
	}
	var res batchResponse
	_, err := c.Call(ctx, Request{Method: http.MethodPost, Path: "/api/executions/batch", Body: body, Idempotent: true}, &res)
	if err != nil {
		return nil, err
	}
	return res.Items, nil
}

// NewKey is a fresh random key for a dedup key or an Idempotency-Key: a
// random UUID.
func NewKey() string { return uuid.NewString() }
