package sqlite

import "github.com/latch-run/latch/store"

var _ store.Sharer = (*Store)(nil)

// SharedAcrossProcesses is false: a SQLite file is served by the one
// process that opened it (its wake-ups reach only that process).
func (s *Store) SharedAcrossProcesses() bool { return false }
