//go:build !faults

package fault

// Enabled reports whether this is a faults build (go build -tags faults),
// in which Point may crash the process.
const Enabled = false

// Point marks the crash point name. In this build (without the tag faults)
// it does nothing, and its calls are inlined away.
func Point(name string) {}
