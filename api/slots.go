package api

import (
	"sync"
)

// slotRetryAfter is the Retry-After, in seconds, of a too_many_requests
// answer: a slot frees when a stream or a long poll of the tenant ends,
// which the server cannot predict.
const slotRetryAfter = 5

// slots caps what one tenant holds open at once on this server (event
// streams, or long polls): each holds a goroutine, a connection and a
// watch until it ends, so without a cap one tenant's clients could hold the
// server's. The admin key counts as a tenant of its own, whatever tenant
// it names.
type slots struct {
	max int // <= 0: no cap
	mu  sync.Mutex
	n   map[string]int
}

func newSlots(max int) *slots { return &slots{max: max, n: map[string]int{}} }

// acquire takes a slot for p, or answers 429 too_many_requests naming
// what (plural: "event streams") when p's tenant holds them all. release
// gives it back; call it once.
func (s *slots) acquire(p *principal, what string) (release func(), err error) {
	key := p.tenant
	if p.admin {
		key = "" // no tenant is named ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.max > 0 && s.n[key] >= s.max {
		pr := problem(CodeTooManyRequests, "the tenant's %s open on this server are at their bound (%d); retry when one has ended", what, s.max)
		pr.retryAfter = slotRetryAfter
		return nil, pr
	}
	s.n[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.n[key]--; s.n[key] == 0 {
				delete(s.n, key)
			}
		})
	}, nil
}

// held reports how many slots key's tenant holds (tests).
func (s *slots) held(tenant string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[tenant]
}
