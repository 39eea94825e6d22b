package lincheck

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/latch-run/latch/store"
)

// StepOut is one step of a journal as a store shows it. Result is
// canonical JSON ("null" for none); times are unix ns, 0 for none.
type StepOut struct {
	Name       string
	Result     string
	StartedAt  int64
	RecordedAt int64
	Attempt    int
}

// canonical rewrites JSON as encoding/json writes it (keys sorted, no
// spaces), so that a backend that stores JSON in another spelling
// (whitespace, key order) answers the same value the same way. "" and nil
// are null.
func canonical(raw []byte) string {
	if len(raw) == 0 {
		return "null"
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "invalid JSON: " + string(raw)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "invalid JSON: " + string(raw)
	}
	return string(b)
}

// journalString renders a lease's journal as one comparable string: its
// entries by name, each name=result on a line of its own.
func journalString(j store.Journal) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(j)) {
		b.WriteString(name)
		b.WriteByte('=')
		b.WriteString(stepResult(j[name]))
		b.WriteByte('\n')
	}
	return b.String()
}

func nsOf(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func stepOf(st *store.Step) StepOut {
	return StepOut{Name: st.Name, Result: stepResult(st.Result), StartedAt: nsOf(st.StartedAt),
		RecordedAt: nsOf(st.RecordedAt), Attempt: st.Attempt}
}

func rawOrNil(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

// doFlow runs one of the flow operations against s (Do's share).
func doFlow(ctx context.Context, s store.Store, in Input) Output {
	var out Output
	now := timeOf(in.Now)
	switch in.Op {
	case OpRecordStep:
		res, err := s.RecordStep(ctx, &store.RecordStepParams{ExecutionID: in.ID, Tenant: in.Tenant, Token: in.Token,
			Name: in.Name, Result: rawOrNil(in.Data), StartedAt: timeOf(in.StartedAt), Now: now})
		out.Err = codeOf(err)
		if err == nil && res != nil {
			out.Step, out.Recorded = stepOf(&res.Step), res.Recorded
		}
	case OpSuspend:
		x, err := s.Suspend(ctx, &store.SuspendParams{ExecutionID: in.ID, Tenant: in.Tenant, Token: in.Token,
			Step: in.Name, Until: timeOf(in.Until), Signal: in.Signal, Children: in.Children, Count: in.Count,
			Event: in.Event, EventKey: in.EvKey, Since: timeOf(in.Since), Timeout: time.Duration(in.Timeout), Now: now})
		out.Err, out.X = codeOf(err), viewOf(x)
	case OpSignal:
		res, err := s.Signal(ctx, &store.SignalParams{Tenant: in.Tenant, ExecutionID: in.ID, Name: in.Name,
			Data: rawOrNil(in.Data), IdempotencyKey: in.IdemKey, Now: now})
		out.Err = codeOf(err)
		if err == nil && res != nil {
			out.Delivered = res.Delivered
		}
	case OpWake:
		res, err := s.Wake(ctx, &store.WakeParams{Now: now})
		out.Err = codeOf(err)
		if err == nil && res != nil {
			out.Counts[0] = res.Woken
		}
	case OpRetry:
		x, err := s.Retry(ctx, &store.RetryParams{Tenant: in.Tenant, ID: in.ID, Now: now})
		out.Err, out.X = codeOf(err), viewOf(x)
	case OpSpawn:
		items := make([]store.Submission, len(in.Items))
		for i, it := range in.Items {
			items[i] = store.Submission{Kind: it.Kind, Priority: it.Priority, MaxAttempts: it.MaxAttempts, Payload: rawOrNil(it.Payload)}
		}
		ends := store.ParentEndCancel
		if in.Abandon {
			ends = store.ParentEndAbandon
		}
		res, err := s.Spawn(ctx, &store.SpawnParams{ExecutionID: in.ID, Tenant: in.Tenant, Token: in.Token, Step: in.Name,
			Items: items, OnParentEnd: ends, Now: now})
		out.Err = codeOf(err)
		if err == nil && res != nil {
			out.Step, out.Recorded = stepOf(&res.Step), res.Recorded
			for _, c := range res.Children {
				out.Spawned = append(out.Spawned, ChildOut{ID: c.ID, Status: c.Status})
			}
		}
	case OpSteps:
		steps, err := s.Steps(ctx, &store.StepsParams{Tenant: in.Tenant, ID: in.ID})
		out.Err = codeOf(err)
		if steps == nil {
			steps = &store.StepsPage{}
		}
		for _, st := range steps.Items {
			out.Steps = append(out.Steps, stepOf(st))
		}
	}
	return out
}
