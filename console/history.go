package console

import (
	"context"
	"sort"
	"strconv"
	"time"

	"github.com/latch-run/latch/store"
)

// The execution page's history: its runs (the attempt history) and, for a
// flow, its journal read as a timeline with the runs. Long texts are cut so one row stays one row; the API
// and `latch attempts --json` / `latch steps --json` show them whole.

const (
	maxErrorShown  = 300
	maxResultShown = 120
)

// runRow is one run of the attempts table: each claim is a run of its
// own, numbered in claim order, beside the attempt it ran. Two runs share
// an attempt when one resumed a flow after a wait (Note "resumed") or a
// run gave its start back (released, expired: Note "again"); a manual
// retry starts the attempts afresh (Note "after a retry").
type runRow struct {
	Run       int // 1, 2, ... in claim order, among the runs kept (store.MaxRunsKept)
	Attempt   int
	Note      string
	WorkerID  string
	ClaimedAt time.Time
	EndedAt   *time.Time
	Outcome   string // "running" while it runs
	Error     string
}

// timelineRow is one row of a flow's step timeline, in time order: a run
// that starts (Mark), a step it recorded (Step), a run that ends other
// than by succeeding, as a suspension does (Mark, Ended), each with its
// time since the execution was created.
type timelineRow struct {
	Offset time.Duration // since the execution's CreatedAt
	Mark   string        // a run's start or end; "" for a step
	Ended  bool          // Mark is a run's end
	Step   *stepRow      // nil for a mark
}

// stepRow is one step of the journal.
type stepRow struct {
	Name       string
	Attempt    int
	RecordedAt time.Time
	Took       time.Duration // since the step's StartedAt; 0 when the worker did not say
	Result     string
}

// stepsShown bounds the journal an execution's page reads: its first
// steps, as many as one page of the API's steps read holds at most, up to
// the bytes of one list page. The store reads no more than that, however
// large the journal.
const (
	stepsShown      = store.MaxListLimit
	stepsShownBytes = 8 << 20
)

// history reads the runs and the first steps (stepsShown) of execution x,
// scoped to tenant like the read of the execution itself: the attempts
// table, and for a flow (an execution with steps) its timeline and the
// spawn steps among those steps. more says the journal holds steps after
// those shown.
func (c *Console) history(ctx context.Context, tenant string, x *store.Execution) (rr []runRow, tl []timelineRow, spawns []spawnTotal, more bool, err error) {
	runs, err := c.cfg.Store.Runs(ctx, &store.RunsParams{Tenant: tenant, ID: x.ID})
	if err != nil {
		return nil, nil, nil, false, err
	}
	page, err := c.cfg.Store.Steps(ctx, &store.StepsParams{Tenant: tenant, ID: x.ID, Limit: stepsShown,
		MaxBytes: stepsShownBytes})
	if err != nil {
		return nil, nil, nil, false, err
	}
	steps := page.Items
	rr = make([]runRow, 0, len(runs))
	for i, r := range runs {
		row := runRow{Run: i + 1, Attempt: r.Attempt, WorkerID: r.WorkerID, ClaimedAt: r.ClaimedAt, EndedAt: r.EndedAt,
			Outcome: string(r.Outcome), Error: shorten(r.Error, maxErrorShown)}
		if !r.Ended() {
			row.Outcome = "running"
		}
		if i > 0 {
			row.Note = runNote(runs[i-1], r)
		}
		rr = append(rr, row)
	}
	if len(steps) == 0 {
		return rr, nil, nil, false, nil
	}
	return rr, timeline(x, runs, steps), spawnTotals(steps), page.Next != 0, nil
}

// runNote says how run r follows run prev: "resumed" after a wait, "after
// a retry" when the attempts started afresh, "again" when it runs prev's
// attempt again otherwise (prev gave its start back); "" for the next
// attempt.
func runNote(prev, r *store.Run) string {
	switch {
	case r.Attempt < prev.Attempt || r.Attempt == prev.Attempt && prev.Outcome == store.RunFailed:
		return "after a retry"
	case r.Attempt == prev.Attempt && prev.Outcome == store.RunSuspended:
		return "resumed"
	case r.Attempt == prev.Attempt:
		return "again"
	}
	return ""
}

