package storebench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/latch-run/latch/store"
)

// FanOutTimes are the timings of one fan-out (FanOut).
type FanOutTimes struct {
	Spawn time.Duration // the Spawn call that admits every child
	Drain time.Duration // from the fan-in Suspend's answer to the last child's Complete
	Total time.Duration // from the Spawn call to the parent's resumed lease in hand
}

// FanOut runs one fan-out of n children: a parent (admitted and claimed,
// not timed) spawns n children under step "spawn" in one Spawn call and
// waits for all of them (Suspend with Children "spawn", step "join");
// slots concurrent workers claim the children up to batch at a time and
// complete each; the last child's end resumes the parent, which is
// claimed again — its lease must carry the "join" step — and completed.
// Each child must be admitted once and the parent resumed once: a count
// that differs is an error, not a figure.
func FanOut(ctx context.Context, s store.Store, tenant string, n, slots, batch int) (FanOutTimes, error) {
	var ft FanOutTimes
	const parentKind, childKind = "fanout-parent", "fanout-child"
	a, err := s.Admit(ctx, &store.AdmitParams{Tenant: tenant, Items: []store.Submission{{Kind: parentKind, Payload: payload}}})
	if err != nil {
		return ft, err
	}
	if a.Items[0].Err != nil {
		return ft, a.Items[0].Err
	}
	claimParent := func() (store.Lease, error) {
		c, err := s.Claim(ctx, &store.ClaimParams{WorkerID: "bench", Kinds: []string{parentKind}, Max: 1, LeaseDuration: time.Minute})
		if err != nil {
			return store.Lease{}, err
		}
		if len(c.Leases) != 1 {
			return store.Lease{}, fmt.Errorf("claimed %d parents, want 1", len(c.Leases))
		}
		return c.Leases[0], nil
	}
	p, err := claimParent()
	if err != nil {
		return ft, err
	}
	items := make([]store.Submission, n)
	for i := range items {
		items[i] = store.Submission{Kind: childKind, Payload: payload}
	}
	t0 := time.Now()
	sp, err := s.Spawn(ctx, &store.SpawnParams{ExecutionID: p.ExecutionID, Token: p.Token, Step: "spawn", Items: items})
	if err != nil {
		return ft, err
	}
	ft.Spawn = time.Since(t0)
	if !sp.Recorded || len(sp.Children) != n {
		return ft, fmt.Errorf("spawn recorded=%t with %d children, want a new spawn of %d", sp.Recorded, len(sp.Children), n)
	}
	x, err := s.Suspend(ctx, &store.SuspendParams{ExecutionID: p.ExecutionID, Token: p.Token, Step: "join", Children: "spawn"})
	if err != nil {
		return ft, err
	}
	if x.Status != store.StatusSuspended {
		return ft, fmt.Errorf("the fan-in wait left the parent %s, want suspended", x.Status)
	}
	t1 := time.Now()
	var done atomic.Int64
	var el time.Duration
	err = fanOutN(slots, func(int) error {
		for {
			c, err := s.Claim(ctx, &store.ClaimParams{WorkerID: "bench", Kinds: []string{childKind}, Max: batch, LeaseDuration: time.Minute})
			if err != nil {
				return err
			}
			if len(c.Leases) == 0 {
				return nil
			}
			for _, l := range c.Leases {
				if _, err := s.Complete(ctx, &store.CompleteParams{ExecutionID: l.ExecutionID, Token: l.Token}); err != nil {
					return err
				}
				done.Add(1)
			}
		}
	}, &el)
	ft.Drain = time.Since(t1)
	if err != nil {
		return ft, err
	}
	if got := done.Load(); got != int64(n) {
		return ft, fmt.Errorf("completed %d children, want %d", got, n)
	}
	r, err := claimParent()
	if err != nil {
		return ft, fmt.Errorf("the parent's resume: %w", err)
	}
	ft.Total = time.Since(t0)
	if r.ExecutionID != p.ExecutionID || r.Attempt != p.Attempt {
		return ft, fmt.Errorf("resumed lease %s attempt %d, want the parent %s attempt %d", r.ExecutionID, r.Attempt, p.ExecutionID, p.Attempt)
	}
	if _, ok := r.Steps["join"]; !ok {
		return ft, fmt.Errorf("the resumed parent's lease carries no fan-in step")
	}
	if _, err := s.Complete(ctx, &store.CompleteParams{ExecutionID: r.ExecutionID, Token: r.Token}); err != nil {
		return ft, err
	}
	return ft, nil
}
