package console

import (
	"context"
	"time"

	"github.com/latch-run/latch/store"
)

// The execution page's history: its runs (the attempt history) and, for a
// flow, its journal. Long texts are cut so one row stays one row; the API
// and `latch attempts --json` / `latch steps --json` show them whole.

const (
	maxErrorShown  = 300
	maxResultShown = 120
)

// runRow is one run of the attempts table.
type runRow struct {
	Attempt   int
	WorkerID  string
	ClaimedAt time.Time
	EndedAt   *time.Time
	Outcome   string // "running" while it runs
	Error     string
}

// stepRow is one step of the journal table.
type stepRow struct {
	Name       string
	Attempt    int
	RecordedAt time.Time
	Result     string
}

// history reads the runs and steps of execution id, scoped to tenant like
// the read of the execution itself.
func (c *Console) history(ctx context.Context, tenant, id string) ([]runRow, []stepRow, error) {
	runs, err := c.cfg.Store.Runs(ctx, &store.RunsParams{Tenant: tenant, ID: id})
	if err != nil {
		return nil, nil, err
	}
	steps, err := c.cfg.Store.Steps(ctx, &store.StepsParams{Tenant: tenant, ID: id})
	if err != nil {
		return nil, nil, err
	}
	rr := make([]runRow, 0, len(runs))
	for _, r := range runs {
		row := runRow{Attempt: r.Attempt, WorkerID: r.WorkerID, ClaimedAt: r.ClaimedAt, EndedAt: r.EndedAt,
			Outcome: string(r.Outcome), Error: shorten(r.Error, maxErrorShown)}
		if !r.Ended() {
			row.Outcome = "running"
		}
		rr = append(rr, row)
	}
	sr := make([]stepRow, 0, len(steps))
	for _, st := range steps {
		sr = append(sr, stepRow{Name: st.Name, Attempt: st.Attempt, RecordedAt: st.RecordedAt,
			Result: shorten(string(st.Result), maxResultShown)})
	}
	return rr, sr, nil
}

// shorten cuts s to at most max runes, marking the cut with "...".
func shorten(s string, max int) string {
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	return string(r[:max-3]) + "..."
}
