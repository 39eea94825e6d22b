package api

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any test leaves a goroutine behind: long polls,
// event streams and their timers must all end with their requests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
