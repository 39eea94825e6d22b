package redis

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	goredis "github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/latch-run/latch/store"
)

// Claim across tenants (I12), as store.Store.Claim defines it, with the
// turns kept in the home namespace (shardTurns, scored by turn; a tenant
// never served has turn 0) instead of in one namespace's turns set. The
// order is claim.lua's for one namespace, written here in Go over the
// tenants' namespaces; TestRouterFairOrderMatchesClaimLua checks over
// random histories that the two lease alike.
//
// A claim for one tenant is that tenant namespace's claim, which also
// moves the tenant's turn here when it leased. An excluded tenant
// (ExcludeTenants) is dropped from the hinted names before anything else:
// its namespace is never asked, its turn never moved. A claim for every tenant
// takes the tenants the claim hint names as possibly having work by Now,
// orders them by turn (equal turns in name order) and serves them in
// rounds, each tenant's own claim (its filters, limits and order are its
// namespace's script's) giving its executions in its own order. Rounds
// are batched: with k tenants in play and n leases still wanted, each of
// the k is asked for n/k at once (concurrently, one script each on its own
// node) and the answers are interleaved round by round, a tenant that
// answered fewer than asked being out of the claim from that round on;
// when n < k, the first n tenants are asked for one each. The leases so
// come out exactly in the order of rounds of one execution each. Then
// every tenant leased to gets a turn after every other's, in the order
// the claim last served them. A tenant that answered short has its claim
// hint re-derived only when its script found its ready index empty: one
// whose ready work is all of kinds or queues the claim's filters leave
// (a backlog no worker runs) costs the claim its one script call, a walk
// of empty lanes, and nothing more.
func (r *Router) Claim(ctx context.Context, p *store.ClaimParams) (*store.ClaimResult, error) {
	if err := p.ValidateExclude(); err != nil {
		return nil, err
	}
	if p.Tenant != "" && slices.Contains(p.ExcludeTenants, p.Tenant) {
		return &store.ClaimResult{}, nil
	}
	if p.Tenant != "" {
		res, left, err := r.view(p.Tenant).claim(ctx, p, store.ClaimJournalBytes)
		if err != nil {
			r.unsure(err)
			return nil, err
		}
		maxN, _ := p.Bounds()
		r.claimed(ctx, []string{p.Tenant}, [][]store.Lease{res.Leases}, []bool{len(res.Leases) < maxN && !left}, res)
		wrapLeases(res.Leases)
		return res, nil
	}
	t := now(p.Now)
	maxN, _ := p.Bounds()
	names, err := r.hinted(ctx, hintClaim, us(t), 0)
	if len(p.ExcludeTenants) > 0 {
		// An excluded tenant's namespace is never asked.
		names = slices.DeleteFunc(names, func(n string) bool { return slices.Contains(p.ExcludeTenants, n) })
	}
	if err != nil || len(names) == 0 {
		return &store.ClaimResult{}, err
	}
	turns, err := r.home.rdb.ZMScore(ctx, r.home.k.shardTurns(), names...).Result()
	if err != nil {
		return nil, fmt.Errorf("redis: claim: %w", interpretError(err))
	}
	order := make([]int, len(names))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(turns[a], turns[b]); c != 0 {
			return c
		}
		return cmp.Compare(names[a], names[b])
	})
	ordered := make([]string, len(order))
	for i, j := range order {
		ordered[i] = names[j]
	}
	names = ordered

	got := make([][]store.Lease, len(names)) // per tenant, in its order
	short := make([]bool, len(names))        // answered fewer than asked: out of the claim
	stale := make([]bool, len(names))        // short, and no ready work left: its hint is re-derived
	res := &store.ClaimResult{}
	var out []store.Lease
	var errFirst error
	active := make([]int, len(names))
	for i := range active {
		active[i] = i
	}
	// The leases of the claim carry store.ClaimJournalBytes of journal
	// together, as on one node: each round shares what is left among the
	// tenants it asks.
	journalLeft := store.ClaimJournalBytes
	for n := maxN; n > 0 && len(active) > 0; {
		ask, q := active, n/len(active)
		if q == 0 {
			ask, q = active[:n], 1
		}
		share := max(journalLeft, 0) / len(ask)
		answers := make([]*store.ClaimResult, len(ask))
		left := make([]bool, len(ask))
		errs := make([]error, len(ask))
		var g errgroup.Group
		g.SetLimit(16) // within the client's pool
		for j, i := range ask {
			g.Go(func() error {
				tp := *p
				tp.Tenant, tp.Max, tp.ExcludeTenants = names[i], q, nil
				answers[j], left[j], errs[j] = r.view(names[i]).claim(ctx, &tp, share)
				return nil
			})
		}
		_ = g.Wait()
		for round := range q {
			for j := range ask {
				if errs[j] == nil && round < len(answers[j].Leases) {
					out = append(out, answers[j].Leases[round])
				}
			}
		}
		for j, i := range ask {
			if errs[j] != nil {
				r.unsure(errs[j])
				errFirst = cmp.Or(errFirst, errs[j])
				short[i], stale[i] = true, true
				continue
			}
			a := answers[j]
			for _, l := range a.Leases {
				for name, result := range l.Steps {
					journalLeft -= store.StepSize(name, result)
				}
			}
			got[i] = append(got[i], a.Leases...)
			n -= len(a.Leases)
			res.Deferred += a.Deferred
			if !a.RetryAt.IsZero() && (res.RetryAt.IsZero() || a.RetryAt.Before(res.RetryAt)) {
				res.RetryAt = a.RetryAt
			}
			if len(a.Leases) < q {
				short[i], stale[i] = true, !left[j]
			}
		}
		// The round goes on with the tenants not asked yet, then the
		// asked ones that are still in.
		still := slices.Clone(active[len(ask):])
		for _, i := range ask {
			if !short[i] {
				still = append(still, i)
			}
		}
		active = still
	}
	res.Leases = out
	if len(out) == 0 && errFirst != nil {
		return nil, errFirst
	}
	r.claimed(ctx, names, got, stale, res)
	wrapLeases(res.Leases)
	return res, nil
}

