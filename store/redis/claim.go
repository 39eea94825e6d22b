package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/latch-run/latch/store"
)

// claimDueLimit bounds how many scheduled executions whose run_at has come
// one claim makes claimable (claim.lua) before it picks candidates. With a
// larger backlog of newly due work the rest waits for the next claim or for
// Promote, so priority order among newly due executions is approximate
// until it has caught up.
const claimDueLimit = 1000

// Claim implements store.Store with one script (claim.lua): tenants take
// turns (I12; the turns sorted set, lib.lua), candidates are read and leased
// in one step, so two claimers never lease one attempt, and
// a concurrency key's running count and a rate key's bucket are checked and
// moved in the same step; a candidate its bucket refuses is deferred there
// too (scheduled at the bucket's next free start), and RetryAt is the
// earliest such start. Each lease carries its journal, read in the same
// script; a resume's claim keeps the attempt. Each lease is recorded as a
// run of its execution's attempt history in the same script. Lease tokens are a random
// 128-bit value per call, suffixed per lease. Each lease carries the
// execution's traceparent; Deferred counts the candidates deferred. The
// excluded tenants (ExcludeTenants) follow the kinds, after their count,
// only when there are any: a claim without them sends what it always did.
func (s *Store) Claim(ctx context.Context, p *store.ClaimParams) (*store.ClaimResult, error) {
	res, _, err := s.claim(ctx, p, store.ClaimJournalBytes)
	return res, err
}

// claim is Claim, its leases carrying journalBytes of journal together;
// for a claim for one tenant, readyLeft also says whether the tenant
// still has ready executions after it (of any kind or queue): the tenant
// router then keeps the tenant's claim hint as it is.
func (s *Store) claim(ctx context.Context, p *store.ClaimParams, journalBytes int) (res *store.ClaimResult, readyLeft bool, err error) {
	if err := p.ValidateExclude(); err != nil {
		return nil, false, err
	}
	t := now(p.Now)
	maxN, lease := p.Bounds()
	nowUS := us(t)
	expires := us(t.Add(lease))
	queues, kinds := distinct(p.Queues), distinct(p.Kinds)

	keys := []string{s.k.sched(), s.k.running(), s.k.readyKinds(), s.k.readyTenant(p.Tenant), s.k.due(),
		s.k.turns(), s.k.turnSeq()}
	for _, q := range queues {
		keys = append(keys, s.k.readyQueue(q))
	}
	for _, k := range kinds {
		keys = append(keys, s.k.readyKind(k))
	}
	args := []any{s.k.ns, itoa(nowUS), maxN, itoa(expires), p.WorkerID, p.Tenant, newToken(),
		claimDueLimit, len(queues), len(kinds), store.MaxRunsKept, journalBytes}
	for _, q := range queues {
		args = append(args, q)
	}
	for _, k := range kinds {
		args = append(args, k)
	}
	if len(p.ExcludeTenants) > 0 {
		args = append(args, len(p.ExcludeTenants))
		for _, t := range p.ExcludeTenants {
			args = append(args, t)
		}
	}
	arr, err := s.run(ctx, "claim", scriptClaim, keys, args...)
	if err != nil {
		return nil, false, err
	}
	s.note.ack(asInt(at(arr, 0)))
	if len(arr) < 5 {
		return nil, false, fmt.Errorf("redis: claim: unexpected reply %v", arr)
	}
	res = &store.ClaimResult{Leases: make([]store.Lease, 0, len(arr)-5), Deferred: int(asInt(arr[2]))}
	if retry := asString(arr[1]); retry != "" {
		res.RetryAt = fromUS(asInt(retry))
	}
	s.claimExamined.Add(asInt(arr[3]))
	readyLeft = asInt(arr[4]) > 0
	for _, v := range arr[5:] {
		f, _ := v.([]any)
		if len(f) != 13 {
			return nil, false, fmt.Errorf("redis: claim: unexpected lease %v", v)
		}
		steps, err := journal(f[9])
		if err != nil {
			return nil, false, err
		}
		res.Leases = append(res.Leases, store.Lease{
			ExecutionID:    asString(f[0]),
			Tenant:         asString(f[1]),
			Kind:           asString(f[2]),
			Queue:          asString(f[3]),
			Payload:        json.RawMessage(asString(f[4])),
			Attempt:        int(asInt(f[5])),
			MaxAttempts:    int(asInt(f[6])),
			TimeoutSeconds: int(asInt(f[7])),
			Token:          asString(f[8]),
			ExpiresAt:      fromUS(expires),
			TraceParent:    asString(f[10]),
			Steps:          steps,
			StepsPartial:   asInt(f[11]) == 1,
		})
		if ra := asString(f[12]); ra != "" {
			res.Leases[len(res.Leases)-1].ReadyAt = fromUS(asInt(ra))
		}
	}
	res, err = s.feed.Claimed(res, nil)
	return res, readyLeft, err
}

// newToken returns 128 random bits in hex: the base of one claim's lease
// tokens.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

func distinct(in []string) []string {
	out := slices.Clone(in)
	slices.Sort(out)
	return slices.Compact(out)
}
