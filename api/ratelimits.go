package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/latch-run/latch/store"
)

// Limits of a rate limit's settings.
const (
	maxRate       = 1_000_000
	maxBurst      = 1_000_000
	maxPerSeconds = 366 * 24 * 3600
)

// rateLimitOwner completes the problem of an admin that did not name the
// tenant of a rate limit.
const rateLimitOwner = "that owns the rate limit"

// rateLimitKey names one rate limit by its path value.
type rateLimitKey struct {
	key string
}

// bind: a key no rate limit can have is answered like a missing limit.
func (r *rateLimitKey) bind(hr *http.Request) error {
	if _, err := query(hr); err != nil {
		return err
	}
	r.key = hr.PathValue("key")
	if fieldProblem(store.CheckKey("key", r.key)) != nil {
		return problem(CodeNotFound, "rate limit %q not found", r.key)
	}
	return nil
}

// putRateLimitRequest is the body of PUT /api/rate-limits/{key}. A GET
// answer may be sent back as it is: "key" is accepted but must equal the
// path's, and created_at and updated_at, read-only, are accepted (checked
// for type) and ignored.
type putRateLimitRequest struct {
	path string // the key in the path

	Key        *string `json:"key"`
	Rate       *int64  `json:"rate"`
	PerSeconds *int64  `json:"per_seconds"`
	Burst      *int64  `json:"burst"`
	CreatedAt  *string `json:"created_at"` // read-only: checked for type, then ignored
	UpdatedAt  *string `json:"updated_at"` // read-only: checked for type, then ignored
}

func (r *putRateLimitRequest) bind(hr *http.Request) error {
	if _, err := query(hr); err != nil {
		return err
	}
	r.path = hr.PathValue("key")
	return nil
}

func (r *putRateLimitRequest) validate() error {
	if err := fieldProblem(store.CheckKey("key", r.path)); err != nil {
		return err
	}
	if r.Key != nil && *r.Key != r.path {
		return invalid("key", "must equal the key in the path")
	}
	if r.Rate == nil {
		return invalid("rate", "required")
	}
	if err := checkRange("rate", *r.Rate, 1, maxRate); err != nil {
		return err
	}
	if r.PerSeconds == nil {
		return invalid("per_seconds", "required")
	}
	if err := checkRange("per_seconds", *r.PerSeconds, 1, maxPerSeconds); err != nil {
		return err
	}
	return optRange("burst", r.Burst, 1, maxBurst)
}

// limit is the request as the tenant's store.RateLimit.
func (r *putRateLimitRequest) limit(tenant string) store.RateLimit {
	return store.RateLimit{
		Tenant: tenant,
		Key:    r.path,
		Rate:   int(*r.Rate),
		Per:    time.Duration(*r.PerSeconds) * time.Second,
		Burst:  int(orDefault(r.Burst, store.DefaultBurst)),
	}
}

// putRateLimit is PUT /api/rate-limits/{key}: create or replace the
// tenant's limit for the rate key. A replace keeps the bucket's state.
func (s *Server) putRateLimit(ctx context.Context, req *putRateLimitRequest) (*rateLimit, error) {
	owner, err := principalFrom(ctx).ownerOf(rateLimitOwner)
	if err != nil {
		return nil, err
	}
	r, err := s.cfg.Store.PutRateLimit(ctx, &store.PutRateLimitParams{Limit: req.limit(owner), Now: s.cfg.Now()})
	if err != nil {
		return nil, tenantErr(err, owner)
	}
	return toRateLimit(r), nil
}

// getRateLimit is GET /api/rate-limits/{key}.
func (s *Server) getRateLimit(ctx context.Context, req *rateLimitKey) (*rateLimit, error) {
	owner, err := principalFrom(ctx).ownerOf(rateLimitOwner)
	if err != nil {
		return nil, err
	}
	r, err := s.cfg.Store.GetRateLimit(ctx, &store.GetRateLimitParams{Tenant: owner, Key: req.key})
	if err != nil {
		return nil, rateLimitErr(err, req.key)
	}
	return toRateLimit(r), nil
}

// deleteRateLimit is DELETE /api/rate-limits/{key}: executions with the
// key then start freely. docs/api.md ("Rate limits") answers it 200 too:
// 200, with the limit as it was just before the delete (read first; a PUT
// racing the delete may make that answer one version old, never wrong
// about the delete itself).
func (s *Server) deleteRateLimit(ctx context.Context, req *rateLimitKey) (*rateLimit, error) {
	owner, err := principalFrom(ctx).ownerOf(rateLimitOwner)
	if err != nil {
		return nil, err
	}
	r, err := s.cfg.Store.GetRateLimit(ctx, &store.GetRateLimitParams{Tenant: owner, Key: req.key})
	if err != nil {
		return nil, rateLimitErr(err, req.key)
	}
	err = s.cfg.Store.DeleteRateLimit(ctx, &store.DeleteRateLimitParams{Tenant: owner, Key: req.key})
	if err != nil {
		return nil, rateLimitErr(err, req.key)
	}
	return toRateLimit(r), nil
}

// rateLimitErr gives a missing rate limit a detail that names it.
func rateLimitErr(err error, key string) error {
	if errors.Is(err, store.ErrNotFound) {
		return problem(CodeNotFound, "rate limit %q not found", key)
	}
	return err
}
