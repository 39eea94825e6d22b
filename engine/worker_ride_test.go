package engine

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// riderStore is a store.ClaimRider over a store without wake-ups (it hides
// the SQLite store's Notifier): an Admit through it runs the claim parked
// then, after the submission, as a backend's group commit would.
type riderStore struct {
	store.Store
	now func() time.Time

	mu     sync.Mutex
	parked *fakeRide
	parks  int
}

type fakeRide struct {
	s   *riderStore
	p   *store.ClaimParams
	ran chan struct{}
	res *store.ClaimResult
	err error
}

func (s *riderStore) RideClaim(p *store.ClaimParams, now func() time.Time) store.Ride {
	r := &fakeRide{s: s, p: p, ran: make(chan struct{})}
	s.mu.Lock()
	s.parked = r
	s.parks++
	s.mu.Unlock()
	return r
}

func (s *riderStore) Admit(ctx context.Context, p *store.AdmitParams) (*store.AdmitResult, error) {
	res, err := s.Store.Admit(ctx, p)
	s.mu.Lock()
	r := s.parked
	s.parked = nil
	s.mu.Unlock()
	if r != nil {
		q := *r.p
		q.Now = s.now()
		r.res, r.err = s.Claim(ctx, &q)
		close(r.ran)
	}
	return res, err
}

func (r *fakeRide) Ran() <-chan struct{} { return r.ran }

func (r *fakeRide) Stop(context.Context) (*store.ClaimResult, error) {
	r.s.mu.Lock()
	if r.s.parked == r {
		r.s.parked = nil
		r.s.mu.Unlock()
		return nil, nil
	}
	r.s.mu.Unlock()
	<-r.ran
	return r.res, r.err
}

// A worker waiting on a store.ClaimRider starts what its parked claim
// leased with a submission at once, without a wake-up or a poll.
func TestWorkerStartsWhatItsRideLeased(t *testing.T) {
	e := newEnv(t)
	rs := &riderStore{Store: e.st, now: e.clock.Now}
	cfg := e.config()
	cfg.Store = rs
	cfg.PollInterval = time.Hour // only the ride can bring the work
	w := NewWorker(cfg)
	started := make(chan string, 1)
	w.Handle("echo", func(_ context.Context, j *Job) (json.RawMessage, error) {
		started <- j.ID
		return nil, nil
	})
	e.start(w)
	// The first claim (at Start) finds nothing; the worker then parks.
	for deadline := time.Now().Add(waitLimit); ; time.Sleep(time.Millisecond) {
		rs.mu.Lock()
		parked := rs.parked != nil
		rs.mu.Unlock()
		if parked {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the worker parked no claim")
		}
	}
	res, err := rs.Admit(e.ctx, &store.AdmitParams{Tenant: e.tenant, Now: e.clock.Now(),
		Items: []store.Submission{{Kind: "echo", Payload: json.RawMessage(`{}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Items[0].Execution.ID
	select {
	case got := <-started:
		if got != id {
			t.Fatalf("started %s, want %s", got, id)
		}
	case <-time.After(waitLimit):
		t.Fatal("the execution the ride leased did not start")
	}
	e.waitStatus(id, store.StatusSucceeded)
}

// A claim parked when the worker stops is withdrawn: nothing is leased
// after Stop.
func TestWorkerWithdrawsItsRideOnStop(t *testing.T) {
	e := newEnv(t)
	rs := &riderStore{Store: e.st, now: e.clock.Now}
	cfg := e.config()
	cfg.Store = rs
	cfg.PollInterval = time.Hour
	w := NewWorker(cfg)
	w.Handle("echo", func(context.Context, *Job) (json.RawMessage, error) { return nil, nil })
	if err := w.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(waitLimit); ; time.Sleep(time.Millisecond) {
		rs.mu.Lock()
		parks := rs.parks
		rs.mu.Unlock()
		if parks > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the worker parked no claim")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := w.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	rs.mu.Lock()
	parked := rs.parked != nil
	rs.mu.Unlock()
	if parked {
		t.Fatal("a claim is still parked after Stop")
	}
	res, err := rs.Admit(e.ctx, &store.AdmitParams{Tenant: e.tenant, Now: e.clock.Now(),
		Items: []store.Submission{{Kind: "echo", Payload: json.RawMessage(`{}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.get(res.Items[0].Execution.ID).Status; got != store.StatusQueued {
		t.Fatalf("status %s after the worker stopped, want queued", got)
	}
}
