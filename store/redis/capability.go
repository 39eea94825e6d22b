package redis

import "github.com/latch-run/latch/store"

var _ store.Sharer = (*Store)(nil)

// SharedAcrossProcesses is true: any number of servers open one namespace
// of a Redis server.
func (s *Store) SharedAcrossProcesses() bool { return true }
