package redis

import (
	"context"
	"testing"
)

// WithScripts makes a Store run its scripts with EVALSHA, as on a server
// without Redis functions.
func WithScripts() Option { return func(c *config) { c.scripts = true } }

// Library returns the name of the function library this build loads.
func Library() string { return libName }

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

// ScheduleLive returns the members of the live set of tenant's schedule
// name: the ids of its executions admitted in flight that no fire has yet
// seen end.
func ScheduleLive(t testing.TB, s *Store, tenant, name string) []string {
	t.Helper()
	ids, err := s.rdb.SMembers(context.Background(), s.k.scheduleLive(scoped(tenant, name))).Result()
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// ExecFields returns the fields of execution id's hash as stored.
func ExecFields(t testing.TB, s *Store, id string) map[string]string {
	t.Helper()
	m, err := s.rdb.HGetAll(context.Background(), s.k.exec(id)).Result()
	if err != nil {
		t.Fatal(err)
	}
	return m
}
