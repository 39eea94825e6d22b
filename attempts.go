package latch

import (
	"context"
	"fmt"
	"time"

	"github.com/latch-run/latch/store"
)

// Attempt is one run of an execution: one lease, from its claim to its
// end. A run that resumes a flow continues its attempt, so two runs may
// share an Attempt number.
type Attempt struct {
	Attempt   int
	WorkerID  string
	ClaimedAt time.Time
	EndedAt   *time.Time // nil while it runs
	// Outcome: "succeeded", "failed", "cancelled", "released", "suspended"
	// or "expired" (its lease ran out: the worker died or hung); "" while
	// it runs.
	Outcome string
	Error   string // the failure's message, for "failed"
}

// Attempts reads an execution's attempt history, oldest first (the latest
// 100 runs are kept). ErrNotFound if it does not exist or belongs to
// another tenant.
func (c *Client) Attempts(ctx context.Context, tenant, id string) ([]Attempt, error) {
	runs, err := c.st.Runs(ctx, &store.RunsParams{Tenant: tenant, ID: id})
	if err != nil {
		return nil, fmt.Errorf("latch: attempts of %s: %w", id, err)
	}
	out := make([]Attempt, len(runs))
	for i, r := range runs {
		out[i] = Attempt{Attempt: r.Attempt, WorkerID: r.WorkerID, ClaimedAt: r.ClaimedAt, EndedAt: r.EndedAt,
			Outcome: string(r.Outcome), Error: r.Error}
	}
	return out, nil
}
