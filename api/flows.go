package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/latch-run/latch/store"
)

// The endpoints of flows (docs/api.md, "Flows"): a worker records steps and
// suspends on its lease; anyone with the tenant's key sends signals, reads
// the journal and retries a failed execution.

// maxSignalTimeout bounds timeout_seconds of a wait: a year. A longer wait
// is a wait without a timeout.
const maxSignalTimeout = 365 * 24 * 60 * 60

// canonicalResult returns raw in canonical form, nil (null) when absent or
// null, refusing it like a payload.
func canonicalResult(field string, raw json.RawMessage, max int) (json.RawMessage, error) {
	return canonicalOr(nil, field, raw, max)
}

// parseTime reads an RFC 3339 time of field.
func parseTime(field, v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, invalid(field, "must be an RFC 3339 time such as 2030-01-02T15:04:05Z")
	}
	return t.UTC(), nil
}

// stepRequest is the body of POST /api/executions/{id}/steps.
type stepRequest struct {
	tokenRequest
	Name      *string         `json:"name"`
	Result    json.RawMessage `json:"result"`
	StartedAt *string         `json:"started_at"`

	startedAt time.Time
}

func (r *stepRequest) validate() error {
	if err := r.tokenRequest.validate(); err != nil {
		return err
	}
	if r.Name == nil {
		return invalid("name", "required")
	}
	if err := fieldProblem(renamed(store.CheckStepName(*r.Name), "name")); err != nil {
		return err
	}
	if r.StartedAt != nil {
		t, err := parseTime("started_at", *r.StartedAt)
		if err != nil {
			return err
		}
		r.startedAt = t
	}
	return nil
}

// stepRecord is the answer of POST .../steps: the step as recorded, by
// this call (recorded) or an earlier one, whose result wins.
type stepRecord struct {
	Name     string          `json:"name"`
	Result   json.RawMessage `json:"result"`
	Recorded bool            `json:"recorded"`
}

// recordStep is POST /api/executions/{id}/steps, fenced by the lease.
func (s *Server) recordStep(ctx context.Context, req *stepRequest) (*stepRecord, error) {
	result, err := canonicalResult("result", req.Result, s.cfg.MaxPayloadBytes)
	if err != nil {
		return nil, err
	}
	res, err := s.cfg.Store.RecordStep(ctx, &store.RecordStepParams{
		ExecutionID: req.id,
		Tenant:      principalFrom(ctx).scope(),
		Token:       *req.LeaseToken,
		Name:        *req.Name,
		Result:      result,
		StartedAt:   req.startedAt,
		Now:         s.cfg.Now(),
	})
	if err != nil {
		return nil, executionErr(err, req.id)
	}
	return &stepRecord{Name: res.Step.Name, Result: jsonOrNull(res.Step.Result), Recorded: res.Recorded}, nil
}

// suspendRequest is the body of POST /api/executions/{id}/suspend: a sleep
// (until), a wait for a signal (signal, timeout_seconds), a fan-in wait
// for the children of a spawn step (children, count, timeout_seconds) or
// a wait for an event (event, key, since, timeout_seconds).
type suspendRequest struct {
	tokenRequest
	Step           *string `json:"step"`
	Until          *string `json:"until"`
	Signal         *string `json:"signal"`
	Children       *string `json:"children"`
	Count          *int64  `json:"count"`
	Event          *string `json:"event"`
	Key            *string `json:"key"`
	Since          *string `json:"since"`
	TimeoutSeconds *int64  `json:"timeout_seconds"`

	since time.Time
}

