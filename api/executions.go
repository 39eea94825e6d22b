package api

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/latch-run/latch/store"
)

// Limits of the read endpoints (docs/api.md, "Read").
const (
	maxWaitSeconds = 60
	maxIDLen       = 128
)

// idRequest names one execution by its path value.
type idRequest struct {
	id string
}

func (r *idRequest) bindID(hr *http.Request) error {
	r.id = hr.PathValue("id")
	if r.id == "" || len(r.id) > maxIDLen || !utf8.ValidString(r.id) {
		return problem(CodeNotFound, "execution not found")
	}
	return nil
}

func (r *idRequest) bind(hr *http.Request) error {
	if _, err := query(hr); err != nil {
		return err
	}
	return r.bindID(hr)
}

// getRequest is GET /api/executions/{id}?wait_seconds=N.
type getRequest struct {
	idRequest
	wait time.Duration
}

func (r *getRequest) bind(hr *http.Request) error {
	q, err := query(hr, "wait_seconds")
	if err != nil {
		return err
	}
	if v := q.Get("wait_seconds"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxWaitSeconds {
			return invalid("wait_seconds", "must be an integer from 0 to %d", maxWaitSeconds)
		}
		r.wait = time.Duration(n) * time.Second
	}
	return r.bindID(hr)
}

// getExecution answers the execution, after waiting up to wait_seconds for
// it to become terminal. A wait is a long poll: at most
// Config.MaxLongPollsPerTenant of a tenant at once.
func (s *Server) getExecution(ctx context.Context, req *getRequest) (*execution, error) {
	p := principalFrom(ctx)
	if req.wait > 0 {
		release, err := s.polls.acquire(p, "long polls")
		if err != nil {
			return nil, err
		}
		defer release()
	}
	e, err := s.awaitTerminal(ctx, p.scope(), req.id, req.wait)
	if err != nil {
		return nil, executionErr(err, req.id)
	}
	return toExecution(e), nil
}

// listRequest is GET /api/executions with its filters.
type listRequest struct {
	params store.ListParams
}

func (r *listRequest) bind(hr *http.Request) error {
	q, err := query(hr, "status", "kind", "queue", "dedup_key", "schedule", "parent_id", "id_prefix", "limit", "cursor")
	if err != nil {
		return err
	}
	p := &r.params
	if v := q.Get("status"); v != "" {
		if !store.Status(v).Valid() {
			return invalid("status", "must be one of scheduled, queued, running, suspended, succeeded, failed, cancelled, skipped")
		}
		p.Status = store.Status(v)
	}
	p.Kind, p.Queue, p.DedupKey, p.Schedule = q.Get("kind"), q.Get("queue"), q.Get("dedup_key"), q.Get("schedule")
	p.ParentID = q.Get("parent_id")
	if v := q.Get("id_prefix"); v != "" {
		if !store.IsIDPrefix(v) {
			return invalid("id_prefix", "must be the first %d to 36 characters of an execution id, lower-case, dashes in their places", store.MinIDPrefix)
		}
		if p.ParentID != "" {
			return invalid("id_prefix", "does not combine with parent_id")
		}
		p.IDPrefix = v
	}
	if p.Limit, err = queryLimit(q, store.DefaultListLimit, store.MaxListLimit); err != nil {
		return err
	}
	if v := q.Get("cursor"); v != "" {
		after, ok := decodeCursor(v)
		if !ok {
			return invalid("cursor", "not a cursor this server issued; use next_cursor of a previous page")
		}
		p.After = after
	}
	return nil
}

type listResponse struct {
	Items      []*execution `json:"items"`
	NextCursor *string      `json:"next_cursor"`
}

// listExecutions answers one page, newest first: at most limit items, cut
// short (with next_cursor set) once its payloads and results reach
// MaxListBytes, or once it has examined ListScan executions for filters
// that no index answers. So a page may hold fewer than limit items, even
// none, while next_cursor is set: clients page until next_cursor is null.
// A filter that matches nothing costs one request ListScan executions,
// however many the tenant (or, for the admin, the server) has.
func (s *Server) listExecutions(ctx context.Context, req *listRequest) (*listResponse, error) {
	p := req.params
	p.Tenant = principalFrom(ctx).scope()
	p.MaxBytes = s.cfg.MaxListBytes // with limit=500 and 1 MiB payloads, a page would be ~1 GB
	p.Scan = s.cfg.ListScan
	res, err := s.cfg.Store.List(ctx, &p)
	if err != nil {
		return nil, err
	}
	out := &listResponse{Items: make([]*execution, 0, len(res.Items))}
	for _, e := range res.Items {
		out.Items = append(out.Items, toExecution(e))
	}
	if res.Next != "" {
		c := encodeCursor(res.Next)
		out.NextCursor = &c
	}
	return out, nil
}

// A cursor is the store's Next id in unpadded base64url: opaque to clients,
// so the paging key may change without breaking them.
func encodeCursor(next string) string { return base64.RawURLEncoding.EncodeToString([]byte(next)) }

// decodeCursor accepts only what encodeCursor makes of an execution id: the
// base64url of a UUID in its canonical (lower-case, hyphenated) form.
func decodeCursor(c string) (string, bool) { return decodeCursorOf(c, maxIDLen, store.IsExecutionID) }

// decodeCursorOf accepts only what encodeCursor makes of a key of at most
// maxLen bytes that valid accepts.
func decodeCursorOf(c string, maxLen int, valid func(string) bool) (string, bool) {
	if len(c) > base64.RawURLEncoding.EncodedLen(maxLen) {
		return "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return "", false
	}
	return string(b), valid(string(b))
}

// cancelExecution is POST /api/executions/{id}/cancel.
func (s *Server) cancelExecution(ctx context.Context, req *idRequest) (*execution, error) {
	e, err := s.cfg.Store.Cancel(ctx, &store.CancelParams{
		Tenant: principalFrom(ctx).scope(), ID: req.id, Now: s.cfg.Now(),
	})
	if err != nil {
		return nil, executionErr(err, req.id)
	}
	return toExecution(e), nil
}

// deleteRequest is DELETE /api/executions/{id}?force=true.
type deleteRequest struct {
	idRequest
	force bool
}

func (r *deleteRequest) bind(hr *http.Request) error {
	var err error
	if r.force, err = forceParam(hr); err != nil {
		return err
	}
	return r.bindID(hr)
}

// forceParam reads a DELETE's only query parameter, force (true or false,
// default false); any other parameter is refused.
func forceParam(hr *http.Request) (bool, error) {
	q, err := query(hr, "force")
	if err != nil {
		return false, err
	}
	v := q.Get("force")
	if v == "" {
		return false, nil
	}
	f, err := strconv.ParseBool(v)
	if err != nil {
		return false, invalid("force", "must be true or false")
	}
	return f, nil
}

// noContent is a 204 answer.
type noContent struct{}

func (noContent) statusCode() int { return http.StatusNoContent }

// deleteExecution is DELETE /api/executions/{id}.
func (s *Server) deleteExecution(ctx context.Context, req *deleteRequest) (*noContent, error) {
	err := s.cfg.Store.Delete(ctx, &store.DeleteParams{
		Tenant: principalFrom(ctx).scope(), ID: req.id, Force: req.force, Now: s.cfg.Now(),
	})
	if err != nil {
		return nil, executionErr(err, req.id)
	}
	return &noContent{}, nil
}

// executionErr gives a missing execution a detail that names it.
func executionErr(err error, id string) error {
	if errors.Is(err, store.ErrNotFound) {
		return problem(CodeNotFound, "execution %q not found", id)
	}
	return err
}
