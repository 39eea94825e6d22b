package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/latch-run/latch/auth"
	"github.com/latch-run/latch/store"
)

// streamTicket is the answer of POST /api/executions/{id}/stream-ticket.
type streamTicket struct {
	Ticket    string `json:"ticket"`
	ExpiresIn int    `json:"expires_in"` // seconds
}

func (*streamTicket) statusCode() int { return http.StatusCreated }

// issueStreamTicket is POST /api/executions/{id}/stream-ticket: a
// single-use ticket that GET /api/executions/{id}/events takes as ?ticket=
// in place of the key, for browsers, whose EventSource cannot send an
// Authorization header. The execution must be the caller's (any tenant's
// for the admin): another's is not found, as everywhere.
func (s *Server) issueStreamTicket(ctx context.Context, req *idRequest) (*streamTicket, error) {
	p := principalFrom(ctx)
	e, err := s.cfg.Store.Get(ctx, &store.GetParams{Tenant: p.scope(), ID: req.id})
	if err != nil {
		return nil, executionErr(err, req.id)
	}
	holder := p.tenant
	if p.admin {
		holder = "" // the admin counts as a tenant of its own, as in slots
	}
	tok, err := s.tickets.issue(ticket{keyHash: p.keyHash, holder: holder, tenant: e.Tenant, exec: req.id})
	if err != nil {
		return nil, err
	}
	return &streamTicket{Ticket: tok, ExpiresIn: int(ticketTTL / time.Second)}, nil
}

// streamCaller authenticates a request for an event stream: by its key,
// or, when it sends no Authorization header, by the ?ticket= issued for
// this execution. The ticket is used up, and its key identified again, so a
// key deleted since is refused (invalid_ticket) and a tenant disabled since
// too (tenant_disabled), as the key itself would be.
func (s *Server) streamCaller(r *http.Request) (*principal, error) {
	tok := r.URL.Query().Get("ticket")
	if _, keyed := r.Header["Authorization"]; keyed || tok == "" {
		return s.authenticate(r, false)
	}
	t, err := s.tickets.redeem(tok, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	id, err := s.identify(r.Context(), t.keyHash, false)
	if errors.Is(err, auth.ErrUnknownKey) {
		return nil, invalidTicket()
	} else if err != nil {
		return nil, err
	}
	p := &principal{admin: id.Admin, tenant: id.Tenant, keyHash: t.keyHash}
	if p.admin {
		p.tenant = t.tenant
	}
	return p, nil
}
