package api

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// ticketFor issues a stream ticket for execution id with key.
func (e *testEnv) ticketFor(id, key string, headers ...string) string {
	e.t.Helper()
	var out streamTicket
	e.do("POST", "/api/executions/"+id+"/stream-ticket", key, nil, headers...).want(http.StatusCreated).decode(&out)
	if len(out.Ticket) < 22 || out.ExpiresIn != 60 || strings.Trim(out.Ticket, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
		e.t.Fatalf("stream ticket %+v", out)
	}
	return out.Ticket
}

func eventsPath(id, tok string) string {
	return "/api/executions/" + id + "/events?ticket=" + tok
}

// A ticket opens the stream without a key, and the stream runs to the end.
func TestStreamTicketStreams(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.tenant("acme")
	x := e.submit(key, `{"kind":"echo"}`, http.StatusCreated)
	tok := e.ticketFor(x.ExecutionID, key)
	if tok == e.ticketFor(x.ExecutionID, key) {
		t.Fatal("two tickets alike")
	}
	res, ch := e.openStream(eventsPath(x.ExecutionID, tok), "")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("stream by ticket: %d", res.StatusCode)
	}
	if _, got := nextEvent(t, ch); got.Status != store.StatusQueued {
		t.Fatalf("first event %s", got.Status)
	}
	l := e.claimOne(key)
	if _, got := nextEvent(t, ch); got.Status != store.StatusRunning {
		t.Fatalf("second event %s", got.Status)
	}
	e.do("POST", "/api/executions/"+l.ExecutionID+"/complete", key, `{"lease_token":"`+l.LeaseToken+`"}`).want(http.StatusOK)
	if _, got := nextEvent(t, ch); got.Status != store.StatusSucceeded {
		t.Fatalf("third event %s", got.Status)
	}
	streamEnds(t, ch)

	// The admin may ask for any tenant's execution (with or without
	// Latch-Tenant naming it).
	for _, h := range [][]string{nil, {tenantHeader, "acme"}} {
		tok := e.ticketFor(x.ExecutionID, e.admin, h...)
		_, ch := e.openStream(eventsPath(x.ExecutionID, tok), "")
		if _, got := nextEvent(t, ch); got.Status != store.StatusSucceeded {
			t.Fatalf("admin's ticket: %s", got.Status)
		}
		streamEnds(t, ch)
	}
}

// Used, unknown, expired or for another execution: one answer, 401
// invalid_ticket.
func TestStreamTicketRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var skew atomic.Int64
	e.api.tickets.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	key := e.tenant("acme")
	x := e.submit(key, `{"kind":"echo"}`, http.StatusCreated)
	y := e.submit(key, `{"kind":"echo"}`, http.StatusCreated)

	tok := e.ticketFor(x.ExecutionID, key)
	_, ch := e.openStream(eventsPath(x.ExecutionID, tok), "")
	nextEvent(t, ch)
	refused := func(id, tok string) {
		t.Helper()
		p := e.do("GET", eventsPath(id, tok), "", nil).problem(http.StatusUnauthorized, CodeInvalidTicket)
		if strings.Contains(p.Detail, tok) {
			t.Fatalf("detail echoes the ticket: %s", p.Detail)
		}
	}
	refused(x.ExecutionID, tok) // used
	refused(x.ExecutionID, newTicket())

	tok = e.ticketFor(x.ExecutionID, key)
	refused(y.ExecutionID, tok)
	refused(x.ExecutionID, tok) // a wrong use used it up

	tok = e.ticketFor(x.ExecutionID, key)
	skew.Store(int64(ticketTTL))
	refused(x.ExecutionID, tok)
	skew.Store(0)

	// Only the events endpoint takes a ticket.
	tok = e.ticketFor(x.ExecutionID, key)
	for _, path := range []string{"/api/executions/" + x.ExecutionID, "/api/executions/" + x.ExecutionID + "/steps", "/api/executions"} {
		e.do("GET", path+"?ticket="+tok, "", nil).problem(http.StatusUnauthorized, CodeUnauthorized)
	}
	e.do("POST", "/api/executions/"+x.ExecutionID+"/cancel?ticket="+tok, "", nil).problem(http.StatusUnauthorized, CodeUnauthorized)
	// ... and it is still good there.
	_, ch = e.openStream(eventsPath(x.ExecutionID, tok), "")
	nextEvent(t, ch)

	// A key deleted since the issue takes its tickets with it.
	var nk struct {
		KeyID  string `json:"key_id"`
		APIKey string `json:"api_key"`
	}
	e.do("POST", "/api/tenants/acme/keys", e.admin, nil).want(http.StatusCreated).decode(&nk)
	tok = e.ticketFor(x.ExecutionID, nk.APIKey)
	e.do("DELETE", "/api/tenants/acme/keys/"+nk.KeyID, e.admin, nil).want(http.StatusNoContent)
	refused(x.ExecutionID, tok)

	// A disabled tenant's ticket is refused as its key is.
	tok = e.ticketFor(x.ExecutionID, key)
	e.do("PATCH", "/api/tenants/acme", e.admin, `{"disabled":true}`).want(http.StatusOK)
	e.do("GET", eventsPath(x.ExecutionID, tok), "", nil).problem(http.StatusForbidden, CodeTenantDisabled)
}