// claimed does what follows a claim: new turns for the tenants leased to
// (in the order the leases, out, last served them), their rescue hints at
// the leases' expiry, the deferred work's promote hint, and a refresh of
// the claim hint of each tenant that ran short with no ready work left
// (stale): one whose ready work the claim's filters left keeps its hint.
func (r *Router) claimed(ctx context.Context, names []string, got [][]store.Lease, stale []bool, res *store.ClaimResult) {
	ctx = context.WithoutCancel(ctx)
	last := map[string]int{}
	for i, l := range res.Leases {
		last[l.Tenant] = i
	}
	served := make([]string, 0, len(last))
	for t := range last {
		served = append(served, t)
	}
	slices.SortFunc(served, func(a, b string) int { return cmp.Compare(last[a], last[b]) })
	var turns []goredis.Z
	if len(served) > 0 {
		seq, err := r.home.rdb.IncrBy(ctx, r.home.k.shardTurnSeq(), int64(len(served))).Result()
		if err != nil {
			r.wantRepair() // the rescue hints below still go in; turns stay as they were
		} else {
			for i, t := range served {
				turns = append(turns, goredis.Z{Score: float64(seq - int64(len(served)) + 1 + int64(i)), Member: t})
			}
		}
	}
	// The turns and the rescue hints in one MULTI (all home keys).
	if len(turns) > 0 || len(last) > 0 {
		if _, err := r.home.rdb.TxPipelined(ctx, func(pipe goredis.Pipeliner) error {
			if len(turns) > 0 {
				pipe.ZAdd(ctx, r.home.k.shardTurns(), turns...)
			}
			for i, t := range names {
				if len(got[i]) == 0 {
					continue
				}
				exp := int64(math.MaxInt64)
				for _, l := range got[i] {
					exp = min(exp, us(l.ExpiresAt))
				}
				pipe.ZAddLT(ctx, r.home.k.hint(hintRescue), goredis.Z{Score: float64(exp), Member: t})
				pipe.Incr(ctx, r.home.k.hintGen(hintRescue, t))
			}
			return nil
		}); err != nil {
			r.wantRepair() // as lower: the leases are committed, their rescue hints may not be
		}
	}
	if !res.RetryAt.IsZero() {
		for _, t := range names {
			r.lower(ctx, t, us(res.RetryAt), hintPromote)
		}
	}
	for i, t := range names {
		if stale[i] {
			_ = r.refresh(ctx, t, hintClaim)
		}
	}
}
