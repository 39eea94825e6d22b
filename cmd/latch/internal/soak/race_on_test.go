//go:build race

package soak

// raceEnabled: the race detector is on (the SQLite driver, pure Go, is
// many times slower under it).
const raceEnabled = true
