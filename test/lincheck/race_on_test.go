//go:build race

package lincheck_test

const raceEnabled = true
