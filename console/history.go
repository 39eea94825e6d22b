package console

import (
	"context"
	"strconv"
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

// stepRow is one step of the journal, read as a timeline: record order,
// each with its time since the execution was created; the first step of
// each attempt carries Mark, naming the attempt and the run that recorded
// it.
type stepRow struct {
	Name       string
	Attempt    int
	RecordedAt time.Time
	Offset     time.Duration // since the execution's CreatedAt
	Took       time.Duration // since the step's StartedAt; 0 when the worker did not say
	Result     string
	Mark       string // "" but at an attempt's first step
}

// stepsShown bounds the journal an execution's page reads: its first
// steps, as many as one page of the API's steps read holds at most, up to
// the bytes of one list page. The store reads no more than that, however
// large the journal.
const (
	stepsShown      = store.MaxListLimit
	stepsShownBytes = 8 << 20
)

// history reads the runs and the first steps (stepsShown) of execution
// id, scoped to tenant like the read of the execution itself; created is
// the execution's CreatedAt. more says the journal holds steps after them.
func (c *Console) history(ctx context.Context, tenant, id string, created time.Time) (rr []runRow, sr []stepRow, more bool, err error) {
	runs, err := c.cfg.Store.Runs(ctx, &store.RunsParams{Tenant: tenant, ID: id})
	if err != nil {
		return nil, nil, false, err
	}
	page, err := c.cfg.Store.Steps(ctx, &store.StepsParams{Tenant: tenant, ID: id, Limit: stepsShown,
		MaxBytes: stepsShownBytes})
	if err != nil {
		return nil, nil, false, err
	}
	steps := page.Items
	rr = make([]runRow, 0, len(runs))
	for _, r := range runs {
		row := runRow{Attempt: r.Attempt, WorkerID: r.WorkerID, ClaimedAt: r.ClaimedAt, EndedAt: r.EndedAt,
			Outcome: string(r.Outcome), Error: shorten(r.Error, maxErrorShown)}
		if !r.Ended() {
			row.Outcome = "running"
		}
		rr = append(rr, row)
	}
	sr = make([]stepRow, 0, len(steps))
	for i, st := range steps {
		row := stepRow{Name: st.Name, Attempt: st.Attempt, RecordedAt: st.RecordedAt, Offset: st.RecordedAt.Sub(created),
			Result: shorten(string(st.Result), maxResultShown)}
		if !st.StartedAt.IsZero() && st.RecordedAt.After(st.StartedAt) {
			row.Took = st.RecordedAt.Sub(st.StartedAt)
		}
		if i == 0 || steps[i-1].Attempt != st.Attempt {
			row.Mark = attemptMark(runs, st)
		}
		sr = append(sr, row)
	}
	return rr, sr, page.Next != 0, nil
}

// attemptMark names the attempt of step st and the run that recorded it:
// the latest run of that attempt claimed before the step (a flow resumed
// after a wait runs again under the same attempt).
func attemptMark(runs []*store.Run, st *store.Step) string {
	mark := "Attempt " + strconv.Itoa(st.Attempt)
	var by *store.Run
	for _, r := range runs {
		if r.Attempt == st.Attempt && !r.ClaimedAt.After(st.RecordedAt) {
			by = r
		}
	}
	if by != nil {
		mark += ", worker " + by.WorkerID + ", claimed " + by.ClaimedAt.UTC().Format("15:04:05Z")
	}
	return mark
}

// shorten cuts s to at most max runes, marking the cut with "...".
func shorten(s string, max int) string {
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	return string(r[:max-3]) + "..."
}
