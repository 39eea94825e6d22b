package api

import (
	"context"
	"time"

	"github.com/latch-run/latch/store"
)

// explainResponse is GET /api/executions/{id}/explain: every gate that
// holds the execution back now (none for a running or terminal one).
type explainResponse struct {
	ExecutionID string       `json:"execution_id"`
	Status      store.Status `json:"status"`
	Gates       []any        `json:"gates"`
}

// gateHead is what every gate says: which it is, and a sentence.
type gateHead struct {
	Gate   store.GateKind `json:"gate"`
	Detail string         `json:"detail"`
}

// The gates on the wire, each with its figures (docs/api.md, "Explain").
type (
	concurrencyGate struct {
		gateHead
		Key     string   `json:"key"`
		Limit   int      `json:"limit"`
		Running int      `json:"running"`
		Holders []string `json:"holders"`
	}
	rateGate struct {
		gateHead
		Key         string    `json:"key"`
		NextTokenAt time.Time `json:"next_token_at"`
	}
	runAtGate struct {
		gateHead
		RunAt time.Time `json:"run_at"`
	}
	waitingGate struct {
		gateHead
		WaitingFor *string    `json:"waiting_for"`
		WakeAt     *time.Time `json:"wake_at"`
	}
	fairTurnGate struct {
		gateHead
		TenantsAhead int `json:"tenants_ahead"`
	}
	noWorkerGate struct {
		gateHead
		Queue string `json:"queue"`
		Kind  string `json:"kind"`
	}
)

// toGate is g on the wire.
func toGate(g *store.Gate) any {
	h := gateHead{Gate: g.Gate, Detail: g.Detail}
	switch g.Gate {
	case store.GateConcurrencyKey:
		holders := g.Holders
		if holders == nil {
			holders = []string{}
		}
		return concurrencyGate{h, g.Key, g.Limit, g.Running, holders}
	case store.GateRateLimit:
		return rateGate{h, g.Key, g.NextTokenAt.UTC()}
	case store.GateRunAt:
		return runAtGate{h, g.RunAt.UTC()}
	case store.GateWaiting:
		return waitingGate{h, optString(g.WaitingFor), optTime(g.WakeAt)}
	case store.GateFairTurn:
		return fairTurnGate{h, g.TenantsAhead}
	case store.GateNoWorker:
		return noWorkerGate{h, g.Queue, g.Kind}
	}
	return h
}

// explainExecution is GET /api/executions/{id}/explain. It reads only.
func (s *Server) explainExecution(ctx context.Context, req *idRequest) (*explainResponse, error) {
	x, err := s.cfg.Store.Explain(ctx, &store.ExplainParams{Tenant: principalFrom(ctx).scope(), ID: req.id, Now: s.cfg.Now()})
	if err != nil {
		return nil, executionErr(err, req.id)
	}
	out := &explainResponse{ExecutionID: x.ExecutionID, Status: x.Status, Gates: make([]any, 0, len(x.Gates))}
	for i := range x.Gates {
		out.Gates = append(out.Gates, toGate(&x.Gates[i]))
	}
	return out, nil
}