// Tickets are issued for the caller's own executions only.
func TestStreamTicketIssueNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acme, other := e.tenant("acme"), e.tenant("other")
	x := e.submit(acme, `{"kind":"echo"}`, http.StatusCreated)
	e.do("POST", "/api/executions/"+x.ExecutionID+"/stream-ticket", other, nil).problem(http.StatusNotFound, CodeNotFound)
	e.do("POST", "/api/executions/"+x.ExecutionID+"/stream-ticket", e.admin, nil, tenantHeader, "other").problem(http.StatusNotFound, CodeNotFound)
	e.do("POST", "/api/executions/nope/stream-ticket", acme, nil).problem(http.StatusNotFound, CodeNotFound)
	e.do("POST", "/api/executions/"+x.ExecutionID+"/stream-ticket", "", nil).problem(http.StatusUnauthorized, CodeUnauthorized)
	if n := e.api.tickets.outstanding("other"); n != 0 {
		t.Fatalf("%d tickets issued on refusals", n)
	}
}

// A tenant's outstanding tickets are capped; used and expired ones free
// their place.
func TestStreamTicketCap(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.MaxStreamTicketsPerTenant = 3 })
	var skew atomic.Int64
	e.api.tickets.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	key, other := e.tenant("acme"), e.tenant("other")
	x := e.submit(key, `{"kind":"echo"}`, http.StatusCreated)
	y := e.submit(other, `{"kind":"echo"}`, http.StatusCreated)
	var toks []string
	for range 3 {
		toks = append(toks, e.ticketFor(x.ExecutionID, key))
	}
	r := e.do("POST", "/api/executions/"+x.ExecutionID+"/stream-ticket", key, nil)
	r.problem(http.StatusTooManyRequests, CodeTooManyRequests)
	if r.header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
	e.ticketFor(y.ExecutionID, other) // another tenant is not held back

	_, ch := e.openStream(eventsPath(x.ExecutionID, toks[0]), "")
	nextEvent(t, ch)
	e.ticketFor(x.ExecutionID, key) // the used one's place

	skew.Store(int64(ticketTTL))
	for range 3 {
		e.ticketFor(x.ExecutionID, key) // the expired ones' places
	}
	if n := e.api.tickets.outstanding("acme"); n != 3 {
		t.Fatalf("acme holds %d tickets, want 3", n)
	}
}

// A ticket never reaches the log, not even of a failed stream request.
func TestStreamTicketNotLogged(t *testing.T) {
	t.Parallel()
	var down atomic.Bool
	e := newEnv(t, func(c *Config) { c.Store = outage{c.Store, &down} })
	key := e.tenant("acme")
	x := e.submit(key, `{"kind":"echo"}`, http.StatusCreated)
	tok := e.ticketFor(x.ExecutionID, key)
	down.Store(true)
	e.do("GET", eventsPath(x.ExecutionID, tok), "", nil).problem(http.StatusServiceUnavailable, CodeUnavailable)
	logs := e.logs.String()
	if !strings.Contains(logs, "/api/executions/"+x.ExecutionID+"/events") {
		t.Fatalf("the failed request is not logged: %s", logs)
	}
	if strings.Contains(logs, tok) || strings.Contains(logs, "ticket=") {
		t.Fatalf("the log holds the ticket: %s", logs)
	}
}

// Expired tickets are swept as tickets are issued, whoever asks: the store
// does not grow with tickets nobody used.
func TestTicketsSwept(t *testing.T) {
	t.Parallel()
	now := time.Now()
	ts := newTickets(2, func() time.Time { return now })
	for _, holder := range []string{"a", "a", "b", "c"} {
		if _, err := ts.issue(ticket{holder: holder, exec: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ts.issue(ticket{holder: "a", exec: "x"}); err == nil {
		t.Fatal("a third ticket for a, over the cap of 2")
	}
	now = now.Add(ticketTTL)
	if _, err := ts.issue(ticket{holder: "d", exec: "x"}); err != nil {
		t.Fatal(err)
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if len(ts.byTicket) != 1 || len(ts.perHolder) != 1 {
		t.Fatalf("after a TTL: %d tickets, %d holders; want 1, 1", len(ts.byTicket), len(ts.perHolder))
	}
}
