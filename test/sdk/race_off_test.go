//go:build !race

package sdk

const raceEnabled = false
