package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/latch-run/latch/store"
)

// Claims that ride with submissions (store.ClaimRider).
//
// A worker with nothing to claim parks a claim (RideClaim) while it waits
// for a wake-up. The next group of the store's grouper (group.go) that
// holds an admission takes every parked claim and sends them after its
// other statements, in its transaction: statements go in kind order, so a
// claim's statement sees the executions the group's admissions just
// inserted, and leases them in the same commit, which costs the job no
// commit — and no WAL flush — of its own for its claim. A claim so taken is
// the same set-based statement as a Claim's (sqlClaimMany, its time taken
// when the group is built); its leases reach the worker through Stop, which
// finishes them as Claim does (the wake-up, the journals).
//
// A group that fails is rolled back with its claims, and each parked claim
// is answered nothing: its worker claims as usual. So is a claim whose
// candidates carry a limit (it leased nothing and leaves them to claimTx).
// Only groups take claims, never an operation that runs alone: a claim
// never lengthens a submission that has no commit to share.
type rides struct {
	mu     sync.Mutex
	parked []*ride
}

// ride is one parked claim.
type ride struct {
	s   *Store
	p   *store.ClaimParams
	now func() time.Time
	ran chan struct{} // closed once the group that took it is done

	// Set when a group takes it (under rides.mu), then by the group.
	taken   bool
	op      *claimOp
	expires time.Time
	err     error // the group's outcome
}

var _ store.ClaimRider = (*Store)(nil)

// RideClaim implements store.ClaimRider. A claim Claim would refuse
// (ExcludeTenants out of bounds) is not parked: nil, the caller claims.
func (s *Store) RideClaim(p *store.ClaimParams, now func() time.Time) store.Ride {
	if p.ValidateExclude() != nil {
		return nil
	}
	r := &ride{s: s, p: p, now: now, ran: make(chan struct{})}
	s.rides.mu.Lock()
	s.rides.parked = append(s.rides.parked, r)
	s.rides.mu.Unlock()
	return r
}

// Ran implements store.Ride.
func (r *ride) Ran() <-chan struct{} { return r.ran }

// Stop implements store.Ride.
func (r *ride) Stop(ctx context.Context) (*store.ClaimResult, error) {
	rs := &r.s.rides
	rs.mu.Lock()
	if !r.taken {
		rs.parked = slices.DeleteFunc(rs.parked, func(x *ride) bool { return x == r })
		rs.mu.Unlock()
		return nil, nil
	}
	rs.mu.Unlock()
	<-r.ran
	switch {
	case errors.Is(r.err, errRegroup):
		return nil, nil // rolled back, or never sent: nothing happened
	case r.err != nil:
		// Ambiguous (the connection failed): the claim may have
		// committed, as a Claim's may; its leases are rescued.
		return nil, fmt.Errorf("postgres: claim: %w", interpretError(r.err))
	case r.op.limited || len(r.op.leases) == 0:
		return nil, nil
	}
	return r.s.claimed(ctx, r.op.leases, r.expires, time.Time{}, 0)
}

// takeRides gives a group the claims parked now that one of its
// admissions can serve (wants), as operations to send after its own, and
// the function that answers them with the group's outcome. A claim that
// none of them can serve stays parked: it would only lengthen the group.
func (s *Store) takeRides(ops []groupOp) ([]groupOp, func(error)) {
	var admits []*admitOp
	for _, op := range ops {
		if a, ok := op.(*admitOp); ok && a.e.Status == store.StatusQueued {
			admits = append(admits, a)
		}
	}
	if len(admits) == 0 {
		return nil, nil
	}
	s.rides.mu.Lock()
	var taken []*ride
	s.rides.parked = slices.DeleteFunc(s.rides.parked, func(r *ride) bool {
		if !slices.ContainsFunc(admits, r.wants) {
			return false
		}
		r.taken = true
		taken = append(taken, r)
		return true
	})
	s.rides.mu.Unlock()
	if len(taken) == 0 {
		return nil, nil
	}
	extra := make([]groupOp, len(taken))
	for i, r := range taken {
		t := now(r.now())
		maxN, lease := r.p.Bounds()
		r.expires = micro(t.Add(lease))
		r.op = &claimOp{p: r.p, max: maxN, now: t, expires: r.expires}
		extra[i] = r.op
	}
	return extra, func(err error) {
		for _, r := range taken {
			r.err = err
			close(r.ran)
		}
	}
}

// wants says whether the claim can lease a's execution (ready at once, of
// a tenant, queue and kind its filters take).
func (r *ride) wants(a *admitOp) bool {
	p := r.p
	return (p.Tenant == "" || p.Tenant == a.tenant) && !slices.Contains(p.ExcludeTenants, a.tenant) &&
		(len(p.Queues) == 0 || slices.Contains(p.Queues, a.e.Queue)) &&
		(len(p.Kinds) == 0 || slices.Contains(p.Kinds, a.e.Kind))
}
