package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/latch-run/latch/internal/fault"
	"github.com/latch-run/latch/store"
)

// idempotencyHeader is the header form of dedup_key.
const idempotencyHeader = "Idempotency-Key"

// submitRequest is the body of POST /api/executions and one item of a
// batch. Every optional field is a pointer: absent and null mean "not
// given".
type submitRequest struct {
	Kind             *string         `json:"kind"`
	Payload          json.RawMessage `json:"payload"`
	DedupKey         *string         `json:"dedup_key"`
	Queue            *string         `json:"queue"`
	Priority         *int64          `json:"priority"`
	RunAt            *string         `json:"run_at"`
	DelaySeconds     *int64          `json:"delay_seconds"`
	MaxAttempts      *int64          `json:"max_attempts"`
	TimeoutSeconds   *int64          `json:"timeout_seconds"`
	ConcurrencyKey   *string         `json:"concurrency_key"`
	ConcurrencyLimit *int64          `json:"concurrency_limit"`
	RateKey          *string         `json:"rate_key"`

	idempotencyKey *string // the Idempotency-Key header
}

func (r *submitRequest) bind(hr *http.Request) error {
	if _, err := query(hr); err != nil {
		return err
	}
	if k, ok := headerValue(hr, idempotencyHeader); ok {
		r.idempotencyKey = &k
	}
	return nil
}

// submission checks the request and turns it into a store.Submission.
// prefix ("items[3].") is put before field names in problems.
func (r *submitRequest) submission(now time.Time, maxPayload int, prefix string) (store.Submission, error) {
	var sub store.Submission
	if r.Kind == nil {
		return sub, invalid(prefix+"kind", "required")
	}
	if err := fieldProblem(store.CheckKind(prefix+"kind", *r.Kind)); err != nil {
		return sub, err
	}
	sub.Kind = *r.Kind

	payload, err := canonicalPayload(prefix+"payload", r.Payload, maxPayload)
	if err != nil {
		return sub, err
	}
	sub.Payload = payload

	if r.idempotencyKey != nil {
		if err := fieldProblem(store.CheckKey(idempotencyHeader, *r.idempotencyKey)); err != nil {
			return sub, err
		}
		if r.DedupKey != nil && *r.DedupKey != *r.idempotencyKey {
			return sub, invalid(prefix+"dedup_key", "differs from the %s header; send one or make them equal", idempotencyHeader)
		}
		sub.DedupKey = *r.idempotencyKey
	}
	if r.DedupKey != nil {
		if err := fieldProblem(store.CheckKey(prefix+"dedup_key", *r.DedupKey)); err != nil {
			return sub, err
		}
		sub.DedupKey = *r.DedupKey
	}
	if r.Queue != nil {
		if err := fieldProblem(store.CheckQueue(prefix+"queue", *r.Queue)); err != nil {
			return sub, err
		}
		sub.Queue = *r.Queue
	}
	if r.Priority != nil {
		if err := fieldProblem(store.CheckPriority(prefix+"priority", *r.Priority)); err != nil {
			return sub, err
		}
		sub.Priority = int(*r.Priority)
	}

	switch {
	case r.RunAt != nil && r.DelaySeconds != nil:
		return sub, invalid(prefix+"run_at", "give run_at or delay_seconds, not both")
	case r.RunAt != nil:
		t, err := time.Parse(time.RFC3339Nano, *r.RunAt)
		if err != nil {
			return sub, invalid(prefix+"run_at", "must be an RFC 3339 time such as 2030-01-02T15:04:05Z")
		}
		if err := fieldProblem(store.CheckRunAt(prefix+"run_at", t, now)); err != nil {
			return sub, err
		}
		sub.RunAt = t.UTC()
	case r.DelaySeconds != nil:
		if err := fieldProblem(store.CheckDelaySeconds(prefix+"delay_seconds", *r.DelaySeconds)); err != nil {
			return sub, err
		}
		sub.RunAt = now.Add(time.Duration(*r.DelaySeconds) * time.Second).UTC()
	}

	if r.MaxAttempts != nil {
		if err := fieldProblem(store.CheckMaxAttempts(prefix+"max_attempts", *r.MaxAttempts)); err != nil {
			return sub, err
		}
		sub.MaxAttempts = int(*r.MaxAttempts)
	}
	if r.TimeoutSeconds != nil {
		if err := fieldProblem(store.CheckTimeoutSeconds(prefix+"timeout_seconds", *r.TimeoutSeconds)); err != nil {
			return sub, err
		}
		sub.TimeoutSeconds = int(*r.TimeoutSeconds)
	}
	if r.ConcurrencyKey != nil {
		if err := fieldProblem(store.CheckKey(prefix+"concurrency_key", *r.ConcurrencyKey)); err != nil {
			return sub, err
		}
		sub.ConcurrencyKey = *r.ConcurrencyKey
		sub.ConcurrencyLimit = store.DefaultConcurrencyLimit
	}
	if r.ConcurrencyLimit != nil {
		if r.ConcurrencyKey == nil {
			return sub, invalid(prefix+"concurrency_limit", "needs concurrency_key")
		}
		if err := fieldProblem(store.CheckConcurrencyLimit(prefix+"concurrency_limit", *r.ConcurrencyLimit)); err != nil {
			return sub, err
		}
		sub.ConcurrencyLimit = int(*r.ConcurrencyLimit)
	}
	if r.RateKey != nil {
		if err := fieldProblem(store.CheckKey(prefix+"rate_key", *r.RateKey)); err != nil {
			return sub, err
		}
		sub.RateKey = *r.RateKey
	}
	return sub, nil
}