func (r *suspendRequest) validate() error {
	if err := r.tokenRequest.validate(); err != nil {
		return err
	}
	if r.Step == nil {
		return invalid("step", "required")
	}
	if err := fieldProblem(store.CheckStepName(*r.Step)); err != nil {
		return err
	}
	given := 0
	for _, set := range []bool{r.Until != nil, r.Signal != nil, r.Children != nil, r.Event != nil} {
		if set {
			given++
		}
	}
	switch {
	case given > 1:
		return invalid("until", "give one of until (a sleep), signal (a wait for a signal), children (a wait for children) and event (a wait for an event)")
	case given == 0:
		return invalid("until", "required for a sleep; a wait gives signal, children or event instead")
	case r.Count != nil && r.Children == nil:
		return invalid("count", "counts the children a wait for children waits for: only with children")
	case r.Key != nil && r.Event == nil:
		return invalid("key", "the correlation key of a wait for an event: only with event")
	case r.Since != nil && r.Event == nil:
		return invalid("since", "bounds a wait for an event: only with event")
	case r.Until != nil:
		if r.TimeoutSeconds != nil {
			return invalid("timeout_seconds", "bounds a wait: only with signal, children or event")
		}
		_, err := parseTime("until", *r.Until)
		return err
	case r.Signal != nil:
		if err := fieldProblem(store.CheckSignalName(*r.Signal)); err != nil {
			return err
		}
	case r.Event != nil:
		if err := fieldProblem(renamed(store.CheckSignalName(*r.Event), "event")); err != nil {
			return err
		}
		if r.Key != nil {
			if err := fieldProblem(store.CheckText("key", *r.Key, store.MaxEventKeyLen)); err != nil {
				return err
			}
		}
		if r.Since != nil {
			t, err := parseTime("since", *r.Since)
			if err != nil {
				return err
			}
			r.since = t
		}
	default:
		if err := fieldProblem(renamed(store.CheckStepName(*r.Children), "children")); err != nil {
			return err
		}
		if err := optRange("count", r.Count, 0, store.MaxSpawnItems); err != nil {
			return err
		}
	}
	return optRange("timeout_seconds", r.TimeoutSeconds, 0, maxSignalTimeout)
}

// suspend is POST /api/executions/{id}/suspend, fenced by the lease: the
// attempt ends suspended, or queued at once when the sleep is over, the
// signal already came, the children waited for have ended or a retained
// event matches the wait (it is consumed).
func (s *Server) suspend(ctx context.Context, req *suspendRequest) (*execution, error) {
	now := s.cfg.Now()
	p := store.SuspendParams{
		ExecutionID: req.id,
		Tenant:      principalFrom(ctx).scope(),
		Token:       *req.LeaseToken,
		Step:        *req.Step,
		Now:         now,
	}
	switch {
	case req.Until != nil:
		p.Until, _ = parseTime("until", *req.Until) // validated
		if err := fieldProblem(store.CheckRunAt("until", p.Until, now)); err != nil {
			return nil, err
		}
	case req.Signal != nil:
		p.Signal = *req.Signal
		p.Timeout = time.Duration(orDefault(req.TimeoutSeconds, 0)) * time.Second
	case req.Event != nil:
		p.Event = *req.Event
		if req.Key != nil {
			p.EventKey = *req.Key
		}
		p.Since = req.since
		p.Timeout = time.Duration(orDefault(req.TimeoutSeconds, 0)) * time.Second
	default:
		p.Children = *req.Children
		p.Count = int(orDefault(req.Count, 0))
		p.Timeout = time.Duration(orDefault(req.TimeoutSeconds, 0)) * time.Second
	}
	if err := fieldProblem(p.Check()); err != nil {
		return nil, err
	}
	e, err := s.cfg.Store.Suspend(ctx, &p)
	if err != nil {
		return nil, executionErr(err, req.id)
	}
	s.metrics.ranHTTP(e, s.cfg.Now(), true)
	return toExecution(e), nil
}

// signalRequest is POST /api/executions/{id}/signals/{name}: the body
// ({"data"?}) may be left out, and Idempotency-Key makes it once-only.
type signalRequest struct {
	idRequest
	Data json.RawMessage `json:"data"`

	name           string
	idempotencyKey string
}

