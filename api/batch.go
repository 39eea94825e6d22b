package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/latch-run/latch/internal/fault"
	"github.com/latch-run/latch/internal/tracing"
	"github.com/latch-run/latch/store"
)

// maxBatchItems bounds one batch (docs/api.md, "Submit many").
const maxBatchItems = 1000

// batchRequest is the body of POST /api/executions/batch. Items stay raw so
// each is decoded on its own: a bad item fails only its own slot.
type batchRequest struct {
	Items []json.RawMessage `json:"items"`
}

func (r *batchRequest) bind(hr *http.Request) error {
	if _, err := query(hr); err != nil {
		return err
	}
	if _, ok := headerValue(hr, idempotencyHeader); ok {
		return invalid(idempotencyHeader, "not accepted on a batch; give each item its dedup_key")
	}
	return nil
}

func (r *batchRequest) validate() error {
	if len(r.Items) == 0 || len(r.Items) > maxBatchItems {
		return invalid("items", "must hold 1-%d submissions", maxBatchItems)
	}
	return nil
}

// batchItem is one slot of a batch answer: status 201, 200, 400, 422 or 429
// (the statuses docs/api.md lists), with the execution or the problem.
type batchItem struct {
	Status    int        `json:"status"`
	Execution *execution `json:"execution"`
	Error     *Problem   `json:"error"`
}

type batchResponse struct {
	Items []batchItem `json:"items"`
}

// submitBatch is POST /api/executions/batch. Items that pass validation go
// to one Store.Admit call, which decides them one by one in request order
// (a later item sees earlier ones, so a repeated dedup_key maps to the
// first item's execution) and commits them together.
func (s *Server) submitBatch(ctx context.Context, req *batchRequest) (*batchResponse, error) {
	owner, err := principalFrom(ctx).owner()
	if err != nil {
		return nil, err
	}
	now := s.cfg.Now()
	ctx, span, traceParent := s.startSubmit(ctx, "submit batch", owner)
	defer span.End()
	span.SetAttributes(tracing.AttrItems.Int(len(req.Items)))
	out := make([]batchItem, len(req.Items))
	var subs []store.Submission
	var slots []int // out index of each sub
	for i, raw := range req.Items {
		prefix := fmt.Sprintf("items[%d].", i)
		var item submitRequest
		err := decodeJSON(raw, &item, prefix)
		var sub store.Submission
		if err == nil {
			sub, err = item.submission(now, s.cfg.MaxPayloadBytes, prefix)
		}
		if err != nil {
			p := problemFor(err)
			s.metrics.submitted(string(p.Code))
			out[i] = refusedItem(p)
			continue
		}
		sub.TraceParent = traceParent
		subs = append(subs, sub)
		slots = append(slots, i)
	}
	if len(subs) > 0 {
		items, err := s.admit(ctx, owner, now, subs)
		if err != nil {
			return nil, err
		}
		fault.Point(fault.APIBatchCommitted)
		for j, it := range items {
			resp, p := s.outcome(it)
			if p != nil {
				out[slots[j]] = refusedItem(p)
				continue
			}
			out[slots[j]] = batchItem{Status: resp.status, Execution: resp.execution}
		}
	}
	return &batchResponse{Items: out}, nil
}

// refusedItem is the slot of a refused item. A slot's status is one of
// those docs/api.md lists for batch items, so an over-large payload, 413 when
// submitted alone, is a 400 here (code payload_too_large, the detail naming
// the limit), and the storage budget, 409 alone, is a 429 beside the quota
// (code storage_exceeded). A 429 carries retry_after_seconds in its
// problem, since a slot has no Retry-After header. p is copied, never
// changed.
func refusedItem(p *Problem) batchItem {
	q := *p
	switch q.Code {
	case CodePayloadTooLarge:
		q.Status = http.StatusBadRequest
	case CodeStorageExceeded:
		q.Status = http.StatusTooManyRequests
	}
	if q.Status == http.StatusTooManyRequests && q.retryAfter > 0 {
		q.RetryAfterSeconds = q.retryAfter
	}
	return batchItem{Status: q.Status, Error: &q}
}
