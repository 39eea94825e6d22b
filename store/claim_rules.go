package store

import "time"

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