// timeline merges x's runs and steps in time order: each run's start, the
// steps recorded meanwhile, and its end unless it succeeded (a suspension,
// a failure): so a wait between two runs of one attempt shows, and a step
// recorded while suspended (a signal's data) sits between them.
func timeline(x *store.Execution, runs []*store.Run, steps []*store.Step) []timelineRow {
	type entry struct {
		at   time.Time
		rank int // at one instant: a start, then steps, then an end
		row  timelineRow
	}
	var es []entry
	for i, r := range runs {
		mark := "Run " + strconv.Itoa(i+1) + " · attempt " + strconv.Itoa(r.Attempt) + " · worker " + r.WorkerID
		if i > 0 && runNote(runs[i-1], r) == "resumed" && runs[i-1].EndedAt != nil {
			mark += " · resumed after " + span(r.ClaimedAt.Sub(*runs[i-1].EndedAt))
		} else if i > 0 && runNote(runs[i-1], r) != "" {
			mark += " · " + runNote(runs[i-1], r)
		}
		mark += " · claimed " + r.ClaimedAt.UTC().Format("15:04:05Z")
		es = append(es, entry{at: r.ClaimedAt, row: timelineRow{Mark: mark}})
		if r.EndedAt == nil || r.Outcome == store.RunSucceeded {
			continue
		}
		end := "Run " + strconv.Itoa(i+1) + " " + string(r.Outcome) + " at " + r.EndedAt.UTC().Format("15:04:05Z")
		if r.Outcome == store.RunSuspended {
			end = "Suspended at " + r.EndedAt.UTC().Format("15:04:05Z") + " (run " + strconv.Itoa(i+1) + " ended)"
			if i == len(runs)-1 && x.Status == store.StatusSuspended {
				end += waitingFor(x)
			}
		} else if r.Error != "" {
			end += ": " + shorten(r.Error, maxResultShown)
		}
		es = append(es, entry{at: *r.EndedAt, rank: 2, row: timelineRow{Mark: end, Ended: true}})
	}
	for _, st := range steps {
		row := &stepRow{Name: st.Name, Attempt: st.Attempt, RecordedAt: st.RecordedAt,
			Result: shorten(string(st.Result), maxResultShown)}
		if !st.StartedAt.IsZero() && st.RecordedAt.After(st.StartedAt) {
			row.Took = st.RecordedAt.Sub(st.StartedAt)
		}
		es = append(es, entry{at: st.RecordedAt, rank: 1, row: timelineRow{Step: row}})
	}
	sort.SliceStable(es, func(i, j int) bool {
		if !es[i].at.Equal(es[j].at) {
			return es[i].at.Before(es[j].at)
		}
		return es[i].rank < es[j].rank
	})
	out := make([]timelineRow, len(es))
	for i, e := range es {
		out[i] = e.row
		out[i].Offset = e.at.Sub(x.CreatedAt)
	}
	return out
}

// stepsIn counts the steps of a timeline: those the page read, at most
// stepsShown, fewer when their bytes reached stepsShownBytes first.
func stepsIn(tl []timelineRow) int {
	n := 0
	for _, row := range tl {
		if row.Step != nil {
			n++
		}
	}
	return n
}

// waitingFor is what a suspended execution waits for, as a timeline says
// it.
func waitingFor(x *store.Execution) string {
	s := ""
	if step, ok := store.ChildrenWaitStep(x.WaitingFor); ok {
		s = ", waiting for the children of step " + step
	} else if name, ok := store.EventWaitName(x.WaitingFor); ok {
		s = ", waiting for event " + name
	} else if x.WaitingFor != "" {
		s = ", waiting for signal " + x.WaitingFor
	}
	if x.WakeAt != nil {
		s += " until " + x.WakeAt.UTC().Format("15:04:05Z")
	}
	return s
}

// shorten cuts s to at most max runes, marking the cut with "...". It
// reads no further than the cut, whatever the size of s.
func shorten(s string, max int) string {
	n, cut := 0, 0
	for i := range s {
		if n == max-3 {
			cut = i
		}
		if n == max {
			return s[:cut] + "..."
		}
		n++
	}
	return s
}
