package redis

import (
	"context"
	"fmt"
	"strings"

	"github.com/latch-run/latch/store"
)

// Children (store/children.go) are kept beside their executions: a child's
// hash names its parent (parent, pstep, ponend, depth), a parent's list of
// children in spawn order is kids:<id>, and its per-spawn counters
// spawns:<id> (lib.lua's children section). Spawn is one script
// (spawn.lua); a child's end and a parent's end are part of every script
// that ends an execution (lib.lua's finish, drop, child_end, parent_end).

// Spawn implements store.Store with one script (spawn.lua): the fence, the
// replay of a recorded step, the bounds, the quota and storage checks and
// every child's admission are one step.
func (s *Store) Spawn(ctx context.Context, p *store.SpawnParams) (*store.SpawnResult, error) {
	if err := checkSpawn(p); err != nil {
		return nil, err
	}
	nowUS := us(now(p.Now))
	ids := make([]string, len(p.Items))
	seen := make(map[string]bool, len(p.Items))
	keys := []string{s.k.exec(p.ExecutionID), s.k.steps(p.ExecutionID), s.k.kids(p.ExecutionID), s.k.spawns(p.ExecutionID)}
	args := []any{s.k.ns, p.ExecutionID, p.Tenant, p.Token, itoa(nowUS), p.Step, string(p.Ends()), "",
		p.ItemBound(), p.ChildBound(), p.DepthBound(), p.StepBound(), p.ByteBound(), len(p.Items)}
	for i := range p.Items {
		sub := &p.Items[i]
		e := newExecution(p.Tenant, sub, nowUS)
		if seen[e.ID] {
			return nil, fmt.Errorf("%w: execution id %s given twice", store.ErrInvalid, e.ID)
		}
		seen[e.ID] = true
		ids[i] = e.ID
		keys = append(keys, s.k.exec(e.ID))
		limit := ""
		if e.ConcurrencyKey != "" {
			limit = itoa(int64(e.ConcurrencyLimit))
		}
		runAt := us(e.RunAt)
		args = append(args, e.ID, flag(sub.ID != ""), e.Kind, e.Queue, itoa(int64(e.Priority)),
			prioLex(e.Priority), string(e.Payload), "", e.ConcurrencyKey, limit, e.RateKey,
			itoa(int64(e.MaxAttempts)), itoa(int64(e.TimeoutSeconds)), "", itoa(runAt), timeLex(runAt),
			e.TraceParent)
	}
	args[7] = string(store.SpawnStep(ids))
	arr, err := s.run(ctx, "spawn", scriptSpawn, keys, args...)
	if err != nil {
		return nil, err
	}
	res := &store.SpawnResult{}
	var entry any
	var statuses []any
	switch asString(at(arr, 0)) {
	case "RECORDED":
		entry, statuses = at(arr, 1), arr[min(2, len(arr)):]
	case "OK":
		if len(arr) < 3 {
			return nil, fmt.Errorf("redis: spawn: unexpected reply %v", arr)
		}
		s.note.ack(asInt(arr[1]))
		res.Recorded = true
		entry, statuses = arr[2], arr[3:]
	default:
		return nil, status(arr, "execution "+p.ExecutionID)
	}
	st, err := parseStep(p.Step, asString(entry))
	if err != nil {
		return nil, err
	}
	res.Step = st.step
	got, ok := store.ParseSpawnStep(st.step.Result)
	if !ok || len(got) != len(statuses) {
		return nil, fmt.Errorf("redis: spawn: step %q does not match its children", p.Step)
	}
	res.Children = make([]store.ChildRef, len(got))
	for i, id := range got {
		res.Children[i] = store.ChildRef{ID: id, Status: store.Status(asString(statuses[i]))}
	}
	if res.Recorded {
		s.feed.Publish(append([]string{p.ExecutionID}, got...)...)
	}
	return res, nil
}

// publishFamily reports on the change feed the executions a script's
// family rules changed besides the one it was about (lib.lua's family): a
// parent a child's end resumed, the children a parent's end cancelled or
// deleted.
func (s *Store) publishFamily(v any) {
	arr, _ := v.([]any)
	if len(arr) == 0 {
		return
	}
	ids := make([]string, len(arr))
	for i, id := range arr {
		ids[i] = asString(id)
	}
	s.feed.Publish(ids...)
}

// checkSpawn refuses what no backend may admit whatever the caller checked
// (store.SpawnParams.Check is the callers' full check): a step name, one
// item or more, each admissible on its face (store.CheckItem) without a
// dedup key or a schedule, and a known OnParentEnd.
func checkSpawn(p *store.SpawnParams) error {
	if err := store.CheckStepName(p.Step); err != nil {
		return err
	}
	switch p.OnParentEnd {
	case "", store.ParentEndCancel, store.ParentEndAbandon:
	default:
		return fmt.Errorf("%w: on_parent_end %q", store.ErrInvalid, p.OnParentEnd)
	}
	if len(p.Items) == 0 {
		return fmt.Errorf("%w: a spawn needs at least one child", store.ErrInvalid)
	}
	for i := range p.Items {
		it := &p.Items[i]
		if err := store.CheckItem(it); err != nil {
			return fmt.Errorf("items[%d]: %w", i, err)
		}
		if it.DedupKey != "" || it.Schedule != "" {
			return fmt.Errorf("%w: items[%d]: a child has no dedup key and no schedule", store.ErrInvalid, i)
		}
	}
	return nil
}

// Spawn implements store.Store on the tenant's namespace its lease token
// names, then lowers the tenant's hints for the children it admitted.
func (r *Router) Spawn(ctx context.Context, p *store.SpawnParams) (*store.SpawnResult, error) {
	res, err := onLease(ctx, r, p, p.Tenant, p.Token, func(q *store.SpawnParams, t string) { q.Token = t }, (*Store).Spawn)
	r.unsure(err)
	if err != nil || !res.Recorded {
		return res, err
	}
	t, _, _ := strings.Cut(p.Token, ".") // onLease checked it
	promoteAt := int64(-1)
	for i, c := range res.Children {
		if c.Status == store.StatusScheduled && i < len(p.Items) {
			if at := us(p.Items[i].RunAt); promoteAt < 0 || at < promoteAt {
				promoteAt = at
			}
		}
	}
	r.lower(ctx, t, 0, hintClaim)
	if promoteAt >= 0 {
		r.lower(ctx, t, promoteAt, hintPromote)
	}
	return res, nil
}
