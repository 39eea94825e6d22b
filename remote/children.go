package remote

import (
	"context"
	"net/http"
)

// SpawnRequest spawns children of a running execution under the flow step
// Step (POST /api/executions/{id}/children): each item is a submission
// without a dedup key; OnParentEnd is "cancel" (the default) or "abandon".
type SpawnRequest struct {
	LeaseToken  string          `json:"lease_token"`
	Step        string          `json:"step"`
	Items       []SubmitRequest `json:"items"`
	OnParentEnd string          `json:"on_parent_end,omitempty"`
}

// Spawned is a spawn's answer: its children in item order, each with its
// status now. Recorded is false when the step was recorded before: these
// are the first spawn's children, and nothing was admitted.
type Spawned struct {
	rawJSON
	Step     string     `json:"step"`
	Recorded bool       `json:"recorded"`
	Children []ChildRef `json:"children"`
}

// ChildRef is one child of a spawn.
type ChildRef struct {
	ExecutionID string `json:"execution_id"`
	Status      Status `json:"status"`
}

// Spawn admits the children of execution id under the lease req carries,
// all or none, once per step: a repeat answers the first spawn's children.
// Past the tenant's quota it is ErrQuotaExceeded, past the bounds of
// children ErrTooManyChildren, nothing admitted and the lease kept. Fenced
// by the lease, it is safe to retry.
func (c *Client) Spawn(ctx context.Context, id string, req SpawnRequest) (*Spawned, error) {
	var res Spawned
	if _, err := c.Call(ctx, Request{Method: http.MethodPost, Path: "/api/executions/" + seg(id) + "/children", Body: req, Idempotent: true}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}
