package store

// DefaultBatch is how many executions one Rescue, Promote or Prune handles
// when its Limit is 0.
const DefaultBatch = 1000

// BatchLimit is limit, or DefaultBatch when limit is not positive.
func BatchLimit(limit int) int {
	if limit <= 0 {
		return DefaultBatch
	}
	return limit
}
