package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/latch-run/latch/internal/backoff"
	"github.com/latch-run/latch/internal/fault"
	"github.com/latch-run/latch/store"
)

// Limits and defaults of the worker endpoints.
const (
	defaultClaimMax     = 1
	maxClaimMax         = 100
	defaultLeaseSeconds = 30
	maxLeaseSeconds     = 3600
	maxClaimWait        = 30
	maxFilters          = 100 // entries of queues or kinds
	maxTokenLen         = 256
)

// claimRequest is the body of POST /api/workers/claim.
type claimRequest struct {
	WorkerID     *string  `json:"worker_id"`
	Queues       []string `json:"queues"`
	Kinds        []string `json:"kinds"`
	Max          *int64   `json:"max"`
	LeaseSeconds *int64   `json:"lease_seconds"`
	WaitSeconds  *int64   `json:"wait_seconds"`
}

func (r *claimRequest) validate() error {
	if r.WorkerID == nil {
		return invalid("worker_id", "required")
	}
	if err := fieldProblem(store.CheckKey("worker_id", *r.WorkerID)); err != nil {
		return err
	}
	if len(r.Queues) > maxFilters {
		return invalid("queues", "at most %d queues", maxFilters)
	}
	for i, q := range r.Queues {
		if err := fieldProblem(store.CheckQueue(fmt.Sprintf("queues[%d]", i), q)); err != nil {
			return err
		}
	}
	if len(r.Kinds) > maxFilters {
		return invalid("kinds", "at most %d kinds", maxFilters)
	}
	for i, k := range r.Kinds {
		if err := fieldProblem(store.CheckKind(fmt.Sprintf("kinds[%d]", i), k)); err != nil {
			return err
		}
	}
	if err := optRange("max", r.Max, 1, maxClaimMax); err != nil {
		return err
	}
	if err := optRange("lease_seconds", r.LeaseSeconds, 1, maxLeaseSeconds); err != nil {
		return err
	}
	return optRange("wait_seconds", r.WaitSeconds, 0, maxClaimWait)
}

type claimResponse struct {
	Leases []lease `json:"leases"`
}

// claim is POST /api/workers/claim. A tenant key claims its tenant's work;
// the admin claims every tenant's, or the one named by Latch-Tenant. With
// wait_seconds it holds the request until something is claimed or the
// wait is over; an empty "leases" then means nothing was ready. A wait is a
// long poll: at most Config.MaxLongPollsPerTenant of a tenant at once.
func (s *Server) claim(ctx context.Context, req *claimRequest) (*claimResponse, error) {
	p := store.ClaimParams{
		WorkerID:      *req.WorkerID,
		Tenant:        principalFrom(ctx).scope(),
		Queues:        req.Queues,
		Kinds:         req.Kinds,
		Max:           int(orDefault(req.Max, defaultClaimMax)),
		LeaseDuration: time.Duration(orDefault(req.LeaseSeconds, defaultLeaseSeconds)) * time.Second,
	}
	wait := time.Duration(orDefault(req.WaitSeconds, 0)) * time.Second
	if wait > 0 {
		release, err := s.polls.acquire(principalFrom(ctx), "long polls")
		if err != nil {
			return nil, err
		}
		defer release()
	}
	var leases []store.Lease
	err := s.claimWait(ctx, wait, func(ctx context.Context) (bool, error) {
		if err := ctx.Err(); err != nil {
			return false, err // do not claim for a client that has gone
		}
		p.Now = s.cfg.Now()
		start := time.Now()
		res, err := s.cfg.Store.Claim(ctx, &p)
		if err != nil {
			return false, err
		}
		leases = res.Leases
		s.traceClaim(start, p.WorkerID, leases)
		return len(leases) > 0, nil
	})
	if err != nil {
		return nil, err
	}
	out := &claimResponse{Leases: make([]lease, 0, len(leases))}
	for i := range leases {
		out.Leases = append(out.Leases, toLease(&leases[i]))
	}
	s.metrics.leases.WithLabelValues(claimsHTTP).Add(float64(len(leases)))
	return out, nil
}

// tokenRequest holds what every fenced call has: the execution and the
// lease token.
type tokenRequest struct {
	idRequest
	LeaseToken *string `json:"lease_token"`
}

func (r *tokenRequest) validate() error {
	if r.LeaseToken == nil {
		return invalid("lease_token", "required")
	}
	if *r.LeaseToken == "" || len(*r.LeaseToken) > maxTokenLen {
		return invalid("lease_token", "must be 1-%d bytes", maxTokenLen)
	}
	return nil
}

// heartbeatRequest is the body of POST /api/executions/{id}/heartbeat.
type heartbeatRequest struct {
	tokenRequest
	LeaseSeconds *int64 `json:"lease_seconds"`
}

func (r *heartbeatRequest) validate() error {
	if err := r.tokenRequest.validate(); err != nil {
		return err
	}
	return optRange("lease_seconds", r.LeaseSeconds, 1, maxLeaseSeconds)
}

type heartbeatResponse struct {
	LeaseExpiresAt  time.Time `json:"lease_expires_at"`
	CancelRequested bool      `json:"cancel_requested"`
}

