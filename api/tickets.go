package api

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"sync"
	"time"
)

// ticketTTL is how long a stream ticket may wait to be redeemed.
const ticketTTL = 60 * time.Second

// DefaultMaxTickets is Config.MaxStreamTicketsPerTenant's default.
const DefaultMaxTickets = 100

// ticketRetryAfter is the Retry-After, in seconds, of a refused issue: an
// outstanding ticket frees when it is redeemed or expires, within ticketTTL.
const ticketRetryAfter = 5

// ticket is what an issued stream ticket stands for: one event stream of
// one execution, for the key that asked. The key is kept by its hash and
// identified again at redemption, so a key deleted or a tenant disabled in
// the meantime is refused as the key itself would be.
type ticket struct {
	keyHash string
	holder  string // slot key: the tenant, or "" for the admin
	tenant  string // the execution's tenant (what the admin acts for)
	exec    string
	expires time.Time
}

// tickets holds the stream tickets issued by this server, in its memory:
// a ticket is redeemed on the server that issued it. Each tenant (the
// admin counts as one) has at most max outstanding, so no tenant can fill
// the memory; expired ones are swept as tickets are issued.
type tickets struct {
	max int // <= 0: no cap
	now func() time.Time

	mu        sync.Mutex
	byTicket  map[string]*ticket
	perHolder map[string]int
	swept     time.Time
}

func newTickets(max int, now func() time.Time) *tickets {
	return &tickets{max: max, now: now, byTicket: map[string]*ticket{}, perHolder: map[string]int{}}
}

// issue returns a new ticket for t, or answers 429 too_many_requests when
// t's holder has max outstanding.
func (ts *tickets) issue(t ticket) (string, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	now := ts.now()
	full := ts.max > 0 && ts.perHolder[t.holder] >= ts.max
	if since := now.Sub(ts.swept); since >= ticketTTL || (full && since >= time.Second) {
		// A full sweep at most once per TTL keeps issuing cheap; a holder
		// at its cap gets one sooner, at most once a second so that a
		// client asking again and again cannot make every issue a sweep:
		// expired tickets refuse it for a second at most.
		ts.sweep(now)
	}
	if ts.max > 0 && ts.perHolder[t.holder] >= ts.max {
		p := problem(CodeTooManyRequests, "the tenant has %d stream tickets outstanding on this server, its bound; retry when one was used or expired (after at most %ds)", ts.max, int(ticketTTL/time.Second))
		p.retryAfter = ticketRetryAfter
		return "", p
	}
	tok := newTicket()
	t.expires = now.Add(ticketTTL)
	ts.byTicket[tok] = &t
	ts.perHolder[t.holder]++
	return tok, nil
}

// redeem uses up tok for the event stream of execution exec and returns
// what it stands for. Whatever the reason it is refused (unknown, expired,
// used, another execution), the answer is the same invalid_ticket, so a
// guess learns nothing. A presented ticket is used up even when refused.
func (ts *tickets) redeem(tok, exec string) (*ticket, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t, ok := ts.byTicket[tok]
	if ok {
		ts.drop(tok, t)
	}
	if !ok || t.exec != exec || !ts.now().Before(t.expires) {
		return nil, invalidTicket()
	}
	return t, nil
}

// sweep drops expired tickets. Called with mu held.
func (ts *tickets) sweep(now time.Time) {
	ts.swept = now
	for tok, t := range ts.byTicket {
		if !now.Before(t.expires) {
			ts.drop(tok, t)
		}
	}
}

// drop forgets one ticket. Called with mu held.
func (ts *tickets) drop(tok string, t *ticket) {
	delete(ts.byTicket, tok)
	if ts.perHolder[t.holder]--; ts.perHolder[t.holder] <= 0 {
		delete(ts.perHolder, t.holder)
	}
}

// outstanding is how many tickets the holder has (tests).
func (ts *tickets) outstanding(holder string) int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.perHolder[holder]
}

// newTicket returns 256 random bits, URL-safe.
func newTicket() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b)
}

func invalidTicket() *Problem {
	p := problem(CodeInvalidTicket, "the stream ticket is unknown, expired, already used or for another execution; ask for a new one")
	p.header = http.Header{"Www-Authenticate": {`Bearer realm="latch"`}}
	return p
}
