package postgres

import "github.com/latch-run/latch/store"

var _ store.Sharer = (*Store)(nil)

// SharedAcrossProcesses is true: any number of servers open one database.
func (s *Store) SharedAcrossProcesses() bool { return true }
