package redis

import (
	"context"
	"testing"
)

// CheckConsistency fails t with every disagreement between the namespace's
// indexes, counters and dedup mappings and its execution hashes.
func CheckConsistency(t testing.TB, s *Store) {
	t.Helper()
	bad, err := s.checkConsistency(context.Background())
	if err != nil {
		t.Errorf("consistency check: %v", err)
	}
	for _, b := range bad {
		t.Errorf("redis consistency: %s", b)
	}
}
