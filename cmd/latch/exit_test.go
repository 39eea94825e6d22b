package main

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/latch-run/latch/remote"
)

// TestExitCodes pins the exit code of each kind of failure: scripts branch
// on them (README, "Exit codes").
func TestExitCodes(t *testing.T) {
	problem := func(status int, code string) error {
		return fmt.Errorf("tenant acme: %w", &remote.Error{Status: status, Code: code})
	}
	for _, c := range []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, 0},
		{"usage", fmt.Errorf("%w: want one argument", errUsage), 2},
		{"invalid request", problem(400, "invalid_request"), 2},
		{"payload too large", problem(413, "payload_too_large"), 2},
		{"not found", problem(404, "not_found"), 3},
		{"not terminal", problem(409, "not_terminal"), 4},
		{"signal to an ended flow", problem(409, "not_active"), 4},
		{"retry of one not failed", problem(409, "not_failed"), 4},
		{"quota", problem(429, "quota_exceeded"), 4},
		{"unauthorized", problem(401, "unauthorized"), 5},
		{"tenant disabled", problem(403, "tenant_disabled"), 5},
		{"unavailable", problem(503, "unavailable"), 6},
		{"wait timed out", fmt.Errorf("get: %w", context.DeadlineExceeded), 6},
		{"not succeeded", errNotSucceeded{status: "failed"}, 7},
		{"several, some not succeeded", fmt.Errorf("wait: %w", errNotSucceeded{ended: 1, n: 3}), 7},
		{"internal", problem(500, "internal"), 1},
		{"no answer", errors.New("dial tcp 127.0.0.1:8080: connection refused"), 1},
	} {
		if got := exitCode(c.err); got != c.want {
			t.Errorf("%s: exit %d, want %d", c.name, got, c.want)
		}
	}
}
