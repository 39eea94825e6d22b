//go:build !faults

package fault

import (
	"testing"
)

// Without the tag, Point does nothing: a rule that would fire at the first
// hit is ignored (were it not, this test's process would die), and a call
// allocates nothing. TestBuilds shows the call is inlined away.
func TestPointIsANoOp(t *testing.T) {
	if Enabled {
		t.Fatal("Enabled in a build without the tag faults")
	}
	t.Setenv(Env, APISubmitCommitted+"=1")
	for range 1000 {
		Point(APISubmitCommitted)
	}
	if a := testing.AllocsPerRun(1000, func() { Point(APISubmitCommitted) }); a != 0 {
		t.Errorf("Point allocates %v times a call", a)
	}
}

func BenchmarkPointNoOp(b *testing.B) {
	for b.Loop() {
		Point(WorkerHeartbeatCommitted)
	}
}