// canonicalPayload returns raw in canonical form, {} when absent or null,
// refusing more than max bytes.
func canonicalPayload(field string, raw json.RawMessage, max int) (json.RawMessage, error) {
	return canonicalOr(json.RawMessage("{}"), field, raw, max)
}

// canonicalOr returns raw in canonical form (store.CanonicalJSON), dflt
// when absent or null, refusing a document that nests more than
// store.MaxJSONDepth levels (400 invalid_request naming the field) or is
// over max bytes (413 payload_too_large).
func canonicalOr(dflt json.RawMessage, field string, raw json.RawMessage, max int) (json.RawMessage, error) {
	if len(raw) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return dflt, nil
	}
	c, err := store.CanonicalJSON(raw)
	var fe *store.FieldError
	switch {
	case errors.As(err, &fe):
		return nil, fieldProblem(renamed(err, field))
	case err != nil:
		return nil, invalid(field, "must be JSON")
	}
	if err := fieldProblem(store.CheckPayloadSize(field, c, max)); err != nil {
		return nil, err
	}
	return c, nil
}

// submitResponse is a submit's answer: 201 new, 200 deduplicated.
type submitResponse struct {
	*execution
	status int
}

func (r *submitResponse) statusCode() int { return r.status }

// submit is POST /api/executions.
func (s *Server) submit(ctx context.Context, req *submitRequest) (*submitResponse, error) {
	owner, err := principalFrom(ctx).owner()
	if err != nil {
		return nil, err
	}
	now := s.cfg.Now()
	sub, err := req.submission(now, s.cfg.MaxPayloadBytes, "")
	if err != nil {
		s.metrics.submitted(string(problemFor(err).Code))
		return nil, err
	}
	ctx, span, traceParent := s.startSubmit(ctx, "submit", owner)
	sub.TraceParent = traceParent
	items, err := s.admit(ctx, owner, now, []store.Submission{sub})
	if err != nil {
		endSubmit(span, nil, err)
		return nil, err
	}
	endSubmit(span, &items[0], nil)
	fault.Point(fault.APISubmitCommitted)
	resp, p := s.outcome(items[0])
	if p != nil {
		return nil, p
	}
	return resp, nil
}

// admit runs one Store.Admit for the owner's items.
func (s *Server) admit(ctx context.Context, owner string, now time.Time, subs []store.Submission) ([]store.Admitted, error) {
	res, err := s.cfg.Store.Admit(ctx, &store.AdmitParams{Tenant: owner, Items: subs, Now: now})
	if errors.Is(err, store.ErrNotFound) {
		return nil, problem(CodeNotFound, "tenant %q not found", owner)
	}
	if err != nil {
		return nil, err
	}
	if len(res.Items) != len(subs) {
		return nil, errors.New("api: store.Admit returned a result per item count that does not match")
	}
	return res.Items, nil
}

// outcome turns one store decision into an answer or a problem, and counts
// it.
func (s *Server) outcome(it store.Admitted) (*submitResponse, *Problem) {
	switch {
	case it.Err != nil:
		p := problemFor(it.Err)
		s.metrics.submitted(string(p.Code))
		return nil, p
	case it.Execution == nil:
		s.metrics.submitted(string(CodeInternal))
		return nil, problemFor(errors.New("api: store.Admit returned an item with neither execution nor error"))
	case it.Deduplicated:
		s.metrics.submitted("deduplicated")
		return &submitResponse{submitted(it.Execution, true), http.StatusOK}, nil
	}
	s.metrics.submitted("created")
	return &submitResponse{submitted(it.Execution, false), http.StatusCreated}, nil
}
