// Package labels bounds the values a Prometheus label takes when they come
// from tenants (kinds, queues): a tenant naming a million kinds must not
// make /metrics hold a million series.
package labels

import "sync"

// Other is the value every label value past the bound is counted under.
const Other = "other"

// DefaultMax is how many distinct values a Bounded label keeps by default.
const DefaultMax = 200

// Bounded passes the first Max distinct values through and maps every later
// new one to Other, so a label's series stay at most Max+1. Safe for
// concurrent use.
type Bounded struct {
	max  int
	mu   sync.Mutex
	seen map[string]struct{}
}

// New returns a Bounded keeping max distinct values (DefaultMax if max <= 0).
func New(max int) *Bounded {
	if max <= 0 {
		max = DefaultMax
	}
	return &Bounded{max: max, seen: map[string]struct{}{}}
}

// Value is v if v was seen before or there is room for it, else Other.
func (b *Bounded) Value(v string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.seen[v]; ok {
		return v
	}
	if len(b.seen) >= b.max {
		return Other
	}
	b.seen[v] = struct{}{}
	return v
}
