package storebench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/latch-run/latch/store"
)

// FlowSteps is the number of steps of the flow the Flow workload runs:
// four recorded steps and a sleep of zero between them.
const FlowSteps = 5

// Flow admits n executions (not timed) and runs each, with slots
// concurrent workers claiming up to batch at a time, as a flow of
// FlowSteps steps: it records "reserve" and "charge", sleeps for zero as
// "nap" (Suspend until now: the step is recorded and the execution queued
// again at once), and on its next lease, which carries those three,
// records "ship" and "notify" and completes. Ops counts flows, Steps the
// steps recorded, and Latencies holds every RecordStep's latency, to set
// beside Drain's Complete latencies: a step should cost no more than a
// complete.
func Flow(ctx context.Context, s store.Store, tenant string, n, slots, batch int) (*Result, error) {
	for done := 0; done < n; done += 500 {
		items := make([]store.Submission, min(500, n-done))
		for i := range items {
			items[i] = store.Submission{Kind: "flow", Payload: payload}
		}
		if _, err := s.Admit(ctx, &store.AdmitParams{Tenant: tenant, Items: items}); err != nil {
			return nil, err
		}
	}
	res := &Result{Name: fmt.Sprintf("flow-5-steps/slots=%d", slots)}
	lat := make([][]time.Duration, slots)
	var flows, steps atomic.Int64
	err := fanOutN(slots, func(w int) error {
		record := func(l store.Lease, name string) error {
			t0 := time.Now()
			_, err := s.RecordStep(ctx, &store.RecordStepParams{ExecutionID: l.ExecutionID, Token: l.Token,
				Name: name, Result: payload})
			lat[w] = append(lat[w], time.Since(t0))
			steps.Add(1)
			return err
		}
		for {
			c, err := s.Claim(ctx, &store.ClaimParams{WorkerID: "bench", Kinds: []string{"flow"}, Max: batch, LeaseDuration: time.Minute})
			if err != nil {
				return err
			}
			if len(c.Leases) == 0 {
				return nil
			}
			for _, l := range c.Leases {
				if _, resumed := l.Steps["nap"]; !resumed {
					for _, name := range []string{"reserve", "charge"} {
						if err := record(l, name); err != nil {
							return err
						}
					}
					x, err := s.Suspend(ctx, &store.SuspendParams{ExecutionID: l.ExecutionID, Token: l.Token,
						Step: "nap", Until: time.Now()})
					if err != nil {
						return err
					}
					if x.Status != store.StatusQueued {
						return fmt.Errorf("a sleep of zero left execution %s %s, want queued", l.ExecutionID, x.Status)
					}
					steps.Add(1)
					continue
				}
				if len(l.Steps) != 3 {
					return fmt.Errorf("resumed execution %s carries %d steps, want 3", l.ExecutionID, len(l.Steps))
				}
				for _, name := range []string{"ship", "notify"} {
					if err := record(l, name); err != nil {
						return err
					}
				}
				if _, err := s.Complete(ctx, &store.CompleteParams{ExecutionID: l.ExecutionID, Token: l.Token}); err != nil {
					return err
				}
				flows.Add(1)
			}
		}
	}, &res.Elapsed)
	res.Ops, res.Steps = int(flows.Load()), int(steps.Load())
	for _, l := range lat {
		res.Latencies = append(res.Latencies, l...)
	}
	return res, err
}
