package soak

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/latch-run/latch/store"
)

// load submits at Config.Rate per second until Config.Duration has passed
// or ctx is done, and returns once every submit and every cancel it
// started has been answered, with how long the submits were paced. Pacing
// is by the clock: the i-th submit is due at i/Rate seconds, handed to the
// first free submitter; if the submitters fall behind, the due ones go as
// soon as one is free.
func (r *runner) load(ctx context.Context) time.Duration {
	orders := make(chan int, r.cfg.Clients)
	cancels := make(chan cancelOrder, 4096)
	var subs, canc sync.WaitGroup
	for c := range r.cfg.Clients {
		rnd := rand.New(rand.NewPCG(rand.Uint64(), uint64(c)))
		subs.Go(func() {
			for i := range orders {
				r.submit(i, rnd, cancels)
			}
		})
	}
	canc.Go(func() { r.cancelLoop(cancels) })

	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	end := time.NewTimer(time.Until(r.loadStart.Add(r.cfg.Duration)))
	defer end.Stop()
	next := 0
pace:
	for {
		due := int(time.Since(r.loadStart).Seconds() * float64(r.cfg.Rate))
		for ; next < due; next++ {
			select {
			case orders <- next:
			case <-end.C:
				break pace
			case <-ctx.Done():
				break pace
			}
		}
		select {
		case <-tick.C:
		case <-end.C:
			break pace
		case <-ctx.Done():
			break pace
		}
	}
	paced := time.Since(r.loadStart)
	close(orders)
	subs.Wait()
	close(cancels)
	canc.Wait()
	return paced
}

type cancelOrder struct {
	id string
	at time.Time
}

// submit makes the i-th submit of the plan. Store calls run to their end
// even if Run's context is cancelled: an interrupted soak still checks.
func (r *runner) submit(i int, rnd *rand.Rand, cancels chan<- cancelOrder) {
	ctx := context.Background()
	c := plan[i%len(plan)]
	var sub store.Submission
	var orig recentSub
	if c == classDup {
		var ok bool
		if orig, ok = r.recent.pick(rnd); ok {
			sub = orig.sub
		} else {
			c = classPlain // nothing to resubmit yet
		}
	}
	if c != classDup {
		sub = r.submission(i, c, time.Now(), rnd)
	}
	t0 := time.Now()
	res, err := r.st.Admit(ctx, &store.AdmitParams{Tenant: r.tenant, Items: []store.Submission{sub}, Now: t0})
	r.submitLat.add(time.Since(t0))
	r.submits.Add(1)
	if err == nil && len(res.Items) != 1 {
		err = errors.New("Admit answered with the wrong number of items")
	}
	if err != nil {
		r.found.add("errors", "submit %d: %v", i, err)
		return
	}
	it := res.Items[0]
	switch {
	case errors.Is(it.Err, store.ErrQuotaExceeded):
		r.refused.Add(1)
	case it.Err != nil:
		r.found.add("errors", "submit %d (%s): %v", i, c, it.Err)
	case it.Execution == nil:
		r.found.add("errors", "submit %d: Admit answered with neither an execution nor an error", i)
	case c == classDup:
		r.deduplicated.Add(1)
		if !it.Deduplicated || it.Execution.ID != orig.id {
			r.found.add("I1", "resubmit of key %s answered with %s (deduplicated %v), want its execution %s",
				sub.DedupKey, it.Execution.ID, it.Deduplicated, orig.id)
		}
	case it.Deduplicated:
		r.found.add("I1", "the first submit of key %s came back deduplicated onto %s", sub.DedupKey, it.Execution.ID)
	default:
		r.acknowledged.Add(1)
		r.jn.ack(it.Execution.ID, c, sub.DedupKey)
		if sub.DedupKey != "" {
			r.recent.put(recentSub{sub: sub, id: it.Execution.ID})
		}
		if c == classCancel {
			select {
			case cancels <- cancelOrder{id: it.Execution.ID, at: time.Now().Add(rand.N(300 * time.Millisecond))}:
			default: // the canceller is far behind: let this one run
			}
		}
	}
}

// cancelLoop cancels each ordered execution at its time.
func (r *runner) cancelLoop(orders <-chan cancelOrder) {
	for o := range orders {
		time.Sleep(time.Until(o.at))
		e, err := r.st.Cancel(context.Background(), &store.CancelParams{Tenant: r.tenant, ID: o.id, Now: time.Now()})
		switch {
		case err != nil:
			r.found.add("errors", "cancel %s: %v", o.id, err)
		case e.Status == store.StatusCancelled:
			r.cancels.Add(1)
			r.cancelledAtOnce.Add(1)
		case e.CancelRequested:
			r.cancels.Add(1)
			r.cancelRequested.Add(1)
		default:
			r.cancels.Add(1) // already finished: left as it was
		}
	}
}

// recent keeps the last submissions with a dedup key, for resubmits.
type recent struct {
	mu   sync.Mutex
	subs []recentSub
	next int
}

type recentSub struct {
	sub store.Submission
	id  string
}

const recentSize = 256

func (rc *recent) put(s recentSub) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.subs) < recentSize {
		rc.subs = append(rc.subs, s)
		return
	}
	rc.subs[rc.next] = s
	rc.next = (rc.next + 1) % recentSize
}

func (rc *recent) pick(rnd *rand.Rand) (recentSub, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.subs) == 0 {
		return recentSub{}, false
	}
	return rc.subs[rnd.IntN(len(rc.subs))], true
}
