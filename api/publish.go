package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/latch-run/latch/internal/tracing"
	"github.com/latch-run/latch/store"
)

// Events (docs/api.md, "Events and subscriptions"): anyone with the
// tenant's key publishes an event; in the same store operation every
// execution of the tenant waiting for it resumes and every enabled
// subscription on its name starts one execution. (GET
// /api/executions/{id}/events, the execution's change stream, is another
// thing: events.go.)

// publishOwner completes the problem of an admin that did not name the
// tenant of an event.
const publishOwner = "to publish for"

// publishRequest is the body of POST /api/events: {"name", "data"?,
// "key"?}, and the Idempotency-Key header when sent.
type publishRequest struct {
	Name *string         `json:"name"`
	Data json.RawMessage `json:"data"`
	Key  *string         `json:"key"`

	idempotencyKey string
}

func (r *publishRequest) bind(hr *http.Request) error {
	if _, err := query(hr); err != nil {
		return err
	}
	if k, ok := headerValue(hr, idempotencyHeader); ok {
		if err := fieldProblem(store.CheckKey(idempotencyHeader, k)); err != nil {
			return err
		}
		r.idempotencyKey = k
	}
	return nil
}

func (r *publishRequest) validate() error {
	if r.Name == nil {
		return invalid("name", "required")
	}
	if err := fieldProblem(renamed(store.CheckSignalName(*r.Name), "name")); err != nil {
		return err
	}
	if r.Key != nil {
		return fieldProblem(store.CheckText("key", *r.Key, store.MaxEventKeyLen))
	}
	return nil
}

// eventStart is one subscription's start in a publish's answer: the
// execution it started, or the code of the refusal that kept it from
// starting (quota_exceeded, storage_exceeded).
type eventStart struct {
	Subscription string `json:"subscription"`
	ExecutionID  string `json:"execution_id,omitempty"`
	Error        Code   `json:"error,omitempty"`
}

// publishResponse is a publish's 202 answer; a repeat of its
// Idempotency-Key answers the same.
type publishResponse struct {
	EventID string       `json:"event_id"`
	Resumed int          `json:"resumed"`
	Started []eventStart `json:"started"`
}

func (*publishResponse) statusCode() int { return http.StatusAccepted }

// publish is POST /api/events: one store operation records the event,
// resumes the tenant's waits it matches and starts its subscriptions.
func (s *Server) publish(ctx context.Context, req *publishRequest) (*publishResponse, error) {
	owner, err := principalFrom(ctx).ownerOf(publishOwner)
	if err != nil {
		return nil, err
	}
	data, err := canonicalResult("data", req.Data, s.cfg.MaxPayloadBytes)
	if err != nil {
		return nil, err
	}
	p := store.PublishParams{
		Tenant:         owner,
		Name:           *req.Name,
		Data:           data,
		IdempotencyKey: req.idempotencyKey,
		TraceParent:    tracing.Current(ctx),
		Now:            s.cfg.Now(),
	}
	if req.Key != nil {
		p.Key = *req.Key
	}
	if err := fieldProblem(p.Check(s.cfg.MaxPayloadBytes)); err != nil {
		return nil, err
	}
	res, err := s.cfg.Store.Publish(ctx, &p)
	if err != nil {
		return nil, tenantErr(err, owner)
	}
	return toPublishResponse(res), nil
}

func toPublishResponse(res *store.PublishResult) *publishResponse {
	out := &publishResponse{EventID: res.EventID, Resumed: res.Resumed, Started: make([]eventStart, len(res.Started))}
	for i, st := range res.Started {
		out.Started[i] = eventStart{Subscription: st.Subscription, ExecutionID: st.ExecutionID}
		if st.Err != nil {
			out.Started[i] = eventStart{Subscription: st.Subscription, Error: startRefusal(st.Err)}
		}
	}
	return out
}

// startRefusal is the problem code of a subscription's refused start.
func startRefusal(err error) Code {
	switch {
	case errors.Is(err, store.ErrQuotaExceeded):
		return CodeQuotaExceeded
	case errors.Is(err, store.ErrStorageExceeded):
		return CodeStorageExceeded
	}
	return problemFor(err).Code
}
