package store

import (
	"fmt"
	"time"
)

// DefaultLease is the lease length of a Claim or Heartbeat whose
// LeaseDuration is 0 (or negative).
const DefaultLease = 30 * time.Second

// LeaseOrDefault is d, or DefaultLease when d is not positive.
func LeaseOrDefault(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultLease
	}
	return d
}

// Bounds is the claim's preamble, the same in every backend: how many
// executions it may lease (Max, at least 1) and for how long
// (LeaseOrDefault of LeaseDuration).
func (p *ClaimParams) Bounds() (maxN int, lease time.Duration) {
	return max(p.Max, 1), LeaseOrDefault(p.LeaseDuration)
}

// MaxExcludeTenants bounds ClaimParams.ExcludeTenants.
const MaxExcludeTenants = 1000

// ValidateExclude checks ClaimParams.ExcludeTenants, the same in every
// backend: at most MaxExcludeTenants names, each not empty; ErrInvalid
// otherwise, before the claim reads or changes anything.
func (p *ClaimParams) ValidateExclude() error {
	if n := len(p.ExcludeTenants); n > MaxExcludeTenants {
		return fmt.Errorf("%w: %d tenants excluded from a claim, at most %d", ErrInvalid, n, MaxExcludeTenants)
	}
	for _, t := range p.ExcludeTenants {
		if t == "" {
			return fmt.Errorf("%w: an empty tenant name excluded from a claim", ErrInvalid)
		}
	}
	return nil
}
