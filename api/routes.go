package api

import (
	"net/http"
	"time"
)

// route is one registered endpoint: a Go 1.22 ServeMux pattern and its
// handler. The OpenAPI document lists exactly these.
type route struct {
	pattern string
	handler http.Handler
}

// The longest waits of the long-poll endpoints.
const (
	getHold   = maxWaitSeconds * time.Second
	claimHold = maxClaimWait * time.Second
)

// routes lists every endpoint.
func (s *Server) routes() []route {
	body := spec{body: true}
	leased := spec{body: true, leased: true}
	return []route{
		{"GET /healthz", endpoint(s, spec{public: true}, s.healthz)},
		{"GET /readyz", endpoint(s, spec{public: true}, s.readyz)},
		{"GET /metrics", s.metricsHandler()},
		{"GET /api/openapi.json", http.HandlerFunc(s.openAPI)},

		{"POST /api/tenants", endpoint(s, body, s.createTenant)},
		{"GET /api/tenants/{name}", endpoint(s, spec{}, s.getTenant)},
		{"PATCH /api/tenants/{name}", endpoint(s, body, s.patchTenant)},
		{"DELETE /api/tenants/{name}", endpoint(s, spec{}, s.deleteTenant)},
		{"POST /api/tenants/{name}/keys", endpoint(s, spec{}, s.addKey)},
		{"GET /api/tenants/{name}/keys", endpoint(s, spec{}, s.listKeys)},
		{"DELETE /api/tenants/{name}/keys/{key_id}", endpoint(s, spec{}, s.deleteKey)},

		{"POST /api/executions", endpoint(s, body, s.submit)},
		{"POST /api/executions/batch", endpoint(s, spec{body: true, limit: s.cfg.MaxBatchBytes}, s.submitBatch)},
		{"GET /api/executions", endpoint(s, spec{}, s.listExecutions)},
		{"GET /api/executions/{id}", endpoint(s, spec{hold: getHold}, s.getExecution)},
		{"GET /api/executions/{id}/events", http.HandlerFunc(s.events)},
		{"POST /api/executions/{id}/stream-ticket", endpoint(s, spec{}, s.issueStreamTicket)},
		{"POST /api/executions/{id}/cancel", endpoint(s, spec{}, s.cancelExecution)},
		{"DELETE /api/executions/{id}", endpoint(s, spec{}, s.deleteExecution)},
		{"GET /api/executions/{id}/attempts", endpoint(s, spec{}, s.listAttempts)},
		{"GET /api/executions/{id}/explain", endpoint(s, spec{}, s.explainExecution)},

		{"POST /api/workers/claim", endpoint(s, spec{body: true, hold: claimHold}, s.claim)},
		{"POST /api/executions/{id}/heartbeat", endpoint(s, leased, s.heartbeat)},
		{"POST /api/executions/{id}/complete", endpoint(s, leased, s.complete)},
		{"POST /api/executions/{id}/fail", endpoint(s, leased, s.failAttempt)},
		{"POST /api/executions/{id}/release", endpoint(s, leased, s.release)},

		{"POST /api/executions/{id}/steps", endpoint(s, leased, s.recordStep)},
		{"POST /api/executions/{id}/suspend", endpoint(s, leased, s.suspend)},
		{"POST /api/executions/{id}/signals/{name}", endpoint(s, spec{body: true, optional: true}, s.signal)},
		{"GET /api/executions/{id}/steps", endpoint(s, spec{}, s.listSteps)},
		{"POST /api/executions/{id}/retry", endpoint(s, spec{}, s.retryExecution)},
		{"POST /api/executions/{id}/children", endpoint(s, spec{body: true, limit: s.cfg.MaxBatchBytes}, s.spawn)},

		{"PUT /api/schedules/{name}", endpoint(s, body, s.putSchedule)},
		{"GET /api/schedules", endpoint(s, spec{}, s.listSchedules)},
		{"GET /api/schedules/{name}", endpoint(s, spec{}, s.getSchedule)},
		{"POST /api/schedules/{name}/trigger", endpoint(s, spec{}, s.triggerSchedule)},
		{"POST /api/schedules/{name}/pause", endpoint(s, spec{}, s.pauseSchedule)},
		{"POST /api/schedules/{name}/resume", endpoint(s, spec{}, s.resumeSchedule)},
		{"DELETE /api/schedules/{name}", endpoint(s, spec{}, s.deleteSchedule)},

		{"POST /api/events", endpoint(s, body, s.publish)},
		{"PUT /api/subscriptions/{name}", endpoint(s, body, s.putSubscription)},
		{"GET /api/subscriptions", endpoint(s, spec{}, s.listSubscriptions)},
		{"GET /api/subscriptions/{name}", endpoint(s, spec{}, s.getSubscription)},
		{"DELETE /api/subscriptions/{name}", endpoint(s, spec{}, s.deleteSubscription)},

		{"PUT /api/rate-limits/{key}", endpoint(s, body, s.putRateLimit)},
		{"GET /api/rate-limits/{key}", endpoint(s, spec{}, s.getRateLimit)},
		{"DELETE /api/rate-limits/{key}", endpoint(s, spec{}, s.deleteRateLimit)},
	}
}