// heartbeat extends the lease and tells the worker whether to stop.
func (s *Server) heartbeat(ctx context.Context, req *heartbeatRequest) (*heartbeatResponse, error) {
	res, err := s.cfg.Store.Heartbeat(ctx, &store.HeartbeatParams{
		ExecutionID:   req.id,
		Tenant:        principalFrom(ctx).scope(),
		Token:         *req.LeaseToken,
		LeaseDuration: time.Duration(orDefault(req.LeaseSeconds, defaultLeaseSeconds)) * time.Second,
		Now:           s.cfg.Now(),
	})
	if err != nil {
		return nil, executionErr(err, req.id)
	}
	return &heartbeatResponse{LeaseExpiresAt: res.ExpiresAt.UTC(), CancelRequested: res.CancelRequested}, nil
}

// completeRequest is the body of POST /api/executions/{id}/complete.
type completeRequest struct {
	tokenRequest
	Result json.RawMessage `json:"result"`
}

// complete ends the attempt as succeeded. The result is stored in canonical
// JSON; absent or null stores null.
func (s *Server) complete(ctx context.Context, req *completeRequest) (done *execution, _ error) {
	defer s.traceSettled(ctx, "complete", time.Now(), &done)
	var result json.RawMessage
	if len(req.Result) > 0 && string(req.Result) != "null" {
		var err error
		if result, err = canonicalPayload("result", req.Result, s.cfg.MaxPayloadBytes); err != nil {
			return nil, err
		}
	}
	e, err := s.cfg.Store.Complete(ctx, &store.CompleteParams{
		ExecutionID: req.id,
		Tenant:      principalFrom(ctx).scope(),
		Token:       *req.LeaseToken,
		Result:      result,
		Now:         s.cfg.Now(),
	})
	if err != nil {
		return nil, executionErr(err, req.id)
	}
	fault.Point(fault.APICompleteCommitted)
	s.metrics.ranHTTP(e, s.cfg.Now(), false)
	return toExecution(e), nil
}

// failRequest is the body of POST /api/executions/{id}/fail.
type failRequest struct {
	tokenRequest
	Error             *string `json:"error"`
	Retry             *bool   `json:"retry"`
	RetryAfterSeconds *int64  `json:"retry_after_seconds"`
}

func (r *failRequest) validate() error {
	if err := r.tokenRequest.validate(); err != nil {
		return err
	}
	if r.Error == nil {
		return invalid("error", "required: say why the attempt failed")
	}
	return optRange("retry_after_seconds", r.RetryAfterSeconds, 0, maxDelay)
}

// failAttempt ends the attempt as failed. It is retried (unless retry is false or
// attempts are spent) after retry_after_seconds, or else after the
// exponential backoff with jitter of the attempt that failed. The error
// message is cut to store.MaxErrorBytes (4 KiB) by the store.
func (s *Server) failAttempt(ctx context.Context, req *failRequest) (done *execution, _ error) {
	defer s.traceSettled(ctx, "fail", time.Now(), &done)
	scope := principalFrom(ctx).scope()
	var delay time.Duration
	if req.RetryAfterSeconds != nil {
		delay = time.Duration(*req.RetryAfterSeconds) * time.Second
	} else {
		// The backoff depends on the attempt, which the request does not
		// carry. Reading it first is safe: Fail is fenced by the token, so
		// a stale read can only choose the delay of a call that then fails
		// with lease_lost.
		attempt := 1
		e, err := s.cfg.Store.Get(ctx, &store.GetParams{Tenant: scope, ID: req.id})
		switch {
		case err == nil:
			attempt = e.Attempt
		case !errors.Is(err, store.ErrNotFound):
			return nil, err
		}
		delay = backoff.Delay(attempt)
	}
	e, err := s.cfg.Store.Fail(ctx, &store.FailParams{
		ExecutionID: req.id,
		Tenant:      scope,
		Token:       *req.LeaseToken,
		Error:       *req.Error, // cut by the store (store.MaxErrorBytes)
		Retry:       req.Retry == nil || *req.Retry,
		RetryDelay:  delay,
		Now:         s.cfg.Now(),
	})
	if err != nil {
		return nil, executionErr(err, req.id)
	}
	s.metrics.ranHTTP(e, s.cfg.Now(), false)
	return toExecution(e), nil
}

// releaseRequest is the body of POST /api/executions/{id}/release.
type releaseRequest struct {
	tokenRequest
	Unstarted *bool `json:"unstarted"`
}

// release hands an attempt back unfinished (a worker's shutdown): the
// execution is queued again at once and runs again even if its attempts
// are spent, or ends cancelled when a cancel was requested. unstarted says
// the handler never ran (a lease claimed as the worker stopped): its start
// is given back.
func (s *Server) release(ctx context.Context, req *releaseRequest) (*execution, error) {
	e, err := s.cfg.Store.Release(ctx, &store.ReleaseParams{
		ExecutionID: req.id,
		Tenant:      principalFrom(ctx).scope(),
		Token:       *req.LeaseToken,
		Unstarted:   req.Unstarted != nil && *req.Unstarted,
		Now:         s.cfg.Now(),
	})
	if err != nil {
		return nil, executionErr(err, req.id)
	}
	return toExecution(e), nil
}

// bind for the fenced calls: the id from the path, no query parameters. An
// id that cannot exist is answered like any other unknown execution of a
// fenced call: lease_lost.
func (r *tokenRequest) bind(hr *http.Request) error {
	if _, err := query(hr); err != nil {
		return err
	}
	if r.bindID(hr) != nil {
		return problemFor(store.ErrLeaseLost)
	}
	return nil
}

func optRange(field string, v *int64, min, max int64) error {
	if v == nil {
		return nil
	}
	return checkRange(field, *v, min, max)
}

func orDefault(v *int64, def int64) int64 {
	if v == nil {
		return def
	}
	return *v
}
