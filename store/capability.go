package store

// Sharer is an optional capability of a backend: whether servers in other
// processes can open the same store at once (a database server) or not (a
// file one process serves). What one process keeps to itself, such as the
// secret that signs console sessions, then has to be configured the same on
// every server: `latch serve` warns when it is not.
type Sharer interface {
	// SharedAcrossProcesses reports whether several processes serve the
	// store at once as one deployment.
	SharedAcrossProcesses() bool
}

// SharedAcrossProcesses is s's Sharer answer. A store without the
// capability may be shared, for all its caller knows: true.
func SharedAcrossProcesses(s Store) bool {
	if sh, ok := s.(Sharer); ok {
		return sh.SharedAcrossProcesses()
	}
	return true
}
