// Package api is latch's HTTP API: the endpoints of docs/api.md's sections
// "Authentication and tenants", "Executions", "Workers", "Flows",
// "Schedules" and "Rate limits", and the operational endpoints /healthz, /readyz, /metrics
// and /api/openapi.json.
//
// New returns a Server, an http.Handler; the caller owns the http.Server
// and its timeouts. The server holds no business state: every change is one
// store.Store operation, so any number of servers may share one store. The
// one exception is the stream tickets (tickets.go): kept in the memory of
// the server that issued them, they are redeemed on that server only.
//
// The contract this package keeps:
//
//   - Every /api/ endpoint but /api/openapi.json needs Authorization:
//     Bearer <key>. Keys are stored as HashKey(key). A tenant key acts for
//     its own tenant; the admin acts for the tenant named by Latch-Tenant,
//     or, without it, reads, changes and claims executions across all
//     tenants and lists every tenant's schedules (a submit, and any other
//     schedule or rate limit call, then needs the header). Another
//     tenant's execution, schedule or rate limit is answered exactly like
//     a missing one: 404 not_found (409 lease_lost
//     for the fenced worker calls, which answer so for any execution whose
//     lease the token does not hold). Tenant endpoints are for the admin,
//     except that a tenant key may read its own tenant; a tenant key on an
//     admin endpoint gets 403 forbidden.
//   - Each endpoint is a typed func(ctx, *Req) (*Resp, error) behind one
//     wrapper (endpoint.go) that authenticates, checks Content-Type
//     (application/json, UTF-8), bounds and strictly decodes the body
//     (unknown or repeated fields, wrong types, malformed JSON and trailing
//     data are 400 invalid_request naming the field), refuses unknown query
//     parameters, validates, applies Config.RequestTimeout and maps errors
//     to RFC 9457 problem documents with a stable code (problem.go).
//     Internal errors are logged and answered as "internal", never echoed.
//   - Submits go to the store as one Store.Admit call, a batch included, so
//     dedup, quota and the queue entry are decided atomically by the store.
//     Payloads are stored as store.CanonicalJSON. A schedule's trigger is
//     one Store.FireSchedule call: a tick of its own, deduplicated only by
//     its Idempotency-Key. Schedule
//     timings are checked and their ticks computed by package schedule.
//   - Long polls (GET ?wait_seconds, claim wait_seconds) and event streams
//     wait through one watch.Hub (wait.go): a change wakes only the waiters
//     of the executions it changed, who share one read of each (all
//     watched executions are read again once when the store cannot say
//     which changed), and a few waiting claims rather than all; everything
//     is read again every Config.PollInterval in any case. Server.Close
//     ends them early for a graceful shutdown.
//   - GET /api/executions/{id}/events also takes ?ticket= in place of the
//     key (browsers' EventSource cannot send it): a single-use ticket for
//     that execution, valid 60 s, redeemed as the key that asked for it
//     (streamticket.go). No other endpoint takes one; requests are logged
//     by their path, never their query, so tickets stay out of the logs.
//   - Bounds: per tenant, open event streams, long polls and unused stream
//     tickets are capped (429 too_many_requests, slots.go, tickets.go) and
//     schedules too (409
//     schedule_limit, counted by the store); server-wide, large bodies are
//     read within a budget of bytes (503 unavailable, budget.go).
//   - Metrics live on a registry the Server owns (Registry), never the
//     global one.
//   - The OpenAPI 3.1 document (openapi.json, embedded) lists exactly the
//     routes of routes.go; a test keeps them in step.
package api