func (r *signalRequest) bind(hr *http.Request) error {
	if err := r.idRequest.bind(hr); err != nil {
		return err
	}
	r.name = hr.PathValue("name")
	if err := fieldProblem(store.CheckSignalName(r.name)); err != nil {
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

// signalResponse is a signal's 202 answer.
type signalResponse struct {
	Delivered bool `json:"delivered"`
}

func (*signalResponse) statusCode() int { return http.StatusAccepted }

// signal is POST /api/executions/{id}/signals/{name}.
func (s *Server) signal(ctx context.Context, req *signalRequest) (*signalResponse, error) {
	data, err := canonicalResult("data", req.Data, s.cfg.MaxPayloadBytes)
	if err != nil {
		return nil, err
	}
	res, err := s.cfg.Store.Signal(ctx, &store.SignalParams{
		Tenant:         principalFrom(ctx).scope(),
		ExecutionID:    req.id,
		Name:           req.name,
		Data:           data,
		IdempotencyKey: req.idempotencyKey,
		Now:            s.cfg.Now(),
	})
	if err != nil {
		return nil, executionErr(err, req.id)
	}
	return &signalResponse{Delivered: res.Delivered}, nil
}

// step is one entry of GET /api/executions/{id}/steps.
type step struct {
	Name       string          `json:"name"`
	Result     json.RawMessage `json:"result"`
	StartedAt  *time.Time      `json:"started_at"`
	RecordedAt time.Time       `json:"recorded_at"`
	Attempt    int             `json:"attempt"`
}

// stepsRequest is GET /api/executions/{id}/steps with its page: limit and
// cursor, as the executions list takes them.
type stepsRequest struct {
	idRequest
	limit int
	after int64
}

func (r *stepsRequest) bind(hr *http.Request) error {
	q, err := query(hr, "limit", "cursor")
	if err != nil {
		return err
	}
	// A page holds every step by default (a journal holds at most
	// store.MaxSteps), cut only by its bytes: a journal within them comes
	// whole in one answer, as the contract has it.
	if r.limit, err = queryLimit(q, store.MaxSteps, store.MaxSteps); err != nil {
		return err
	}
	if v := q.Get("cursor"); v != "" {
		key, ok := decodeCursorOf(v, maxSeqLen, isSeq)
		if !ok {
			return invalid("cursor", "not a cursor this server issued; use next_cursor of a previous page")
		}
		r.after, _ = strconv.ParseInt(key, 10, 64)
	}
	return r.bindID(hr)
}

// A steps cursor is the store's Next (a step's place in its journal) in
// decimal, made opaque by encodeCursor like the list's.
const maxSeqLen = 19 // digits of the largest int64

// isSeq reports whether key is a positive decimal int64 without leading
// zeros.
func isSeq(key string) bool {
	n, err := strconv.ParseInt(key, 10, 64)
	return err == nil && n > 0 && strconv.FormatInt(n, 10) == key
}

type stepsResponse struct {
	Items      []step  `json:"items"`
	NextCursor *string `json:"next_cursor"`
}

// listSteps is GET /api/executions/{id}/steps: one page of the journal in
// record order, at most limit steps, cut short (with next_cursor set) once
// its names and results reach MaxListBytes, as a page of the executions
// list is. The store reads the results of the page's steps only, so a
// request holds one page, whatever the journal's size.
func (s *Server) listSteps(ctx context.Context, req *stepsRequest) (*stepsResponse, error) {
	page, err := s.cfg.Store.Steps(ctx, &store.StepsParams{Tenant: principalFrom(ctx).scope(), ID: req.id,
		After: req.after, Limit: req.limit, MaxBytes: s.cfg.MaxListBytes})
	if err != nil {
		return nil, executionErr(err, req.id)
	}
	out := &stepsResponse{Items: make([]step, 0, len(page.Items))}
	for _, st := range page.Items {
		item := step{Name: st.Name, Result: jsonOrNull(st.Result), RecordedAt: st.RecordedAt.UTC(), Attempt: st.Attempt}
		if !st.StartedAt.IsZero() {
			t := st.StartedAt.UTC()
			item.StartedAt = &t
		}
		out.Items = append(out.Items, item)
	}
	if page.Next != 0 {
		c := encodeCursor(strconv.FormatInt(page.Next, 10))
		out.NextCursor = &c
	}
	return out, nil
}

// retryExecution is POST /api/executions/{id}/retry: a failed execution
// queued again with its journal, its attempts counted afresh.
func (s *Server) retryExecution(ctx context.Context, req *idRequest) (*execution, error) {
	e, err := s.cfg.Store.Retry(ctx, &store.RetryParams{
		Tenant: principalFrom(ctx).scope(), ID: req.id, Now: s.cfg.Now(),
	})
	if err != nil {
		return nil, executionErr(err, req.id)
	}
	return toExecution(e), nil
}

// renamed gives a store.FieldError the field name of this request: the
// store names a step name "step", which the steps body calls "name".
func renamed(err error, field string) error {
	var fe *store.FieldError
	if errors.As(err, &fe) {
		c := *fe
		c.Field = field
		return &c
	}
	return err
}

// jsonOrNull is raw, or null when empty.
func jsonOrNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return raw
}
