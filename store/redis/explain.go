package redis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/store"
)

// explainFacts reads what this namespace holds of the facts of execution
// p.ID (explain.lua, one read script): the execution, its tenant's
// Disabled flag, its concurrency key's running executions (the counter and
// the ckrun set), its rate limit and the tenants ahead in this
// namespace's turns. Workers are read apart (presence). ErrNotFound for a
// missing execution or another tenant's.
func (s *Store) explainFacts(ctx context.Context, p *store.ExplainParams) (*store.ExplainFacts, error) {
	arr, err := s.run(ctx, "explain", scriptExplain, []string{s.k.exec(p.ID), s.k.turns()},
		s.k.ns, p.Tenant, store.MaxExplainHolders, store.MaxExplainTenants)
	if err != nil {
		return nil, err
	}
	if len(arr) < 6 {
		return nil, fmt.Errorf("execution %s: %w", p.ID, store.ErrNotFound)
	}
	f := &store.ExplainFacts{
		Execution:      parseExecution(flatMap(at(arr, 0))),
		TenantDisabled: asString(at(arr, 1)) == "1",
		Running:        int(asInt(at(arr, 2))),
		TenantsAhead:   int(asInt(at(arr, 5))),
	}
	holders, _ := at(arr, 3).([]any)
	for _, h := range holders {
		f.Holders = append(f.Holders, asString(h))
	}
	if rl := flatMap(at(arr, 4)); len(rl) > 0 {
		f.RateLimit = parseRateLimit(rl)
	}
	return f, nil
}

// flatMap reads a flat HGETALL reply.
func flatMap(v any) map[string]string {
	arr, _ := v.([]any)
	m := make(map[string]string, len(arr)/2)
	for i := 0; i+1 < len(arr); i += 2 {
		m[asString(arr[i])] = asString(arr[i+1])
	}
	return m
}

// Explain implements store.Store: the namespace's facts (explainFacts)
// and the live workers of the execution's tenant and of every tenant
// (presence.lua), two reads.
func (s *Store) Explain(ctx context.Context, p *store.ExplainParams) (*store.Explanation, error) {
	t := now(p.Now)
	f, err := s.explainFacts(ctx, p)
	if err != nil {
		return nil, err
	}
	if !f.Execution.Status.Waiting() {
		return f.Decide(t), nil
	}
	pres, err := s.presence(ctx, &store.PresenceParams{Tenant: f.Execution.Tenant, Since: t.Add(-store.WorkerAlive)}, true)
	if err != nil {
		return nil, err
	}
	f.Workers = pres.Workers
	return f.Decide(t), nil
}

// Explain implements store.Store on the cluster: the facts of the
// execution's tenant namespace (explainFacts), its tenants ahead from the
// home namespace's turns, and the live workers from the home namespace.
// The tenants ahead are those the claim hint names as possibly having
// work by Now with a turn before the execution's tenant's (shardTurns:
// smaller, or equal and a smaller name), that have ready work: their
// namespace's turns set holds them (it holds a tenant exactly while its
// ready index is not empty and it is enabled), one pipelined read.
func (r *Router) Explain(ctx context.Context, p *store.ExplainParams) (*store.Explanation, error) {
	t := now(p.Now)
	v, err := r.find(ctx, p.Tenant, p.ID)
	if err != nil {
		return nil, err
	}
	f, err := v.explainFacts(ctx, p)
	if err != nil {
		return nil, err
	}
	x := f.Execution
	if !x.Status.Waiting() {
		return f.Decide(t), nil
	}
	if f.TenantsAhead, err = r.tenantsAhead(ctx, x.Tenant, us(t)); err != nil {
		return nil, err
	}
	pres, err := r.home.presence(ctx, &store.PresenceParams{Tenant: x.Tenant, Since: t.Add(-store.WorkerAlive)}, true)
	if err != nil {
		return nil, err
	}
	f.Workers = pres.Workers
	return f.Decide(t), nil
}

// tenantsAhead counts, up to store.MaxExplainTenants, the tenants with
// ready work a claim at nowUS serves before tenant.
func (r *Router) tenantsAhead(ctx context.Context, tenant string, nowUS int64) (int, error) {
	names, err := r.hinted(ctx, hintClaim, nowUS, 0)
	if err != nil || len(names) == 0 {
		return 0, err
	}
	all := append([]string{tenant}, names...)
	turns, err := r.home.rdb.ZMScore(ctx, r.home.k.shardTurns(), all...).Result()
	if err != nil {
		return 0, fmt.Errorf("redis: explain: turns: %w", interpretError(err))
	}
	mine := turns[0]
	var before []string
	for i, n := range names {
		if n != tenant && (turns[i+1] < mine || turns[i+1] == mine && n < tenant) {
			before = append(before, n)
		}
		if len(before) == store.MaxExplainTenants {
			break
		}
	}
	if len(before) == 0 {
		return 0, nil
	}
	pipe := r.home.rdb.Pipeline()
	for _, n := range before {
		pipe.ZScore(ctx, r.view(n).k.turns(), n)
	}
	cmds, err := pipe.Exec(ctx)
	if err != nil && !errors.Is(err, goredis.Nil) {
		return 0, fmt.Errorf("redis: explain: turns: %w", interpretError(err))
	}
	ahead := 0
	for _, c := range cmds {
		if c.Err() == nil {
			ahead++
		}
	}
	return ahead, nil
}

// ReadyKinds implements store.Store with one read script
// (ready_kinds.lua).
func (s *Store) ReadyKinds(ctx context.Context, p *store.ReadyKindsParams) ([]*store.ReadyKind, error) {
	arr, err := s.run(ctx, "ready kinds", scriptReadyKinds, []string{s.k.turns(), s.k.readyKinds(), s.k.sched()},
		s.k.ns, p.Tenant, itoa(us(now(p.Now))), store.MaxReadyKinds)
	if err != nil {
		return nil, err
	}
	out := make([]*store.ReadyKind, 0, len(arr)/2)
	for i := 0; i+1 < len(arr); i += 2 {
		out = append(out, &store.ReadyKind{Tenant: asString(arr[i]), Kind: asString(arr[i+1])})
	}
	sortReadyKinds(out)
	return out, nil
}

// sortReadyKinds orders ks by tenant then kind.
func sortReadyKinds(ks []*store.ReadyKind) {
	slices.SortFunc(ks, func(a, b *store.ReadyKind) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Kind, b.Kind))
	})
}

// ReadyKinds implements store.Store on the cluster: the script of each
// tenant the claim hint names as possibly having work by Now (or of the
// one tenant asked), merged.
func (r *Router) ReadyKinds(ctx context.Context, p *store.ReadyKindsParams) ([]*store.ReadyKind, error) {
	names := []string{p.Tenant}
	if p.Tenant == "" {
		var err error
		if names, err = r.hinted(ctx, hintClaim, us(now(p.Now)), 0); err != nil {
			return nil, err
		}
	}
	got := make([][]*store.ReadyKind, len(names))
	err := r.each(ctx, names, func(ctx context.Context, i int, v *Store) error {
		tp := *p
		tp.Tenant = names[i]
		var err error
		got[i], err = v.ReadyKinds(ctx, &tp)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := slices.Concat(got...)
	sortReadyKinds(out)
	if len(out) > store.MaxReadyKinds {
		out = out[:store.MaxReadyKinds]
	}
	return out, nil
}
