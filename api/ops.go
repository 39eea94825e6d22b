package api

import (
	"context"
	"net/http"
	"time"
)

// readyTimeout bounds the store ping of /readyz.
const readyTimeout = 2 * time.Second

type statusResponse struct {
	Status string `json:"status"`
}

// healthz is GET /healthz: the process is up. It touches nothing.
func (s *Server) healthz(context.Context, *struct{}) (*statusResponse, error) {
	return &statusResponse{Status: "ok"}, nil
}

// readyz is GET /readyz: the store answers a ping within 2s, else 503
// unavailable.
func (s *Server) readyz(ctx context.Context, _ *struct{}) (*statusResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	if err := s.cfg.Store.Ping(ctx); err != nil {
		s.log.Warn("readiness check failed", "err", err)
		p := problem(CodeUnavailable, "the store does not answer")
		p.retryAfter = 1
		return nil, p
	}
	return &statusResponse{Status: "ready"}, nil
}

// openAPI is GET /api/openapi.json. It is public: the contract is no
// secret, and tools fetch it without credentials.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	if _, err := query(r); err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(openAPIDocument)
}
