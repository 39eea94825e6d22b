package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/latch-run/latch/internal/tracing"
	"github.com/latch-run/latch/store"
)

// Children (docs/api.md, "Children"): a worker spawns child executions under
// a step of the flow it runs, on its lease; the flow waits for them with a
// fan-in suspend (suspend's children), and anyone of the tenant lists them
// with GET /api/executions?parent_id=.

// spawnRequest is the body of POST /api/executions/{id}/children. Items stay
// raw so that each is decoded on its own, its problems naming it
// (items[3].kind).
type spawnRequest struct {
	tokenRequest
	Step        *string           `json:"step"`
	Items       []json.RawMessage `json:"items"`
	OnParentEnd *string           `json:"on_parent_end"`
}

func (r *spawnRequest) validate() error {
	if err := r.tokenRequest.validate(); err != nil {
		return err
	}
	if r.Step == nil {
		return invalid("step", "required")
	}
	if err := fieldProblem(store.CheckStepName(*r.Step)); err != nil {
		return err
	}
	if len(r.Items) == 0 {
		return invalid("items", "a spawn needs at least one child")
	}
	if r.OnParentEnd != nil {
		switch store.ParentEnd(*r.OnParentEnd) {
		case store.ParentEndCancel, store.ParentEndAbandon:
		default:
			return invalid("on_parent_end", "must be %q or %q", store.ParentEndCancel, store.ParentEndAbandon)
		}
	}
	return nil
}

// childRef is one child in a spawn's answer.
type childRef struct {
	ExecutionID string       `json:"execution_id"`
	Status      store.Status `json:"status"`
}

// spawnResponse is a spawn's answer: 201 when this call admitted the
// children, 200 when the step was recorded before (its children, nothing
// admitted).
type spawnResponse struct {
	Step     string     `json:"step"`
	Recorded bool       `json:"recorded"`
	Children []childRef `json:"children"`
}

func (r *spawnResponse) statusCode() int {
	if r.Recorded {
		return http.StatusCreated
	}
	return http.StatusOK
}

// spawn is POST /api/executions/{id}/children, fenced by the lease: one
// store operation admits every item as a child of the execution, in its
// tenant, and records the step; a repeat of the step answers the first
// spawn's children.
func (s *Server) spawn(ctx context.Context, req *spawnRequest) (*spawnResponse, error) {
	now := s.cfg.Now()
	traceParent := tracing.Current(ctx)
	p := store.SpawnParams{
		ExecutionID: req.id,
		Tenant:      principalFrom(ctx).scope(),
		Token:       *req.LeaseToken,
		Step:        *req.Step,
		Items:       make([]store.Submission, len(req.Items)),
		Now:         now,
	}
	if req.OnParentEnd != nil {
		p.OnParentEnd = store.ParentEnd(*req.OnParentEnd)
	}
	for i, raw := range req.Items {
		prefix := fmt.Sprintf("items[%d].", i)
		var item submitRequest
		if err := decodeJSON(raw, &item, prefix); err != nil {
			return nil, err
		}
		if item.DedupKey != nil {
			return nil, invalid(prefix+"dedup_key", "a child has no dedup key: the spawn step makes it once-only")
		}
		sub, err := item.submission(now, s.cfg.MaxPayloadBytes, prefix)
		if err != nil {
			return nil, err
		}
		sub.TraceParent = traceParent
		p.Items[i] = sub
	}
	if err := fieldProblem(p.Check(now, s.cfg.MaxPayloadBytes)); err != nil {
		return nil, err
	}
	res, err := s.cfg.Store.Spawn(ctx, &p)
	if err != nil {
		return nil, executionErr(err, req.id)
	}
	out := &spawnResponse{Step: res.Step.Name, Recorded: res.Recorded, Children: make([]childRef, len(res.Children))}
	for i, c := range res.Children {
		out.Children[i] = childRef{ExecutionID: c.ID, Status: c.Status}
	}
	return out, nil
}
