package engine

import (
	"maps"
	"slices"
	"sync"

	"github.com/latch-run/latch/store"
)

// share holds each tenant to its share of a worker's slots
// (WorkerConfig.TenantSlots). A tenant below its share starts work in any
// free slot. A tenant at its share may still borrow a free slot, but never
// the last one: one slot stays free for a tenant below its share. So a
// tenant alone uses every slot but one, and another tenant's work finds
// that slot free however long the first one's handlers run.
type share struct {
	limit, slots int

	mu      sync.Mutex
	running map[string]int // tenant -> handlers running; absent when none
	total   int            // handlers running, of every tenant
}

func newShare(limit, slots int) *share {
	return &share{limit: limit, slots: slots, running: map[string]int{}}
}

// take gives tenant a slot if it may start one now, and reports whether
// it did.
func (s *share) take(tenant string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running[tenant] >= s.limit && s.total+1 >= s.slots {
		return false
	}
	s.running[tenant]++
	s.total++
	return true
}

// give returns a slot tenant took.
func (s *share) give(tenant string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total--
	if s.running[tenant]--; s.running[tenant] <= 0 {
		delete(s.running, tenant)
	}
}

// batch is how many leases one claim should ask for, at most free: as
// many as one tenant may start now — its room below its share, or every
// free slot but the last — but at least 1, so that another tenant's work
// is still found while the tenants here are at their share. Leases past
// a tenant's room are given back unstarted, so a claim sized to it
// releases little; a tenant with no room at all is not claimed for
// (excluded).
func (s *share) batch(free int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	room := s.limit // of a tenant that runs nothing here
	if len(s.running) > 0 {
		room = 0
		for _, n := range s.running {
			room = max(room, s.limit-n)
		}
	}
	return max(min(free, max(room, free-1)), 1)
}

// excluded lists the tenants that may not start work now, sorted: when
// only the last slot is free, those at their share. A claim passes them
// (store.ClaimParams.ExcludeTenants), so their waiting work stays in the
// store as it is rather than being leased and given back. At most
// store.MaxExcludeTenants (a worker runs that many tenants at once only
// with more slots): a lease of a tenant past them is still given back.
func (s *share) excluded() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.total+1 < s.slots {
		return nil
	}
	var out []string
	for _, t := range slices.Sorted(maps.Keys(s.running)) {
		if s.running[t] >= s.limit && len(out) < store.MaxExcludeTenants {
			out = append(out, t)
		}
	}
	return out
}
