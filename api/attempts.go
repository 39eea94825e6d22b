package api

import (
	"context"
	"time"

	"github.com/latch-run/latch/store"
)

// attempt is one entry of GET /api/executions/{id}/attempts: one run of
// the execution, from its claim to its end. A run starts when it is
// claimed, so started_at is claimed_at; both are given so a reader need
// not know that.
type attempt struct {
	Attempt   int               `json:"attempt"`
	WorkerID  string            `json:"worker_id"`
	ClaimedAt time.Time         `json:"claimed_at"`
	StartedAt time.Time         `json:"started_at"`
	EndedAt   *time.Time        `json:"ended_at"`
	Outcome   *store.RunOutcome `json:"outcome"`
	Error     *string           `json:"error"`
}

type attemptsResponse struct {
	Items []attempt `json:"items"`
}

func toAttempt(r *store.Run) attempt {
	a := attempt{
		Attempt:   r.Attempt,
		WorkerID:  r.WorkerID,
		ClaimedAt: r.ClaimedAt.UTC(),
		StartedAt: r.ClaimedAt.UTC(),
		EndedAt:   optTime(r.EndedAt),
		Error:     optString(r.Error),
	}
	if r.Outcome != "" {
		o := r.Outcome
		a.Outcome = &o
	}
	return a
}

// listAttempts is GET /api/executions/{id}/attempts: the attempt history,
// oldest run first.
func (s *Server) listAttempts(ctx context.Context, req *idRequest) (*attemptsResponse, error) {
	runs, err := s.cfg.Store.Runs(ctx, &store.RunsParams{Tenant: principalFrom(ctx).scope(), ID: req.id})
	if err != nil {
		return nil, executionErr(err, req.id)
	}
	out := &attemptsResponse{Items: make([]attempt, 0, len(runs))}
	for _, r := range runs {
		out.Items = append(out.Items, toAttempt(r))
	}
	return out, nil
}
